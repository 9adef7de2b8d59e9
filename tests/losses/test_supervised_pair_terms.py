"""The fused path of SupCon and LASCon-out from the views
(:func:`~contrastkit.losses.functional._pair_terms.supervised_pair_terms`, taken through
:func:`~contrastkit.losses.supervised_views.fused_supervised_terms`): the general path's
values and gradients (the functional LASCon-out terms on
:func:`~contrastkit.losses.supervised_views.supervised_terms`) to rounding, exact first and
second derivatives of its own, and the calls it cannot take going the general way.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
from pair_views import random_views, value_and_grads
from torch import Tensor

from contrastkit import losses
from contrastkit.losses import functional as F
from contrastkit.losses import supervised as supervised_module
from contrastkit.losses._indices import self_exclude
from contrastkit.losses.functional._pair_terms import supervised_pair_terms
from contrastkit.losses.supervised_views import supervised_terms


def _zero_for_label_zero(a: Tensor, b: Tensor) -> Tensor:
    """A label similarity with no target mass for the samples labelled 0."""
    return ((a == b) & (a != 0)).to(torch.float32)


SUPERVISED = [
    ("supcon", {}, "classes"),
    ("lascon", {}, "values"),
    ("lascon", {"similarity": "tanh", "c": 2.0}, "values"),
    ("lascon", {"similarity": "linear"}, "rows"),
    ("lascon", {"similarity": "indicator"}, "classes"),
    ("lascon", {"similarity": _zero_for_label_zero}, "classes"),
]


@pytest.fixture
def supervised_taken(count_calls: Callable[[object, str], list[int]]) -> list[int]:
    return count_calls(supervised_module, "fused_supervised_terms")


@pytest.mark.parametrize(("name", "setting", "kind"), SUPERVISED)
@pytest.mark.parametrize(
    ("dtype", "tol"), [(torch.float64, 1e-12), (torch.float32, 2e-6), (torch.bfloat16, 2e-6)]
)
def test_supcon_and_lascon_out_take_the_fused_path(
    name: str, setting: dict, kind: str, dtype: torch.dtype, tol: float, supervised_taken: list[int]
) -> None:
    g = torch.Generator().manual_seed(11)
    z1, z2 = random_views(9, 5, dtype, seed=11)
    with torch.no_grad():
        z2[4] = 0.0  # a zero row: its similarities are 0, its own one too
    labels = {
        "classes": torch.tensor([0, 1, 0, 2, 1, 0, 3, 1, 2]),
        "values": torch.rand(9, generator=g),
        "rows": torch.rand(9, 3, generator=g),
    }[kind]
    module = losses.get(name, temperature=0.2, **setting)
    fused, fused_grads = value_and_grads(lambda a, b: module(a, b, labels), z1, z2)
    assert supervised_taken == [1]
    similarity = setting.get("similarity", "indicator" if name == "supcon" else "linear")

    def general(a: Tensor, b: Tensor) -> Tensor:
        terms = supervised_terms(a, b, labels, 0.2, similarity, setting.get("c", 1.0))
        return F.lascon_out_terms(*terms, 0.2).mean()

    want, want_grads = value_and_grads(general, z1, z2)
    assert abs((fused - want).item()) <= tol * max(1.0, abs(want.item()))
    for got, ref in zip(fused_grads, want_grads, strict=True):
        assert got.dtype == dtype
        assert float((got.double() - ref.double()).abs().max()) <= tol * float(ref.abs().max())


@pytest.mark.parametrize("similarity", ["indicator", "linear", _zero_for_label_zero])
def test_the_supervised_terms_have_exact_first_and_second_derivatives(similarity) -> None:
    z1, z2 = random_views(5, 4, torch.float64, seed=13)
    labels = torch.tensor([0, 1, 0, 2, 1]) if similarity != "linear" else torch.rand(5)
    targets = F.label_similarity(labels, similarity, 1.0).double()
    exclude = self_exclude(5, 5, 0, z1.device)

    def per_anchor(*views: Tensor) -> Tensor:
        return supervised_pair_terms(*views, 0.3, exclude, targets)

    assert torch.autograd.gradcheck(per_anchor, (z1, z2))
    assert torch.autograd.gradgradcheck(per_anchor, (z1, z2))


def test_supervised_calls_the_fused_path_cannot_take_go_the_general_way(
    supervised_taken: list[int],
) -> None:
    z1, z2 = random_views(6, 4, torch.float32)
    labels = torch.tensor([0, 1, 0, 1, 2, 2])
    for module in (
        losses.get("supcon", block_size=4),
        losses.get("supcon", temperature=0.01),
        losses.get("lascon", variant="in"),
    ):
        assert torch.isfinite(module(z1, z2, labels))
    assert supervised_taken == []
