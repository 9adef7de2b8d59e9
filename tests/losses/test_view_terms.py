"""The fused paths from V views (:mod:`contrastkit.losses.functional._view_terms`): CACR's
and CMC's.

:class:`~contrastkit.losses.CACR` takes its path without a queue, with conditional negative
weights and the Euclidean cost, where :func:`~contrastkit.losses.views.fused_pair_terms`
allows at ``τ = 1/(2·t⁻)``. It must give the general path's values, parts and gradients
(:func:`~contrastkit.losses.functional.cacr_cosine` over
:func:`~contrastkit.losses.views.multiview_negatives`) to rounding, and exact first and
second derivatives of its own. :class:`~contrastkit.losses.CMC` takes its path without a
queue where ``fused_pair_terms`` allows at its τ, and must give the mean of InfoNCE over
each ordered pair's dense similarities.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import pytest
import torch
from torch import Tensor

from contrastkit.losses import CACR, CMC
from contrastkit.losses import cacr as cacr_module
from contrastkit.losses import functional as F
from contrastkit.losses._indices import view_pairs
from contrastkit.losses.functional._view_terms import pairwise_terms, view_terms
from contrastkit.losses.views import cross_view_similarities, multiview_negatives


def _views(v: int, n: int, d: int, dtype: torch.dtype, seed: int = 0) -> Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(v, n, d, generator=g, dtype=torch.float64).to(dtype).requires_grad_()


@pytest.fixture
def taken(count_calls: Callable[[object, str], list[int]]) -> list[int]:
    """Counts the CACR calls that take the fused path."""
    return count_calls(cacr_module, "multiview_terms")


@pytest.fixture
def cmc_taken(count_calls: Callable[[object, str], list[int]]) -> list[int]:
    """Counts the CMC calls that take the fused path."""
    return count_calls(cacr_module, "multiview_pair_terms")


SETTINGS = [
    {},
    {"t_pos": 0.5, "t_neg": 0.9},
    {"detach_pos_weights": True},
    {"detach_neg_weights": True},
    {"pos_weights": "uniform"},
]


@pytest.mark.parametrize("setting", SETTINGS)
@pytest.mark.parametrize(
    ("dtype", "tol"), [(torch.float64, 1e-12), (torch.float32, 2e-6), (torch.bfloat16, 2e-6)]
)
@pytest.mark.parametrize(("v", "n"), [(2, 2), (2, 9), (3, 7)])
def test_the_fused_path_gives_the_general_paths_loss_parts_and_gradients(
    setting: dict, dtype: torch.dtype, tol: float, v: int, n: int, taken: list[int]
) -> None:
    views = _views(v, n, 5, dtype, seed=v * n)
    with torch.no_grad():
        views[v - 1, n // 2] = 0.0  # a zero row: zero cost terms, zero gradient
    module = CACR(**setting, backend="torch")
    fused = module(views)
    (fused_grad,) = torch.autograd.grad(fused, views)
    assert taken == [1]
    kwargs = {k: val for k, val in setting.items() if k not in ("t_pos", "t_neg")}
    t_pos, t_neg = setting.get("t_pos", 1.0), setting.get("t_neg", 2.0)
    want, *want_parts = F.cacr_cosine(
        *multiview_negatives(views.float() if dtype == torch.bfloat16 else views),
        t_pos,
        t_neg,
        return_parts=True,
        **kwargs,
    )
    (want_grad,) = torch.autograd.grad(want, views)
    assert fused.dtype == want.dtype
    assert abs((fused - want).item()) <= tol * max(1.0, abs(want.item()))
    for got, ref in zip(module.last_parts, want_parts, strict=True):
        assert abs(got - ref.item()) <= tol * max(1.0, abs(ref.item()))
    assert fused_grad.dtype == dtype
    err = float((fused_grad.double() - want_grad.double()).abs().max())
    assert err <= tol * float(want_grad.abs().max())
    assert float(fused_grad[v - 1, n // 2].abs().max()) == 0.0


@pytest.mark.parametrize("outputs", [(0, 1), (0,), (1,)])
@pytest.mark.parametrize("t_pos", [0.7, 0.0])
def test_first_and_second_derivatives_are_exact(outputs: tuple[int, ...], t_pos: float) -> None:
    views = _views(3, 4, 5, torch.float64, seed=3)

    def terms(x: Tensor) -> tuple[Tensor, ...]:
        both = view_terms(x, t_pos, 0.9)
        return tuple(both[i] for i in outputs)

    assert torch.autograd.gradcheck(terms, (views,))
    assert torch.autograd.gradgradcheck(terms, (views,))


@pytest.mark.parametrize("which", ["pos", "neg"])
def test_a_detached_weight_takes_no_gradient_through_its_softmax(which: str) -> None:
    """Detaching π⁺ or π⁻ gives the gradient of the costs under constant weights: the
    plain-operation form with the weights detached, first and second derivatives."""
    views = _views(3, 5, 4, torch.float64, seed=4)
    flags = (which == "pos", which == "neg")

    def first(fn) -> Tensor:
        (grad,) = torch.autograd.grad(sum(t.sum() for t in fn(views)), views, create_graph=True)
        return grad

    fused = first(lambda x: view_terms(x, 0.7, 0.9, *flags))
    ref = first(lambda x: _detached_reference(x, 0.7, 0.9, *flags))
    assert torch.allclose(fused, ref, rtol=1e-10, atol=1e-12)
    (second,) = torch.autograd.grad(fused.square().sum(), views)
    (second_ref,) = torch.autograd.grad(ref.square().sum(), views)
    assert torch.allclose(second, second_ref, rtol=1e-10, atol=1e-12)


def _detached_reference(
    views: Tensor, t_pos: float, t_neg: float, detach_pos: bool, detach_neg: bool
) -> tuple[Tensor, Tensor]:
    """Per-anchor attraction and repulsion by loops over the anchors (float64)."""
    v, n, _ = views.shape
    u = torch.nn.functional.normalize(views, dim=2)
    attraction, repulsion = [], []
    for a in range(v):
        for i in range(n):
            pos = torch.stack([2 - 2 * u[a, i] @ u[b, i] for b in range(v) if b != a])
            neg = torch.stack([u[a, i] @ u[b, j] for b in range(v) for j in range(n) if j != i])
            w_pos, w_neg = torch.softmax(t_pos * pos, 0), torch.softmax(2 * t_neg * neg, 0)
            w_pos = w_pos.detach() if detach_pos else w_pos
            w_neg = w_neg.detach() if detach_neg else w_neg
            attraction.append((w_pos * pos).sum())
            repulsion.append(2 * (w_neg * neg).sum() - 2)
    return torch.stack(attraction), torch.stack(repulsion)


def test_the_terms_match_a_loop_over_the_anchors() -> None:
    views = _views(3, 4, 6, torch.float64, seed=5)
    got = view_terms(views, 0.7, 0.9)
    want = _detached_reference(views, 0.7, 0.9, False, False)
    for g, w in zip(got, want, strict=True):
        assert torch.allclose(g, w, rtol=1e-12, atol=1e-14)


def test_calls_the_fused_path_cannot_take_go_the_general_way(taken: list[int]) -> None:
    views = _views(2, 6, 4, torch.float32)
    cases = [
        (CACR(block_size=4), (views,)),
        (CACR(t_neg=30.0), (views,)),  # a row sum could underflow
        (CACR(), (views, torch.randn(5, 4))),  # a queue
        (CACR(neg_weights="uniform"), (views,)),
        (CACR(repulsion_cost="rbf"), (views,)),
    ]
    for module, args in cases:
        assert torch.isfinite(module(*args))
    assert taken == []
    with pytest.raises(ValueError, match="t_pos must be a finite number > 0"):
        CACR(t_pos=0.0)(views)
    with pytest.raises(ValueError, match=r"views must have shape \[V, N, d\]"):
        CACR()(views[0])


def _dense_cmc(views: Tensor, temperature: float) -> Tensor:
    """CMC's loss by InfoNCE over each ordered pair's dense similarities."""
    pairs = itertools.permutations(range(views.shape[0]), 2)
    sims = [cross_view_similarities(views[a], views[b]) for a, b in pairs]
    return torch.stack([F.info_nce(pos, neg, temperature) for pos, neg in sims]).mean()


@pytest.mark.parametrize(
    ("dtype", "tol"), [(torch.float64, 1e-12), (torch.float32, 2e-6), (torch.bfloat16, 2e-6)]
)
@pytest.mark.parametrize(("v", "n"), [(2, 2), (2, 9), (3, 5), (5, 4)])
def test_cmc_takes_the_fused_path_with_the_dense_pairs_value_and_gradient(
    dtype: torch.dtype, tol: float, v: int, n: int, cmc_taken: list[int]
) -> None:
    views = _views(v, n, 6, dtype, seed=v + n)
    with torch.no_grad():
        views[0, n - 1] = 0.0  # a zero row: zero gradient
    fused = CMC(0.2)(views)
    (fused_grad,) = torch.autograd.grad(fused, views)
    assert cmc_taken == [1]
    want = _dense_cmc(views.float() if dtype == torch.bfloat16 else views, 0.2)
    (want_grad,) = torch.autograd.grad(want, views)
    assert abs((fused - want).item()) <= tol * max(1.0, abs(want.item()))
    assert fused_grad.dtype == dtype
    err = float((fused_grad.double() - want_grad.double()).abs().max())
    assert err <= tol * float(want_grad.abs().max())
    assert float(fused_grad[0, n - 1].abs().max()) == 0.0


@pytest.mark.parametrize("v", [2, 3])
def test_the_pairwise_terms_have_exact_first_and_second_derivatives(v: int) -> None:
    views = _views(v, 4, 3, torch.float64, seed=6)
    pairs = view_pairs(v, views.device)
    assert torch.autograd.gradcheck(lambda x: pairwise_terms(x, 0.4, pairs), (views,))
    assert torch.autograd.gradgradcheck(lambda x: pairwise_terms(x, 0.4, pairs), (views,))


def test_cmc_calls_the_fused_path_cannot_take_go_the_general_way(cmc_taken: list[int]) -> None:
    views = _views(3, 6, 4, torch.float32)
    assert torch.isfinite(CMC(0.01)(views))  # a row sum could underflow
    assert torch.isfinite(CMC()(views, torch.randn(5, 4)))  # a queue
    assert cmc_taken == []
