"""CACR (Zheng et al., NeurIPS 2021) Eq. (2)-(5), Lemma 1, and the CMC baseline."""

from __future__ import annotations

import itertools
import math

import pytest
import torch

from contrastkit.losses import CACR, CMC
from contrastkit.losses import functional as F


def softmax(xs: list[float]) -> list[float]:
    top = max(xs)
    e = [math.exp(x - top) for x in xs]
    return [v / sum(e) for v in e]


def ref_cacr(
    pos_cost: list[list[float]], neg_cost: list[list[float]], t_pos: float, t_neg: float
) -> tuple[float, float]:
    ca = cr = 0.0
    for cp, cn in zip(pos_cost, neg_cost, strict=True):
        ca += sum(w * c for w, c in zip(softmax([t_pos * c for c in cp]), cp, strict=True))
        cr -= sum(w * c for w, c in zip(softmax([-t_neg * c for c in cn]), cn, strict=True))
    return ca / len(pos_cost), cr / len(pos_cost)


def costs(m: int, k: int, j: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return torch.rand(m, k, generator=g, dtype=torch.float64) * 4, torch.rand(
        m, j, generator=g, dtype=torch.float64
    ) * 4


@pytest.mark.parametrize("m,k,j", [(1, 1, 1), (4, 1, 6), (7, 4, 12)])
@pytest.mark.parametrize("t_pos,t_neg", [(1.0, 2.0), (0.5, 0.9), (3.0, 3.0)])
def test_cacr_matches_loop(m: int, k: int, j: int, t_pos: float, t_neg: float) -> None:
    pos_cost, neg_cost = costs(m, k, j, seed=m * k * j)
    total, ca, cr = F.cacr(pos_cost, neg_cost, t_pos, t_neg, return_parts=True)
    ref_ca, ref_cr = ref_cacr(pos_cost.tolist(), neg_cost.tolist(), t_pos, t_neg)
    assert ca.item() == pytest.approx(ref_ca, rel=1e-12)
    assert cr.item() == pytest.approx(ref_cr, rel=1e-12)
    assert total.item() == pytest.approx(ref_ca + ref_cr, rel=1e-12)


def test_lemma_1_vanishing_t_pos_gives_the_alignment_loss() -> None:
    pos_cost, neg_cost = costs(5, 4, 3, seed=1)
    _, ca, _ = F.cacr(pos_cost, neg_cost, t_pos=1e-9, return_parts=True)
    assert ca.item() == pytest.approx(pos_cost.mean().item(), rel=1e-7)
    _, ca_sharp, _ = F.cacr(pos_cost, neg_cost, t_pos=1.0, return_parts=True)
    assert ca_sharp > ca  # far positives weigh more once t⁺ > 0


def test_weights_grow_with_positive_cost_and_shrink_with_negative_cost() -> None:
    pos_cost = torch.tensor([[0.1, 0.5, 1.0, 2.0]], dtype=torch.float64, requires_grad=True)
    neg_cost = torch.tensor([[0.2, 0.7, 1.5, 3.0]], dtype=torch.float64, requires_grad=True)
    loss = F.cacr(pos_cost, neg_cost, 1.0, 2.0, detach_pos_weights=True, detach_neg_weights=True)
    w_pos, w_neg = torch.autograd.grad(
        loss, (pos_cost, neg_cost)
    )  # = π⁺ and -π⁻ with detached weights
    assert torch.all(w_pos[0, 1:] > w_pos[0, :-1])
    assert torch.all(-w_neg[0, 1:] < -w_neg[0, :-1])
    torch.testing.assert_close(w_pos.sum(), torch.tensor(1.0, dtype=torch.float64))
    torch.testing.assert_close(w_neg.sum(), torch.tensor(-1.0, dtype=torch.float64))


def test_detaching_the_weights_changes_only_the_gradient() -> None:
    pos_cost, neg_cost = costs(3, 4, 5, seed=2)
    pos_cost.requires_grad_(True)
    kept = F.cacr(pos_cost, neg_cost)
    detached = F.cacr(pos_cost, neg_cost, detach_pos_weights=True)
    torch.testing.assert_close(kept, detached)
    g_kept = torch.autograd.grad(kept, pos_cost)[0]
    g_det = torch.autograd.grad(detached, pos_cost)[0]
    w = torch.softmax(pos_cost.detach(), 1) / 3
    torch.testing.assert_close(g_det, w)
    # d/dc Σ softmax(c)·c = π(1 + c - Σπc)
    c = pos_cost.detach()
    torch.testing.assert_close(g_kept, w * (1 + c - (torch.softmax(c, 1) * c).sum(1, keepdim=True)))


def multiview_layout(views: torch.Tensor) -> tuple[list[list[float]], list[list[float]]]:
    z = torch.nn.functional.normalize(views, dim=-1)
    v, n, _ = z.shape
    pos, neg = [], []
    for a in range(v):
        for i in range(n):
            pos.append([float((z[a, i] - z[b, i]).pow(2).sum()) for b in range(v) if b != a])
            neg.append(
                [
                    float((z[a, i] - z[b, j]).pow(2).sum())
                    for b in range(v)
                    for j in range(n)
                    if j != i
                ]
            )
    return pos, neg


@pytest.mark.parametrize("v,n", [(2, 2), (3, 5), (5, 4)])
def test_cacr_module_matches_loop_over_views(v: int, n: int) -> None:
    views = torch.randn(
        v, n, 6, generator=torch.Generator().manual_seed(v * n), dtype=torch.float64
    )
    ref_ca, ref_cr = ref_cacr(*multiview_layout(views), 1.0, 0.9)
    module = CACR(1.0, 0.9)
    assert module(views).item() == pytest.approx(ref_ca + ref_cr, rel=1e-10)
    assert module.last_parts == pytest.approx((ref_ca, ref_cr), rel=1e-10)


def test_cacr_module_queue_adds_negatives() -> None:
    g = torch.Generator().manual_seed(0)
    views, queue = (
        torch.randn(3, 4, 5, generator=g, dtype=torch.float64),
        torch.randn(6, 5, generator=g, dtype=torch.float64),
    )
    pos, neg = multiview_layout(views)
    z = torch.nn.functional.normalize(views, dim=-1).reshape(12, 5)
    qn = torch.nn.functional.normalize(queue, dim=-1)
    neg = [row + (z[r] - qn).pow(2).sum(1).tolist() for r, row in enumerate(neg)]
    ca, cr = ref_cacr(pos, neg, 1.0, 2.0)
    assert CACR()(views, queue).item() == pytest.approx(ca + cr, rel=1e-10)


@pytest.mark.parametrize(
    "options", [{}, {"block_size": 2}, {"backend": "torch", "block_size": 3}], ids=str
)
@pytest.mark.parametrize("with_queue", [False, True], ids=["in-batch", "queue"])
def test_cmc_matches_loop_over_ordered_view_pairs(options: dict, with_queue: bool) -> None:
    """Eq. (8) in a float64 loop: the fused path, and the per-pair negatives (tiled by
    ``block_size``); with a queue, its rows follow the batch's other samples."""
    g = torch.Generator().manual_seed(9)
    views = torch.randn(4, 5, 6, generator=g, dtype=torch.float64)
    queue = torch.randn(3, 6, generator=g, dtype=torch.float64) if with_queue else None
    z = torch.nn.functional.normalize(views, dim=-1)
    memory = [] if queue is None else list(torch.nn.functional.normalize(queue, dim=-1))
    tau, terms = 0.07, []
    for a, b in itertools.permutations(range(4), 2):
        for i in range(5):
            logits = [float(z[a, i] @ z[b, j]) / tau for j in range(5)]
            logits += [float(z[a, i] @ w) / tau for w in memory]
            terms.append(-logits[i] + math.log(sum(math.exp(x) for x in logits)))
    value = CMC(tau, **options)(views, queue)
    assert value.item() == pytest.approx(sum(terms) / len(terms), rel=1e-10)


def test_views_need_two_views_and_two_samples() -> None:
    with pytest.raises(ValueError, match="views"):
        CACR()(torch.randn(1, 4, 3))
    with pytest.raises(ValueError, match="views"):
        CMC()(torch.randn(4, 3))


def test_temperatures_must_be_positive_when_built() -> None:
    """Eq. 3-4 need t > 0; a 0 was accepted at construction and refused at the first call."""
    for name in ("t_pos", "t_neg"):
        with pytest.raises(ValueError, match=f"{name} must be a finite number > 0, got 0"):
            CACR(**{name: 0.0})
