"""CACR's fused V-view path (cacr_cosine over GramNegatives) against the dense cost path."""

from __future__ import annotations

import pytest
import torch
from torch.nn.functional import normalize

from contrastkit.losses import CACR
from contrastkit.losses import functional as F
from contrastkit.losses.views import multiview_negatives, multiview_sq_distances


def value_and_grad(loss_fn, views: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    x = views.detach().clone().requires_grad_(True)
    loss = loss_fn(x)
    return loss.detach(), torch.autograd.grad(loss, x)[0]


@pytest.mark.parametrize("v,n", [(2, 2), (2, 7), (3, 5), (5, 4)])
@pytest.mark.parametrize("t_neg", [0.9, 2.0, 30.0])
@pytest.mark.parametrize("detach", [(False, False), (True, False), (False, True)])
@pytest.mark.parametrize("with_queue", [False, True])
def test_module_value_and_gradient_equal_the_dense_cost_path(
    v: int, n: int, t_neg: float, detach: tuple[bool, bool], with_queue: bool
) -> None:
    g = torch.Generator().manual_seed(v * 10 + n)
    views = torch.randn(v, n, 6, generator=g, dtype=torch.float64)
    queue = torch.randn(5, 6, generator=g, dtype=torch.float64) if with_queue else None
    module = CACR(1.0, t_neg, *detach)
    fused = value_and_grad(lambda x: module(x, queue), views)
    dense = value_and_grad(
        lambda x: F.cacr(*multiview_sq_distances(x, queue), 1.0, t_neg, *detach), views
    )
    for x, y in zip(fused, dense, strict=True):
        torch.testing.assert_close(x, y, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("block_size", [1, 3, 64])
def test_tiled_mode_gives_the_dense_gradient(block_size: int) -> None:
    g = torch.Generator().manual_seed(3)
    views = torch.randn(3, 6, 5, generator=g, dtype=torch.float64)
    queue = torch.randn(4, 5, generator=g, dtype=torch.float64)
    dense = value_and_grad(lambda x: CACR(t_neg=0.9)(x, queue), views)
    tiled = value_and_grad(lambda x: CACR(t_neg=0.9, block_size=block_size)(x, queue), views)
    for x, y in zip(tiled, dense, strict=True):
        torch.testing.assert_close(x, y, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("block_size", [None, 1, 4])
@pytest.mark.parametrize("detach", [(False, False), (True, True)])
def test_queue_loss_is_algorithm_3_on_costs(block_size: int | None, detach: tuple) -> None:
    """MoCo's form: query against its key and the queue only (no in-batch negatives)."""
    g = torch.Generator().manual_seed(5)
    q, k = normalize(torch.randn(2, 7, 6, generator=g, dtype=torch.float64), dim=-1)
    queue = normalize(torch.randn(9, 6, generator=g, dtype=torch.float64), dim=-1)
    module = CACR(1.0, 0.9, *detach, block_size=block_size)
    fused = value_and_grad(lambda x: module.queue_loss(x, k, queue), q)
    costs = value_and_grad(
        lambda x: F.cacr(
            (x - k).pow(2).sum(1, keepdim=True), torch.cdist(x, queue).pow(2), 1.0, 0.9, *detach
        ),
        q,
    )
    for x, y in zip(fused, costs, strict=True):
        torch.testing.assert_close(x, y, rtol=1e-9, atol=1e-11)


@pytest.mark.parametrize("block_size", [None, 2])
def test_rows_that_underflow_in_float32_are_recomputed(block_size: int | None) -> None:
    # t⁻ = 300 puts logits 2t⁻(s - 1) far below float32's exp range for most rows
    views = torch.randn(2, 6, 8, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    ref = value_and_grad(lambda x: F.cacr(*multiview_sq_distances(x), 1.0, 300.0), views)
    got = value_and_grad(lambda x: CACR(1.0, 300.0, block_size=block_size)(x), views.float())
    assert all(torch.isfinite(t).all() for t in got)
    for x, y in zip(got, ref, strict=True):
        torch.testing.assert_close(x.double(), y, rtol=1e-4, atol=1e-5)


def test_cosine_form_equals_the_cost_form_with_absent_negatives() -> None:
    g = torch.Generator().manual_seed(1)
    pos = torch.rand(5, 3, generator=g, dtype=torch.float64) * 2 - 1
    neg = torch.rand(5, 7, generator=g, dtype=torch.float64) * 2 - 1
    neg[0, 2] = neg[3, :4] = float("-inf")
    keep = torch.isfinite(neg)
    cost = torch.where(keep, 2 - 2 * neg, float("inf"))  # softmax(-t·inf) = 0: absent in both
    got = F.cacr_cosine(pos, neg, 0.5, 3.0, return_parts=True)
    ref = F.cacr(2 - 2 * pos, cost.nan_to_num(posinf=1e300), 0.5, 3.0, return_parts=True)
    for x, y in zip(got, ref, strict=True):
        torch.testing.assert_close(x, y, rtol=1e-12, atol=1e-12)


def test_repulsion_gradient_is_the_closed_form() -> None:
    # ∂E_i/∂s_ij = p_ij·(1 + β(s_ij - E_i)) with β = 2t⁻; L_CR = mean_i(2E_i - 2)
    g = torch.Generator().manual_seed(2)
    views = torch.randn(2, 5, 4, generator=g, dtype=torch.float64)
    pos, neg = multiview_negatives(views)
    anchors = neg.anchors.detach().requires_grad_(True)
    neg.anchors = anchors
    t_neg, m = 1.5, anchors.shape[0]
    (grad,) = torch.autograd.grad(F.cacr_cosine(pos.detach(), neg, 1.0, t_neg), anchors)
    s = (anchors @ anchors.T).detach()
    s[torch.arange(m), torch.arange(m)] = float("-inf")
    s[torch.arange(m), (torch.arange(m) + 5) % m] = float("-inf")
    p = torch.softmax(2 * t_neg * s, dim=1)
    s0 = torch.where(torch.isfinite(s), s, 0.0)
    e = (p * s0).sum(dim=1, keepdim=True)
    w = 2.0 / m * p * (1 + 2 * t_neg * (s0 - e))
    torch.testing.assert_close(grad, (w + w.T) @ anchors.detach(), rtol=1e-10, atol=1e-12)


def test_positive_similarities_follow_the_view_order() -> None:
    views = torch.randn(3, 4, 5, generator=torch.Generator().manual_seed(4))
    pos, _ = multiview_negatives(views)
    pos_cost, _ = multiview_sq_distances(views)
    torch.testing.assert_close(2 - 2 * pos, pos_cost, rtol=0, atol=1e-5)


def test_errors_name_the_argument() -> None:
    with pytest.raises(ValueError, match="neg_sim"):
        F.cacr_cosine(torch.rand(3, 1), torch.rand(4, 5))
    with pytest.raises(ValueError, match="pos_sim"):
        F.cacr_cosine(torch.rand(3), torch.rand(3, 5))
    with pytest.raises(ValueError, match="block_size"):
        CACR(block_size=0)(torch.randn(2, 3, 4))
