"""CACR's ablations (Table 8: w/o π⁺, w/o π⁻, UAUR) and RBF cost (Table 12, Eq. 13–14)
against float64 loop references, in both the cost and the fused cosine forms."""

from __future__ import annotations

import math

import pytest
import torch

from contrastkit.losses import CACR
from contrastkit.losses import functional as F
from contrastkit.losses.views import multiview_negatives


def softmax(xs: list[float]) -> list[float]:
    top = max(xs)
    e = [math.exp(x - top) for x in xs]
    return [v / sum(e) for v in e]


def ref(
    pos: list[list[float]],
    neg: list[list[float]],
    t_pos: float,
    t_neg: float,
    pos_weights: str,
    neg_weights: str,
    rbf: float | None,
) -> tuple[float, float]:
    """Eq. (3) attraction and Eq. (4) / Eq. (14) repulsion, one anchor at a time."""
    ca, cr_terms = 0.0, []
    for cp, cn in zip(pos, neg, strict=True):
        wp = (
            [1 / len(cp)] * len(cp)
            if pos_weights == "uniform"
            else softmax([t_pos * c for c in cp])
        )
        wn = (
            [1 / len(cn)] * len(cn)
            if neg_weights == "uniform"
            else softmax([-t_neg * c for c in cn])
        )
        ca += sum(w * c for w, c in zip(wp, cp, strict=True))
        if rbf is None:
            cr_terms.append(-sum(w * c for w, c in zip(wn, cn, strict=True)))
        else:
            cr_terms.append(sum(w * math.exp(-rbf * c) for w, c in zip(wn, cn, strict=True)))
    m = len(pos)
    cr = sum(cr_terms) / m
    return ca / m, (math.log(cr) if rbf is not None else cr)


VARIANTS = [
    ("uniform", "conditional", "euclidean"),  # w/o π⁺
    ("conditional", "uniform", "euclidean"),  # w/o π⁻
    ("uniform", "uniform", "euclidean"),  # UAUR
    ("conditional", "conditional", "rbf"),
    ("conditional", "uniform", "rbf"),
]


@pytest.mark.parametrize(("pos_w", "neg_w", "cost"), VARIANTS)
def test_cost_form_matches_the_loop(pos_w: str, neg_w: str, cost: str) -> None:
    g = torch.Generator().manual_seed(3)
    pos = torch.rand(5, 3, generator=g, dtype=torch.float64) * 4
    neg = torch.rand(5, 7, generator=g, dtype=torch.float64) * 4
    total, ca, cr = F.cacr(
        pos,
        neg,
        0.7,
        1.3,
        return_parts=True,
        pos_weights=pos_w,
        neg_weights=neg_w,
        repulsion_cost=cost,
        rbf_precision=1.5,
    )
    rca, rcr = ref(
        pos.tolist(), neg.tolist(), 0.7, 1.3, pos_w, neg_w, 1.5 if cost == "rbf" else None
    )
    assert ca.item() == pytest.approx(rca, rel=1e-12)
    assert cr.item() == pytest.approx(rcr, rel=1e-12)
    assert total.item() == pytest.approx(rca + rcr, rel=1e-12)


@pytest.mark.parametrize(("pos_w", "neg_w", "cost"), VARIANTS)
def test_fused_module_equals_the_cost_form_value_and_gradient(
    pos_w: str, neg_w: str, cost: str
) -> None:
    g = torch.Generator().manual_seed(5)
    views = torch.randn(3, 4, 6, generator=g, dtype=torch.float64, requires_grad=True)
    loss = CACR(1.0, 0.9, pos_weights=pos_w, neg_weights=neg_w, repulsion_cost=cost)(views)
    (grad,) = torch.autograd.grad(loss, views)
    # dense reference: the same similarities, as costs c = 2 - 2s
    pos_sim, _ = multiview_negatives(views, None, None, False)
    z = torch.nn.functional.normalize(views, dim=-1).reshape(12, 6)
    sim = z @ z.T
    sample = torch.arange(12) % 4
    mask = sample[:, None] == sample[None, :]
    neg_cost = (2 - 2 * sim).masked_select(~mask).view(12, 9)
    expected = F.cacr(
        2 - 2 * pos_sim,
        neg_cost,
        1.0,
        0.9,
        pos_weights=pos_w,
        neg_weights=neg_w,
        repulsion_cost=cost,
    )
    (expected_grad,) = torch.autograd.grad(expected, views)
    assert loss.item() == pytest.approx(expected.item(), rel=1e-10)
    torch.testing.assert_close(grad, expected_grad, rtol=1e-9, atol=1e-12)


def test_dense_cosine_form_equals_the_cost_form() -> None:
    g = torch.Generator().manual_seed(7)
    pos_sim = torch.rand(4, 2, generator=g, dtype=torch.float64) * 2 - 1
    neg_sim = torch.rand(4, 5, generator=g, dtype=torch.float64) * 2 - 1
    for pos_w, neg_w, cost in VARIANTS:
        kw = {"pos_weights": pos_w, "neg_weights": neg_w, "repulsion_cost": cost}
        a = F.cacr_cosine(pos_sim, neg_sim, 1.0, 2.0, **kw)
        b = F.cacr(2 - 2 * pos_sim, 2 - 2 * neg_sim, 1.0, 2.0, **kw)
        assert a.item() == pytest.approx(b.item(), rel=1e-12)


def test_float32_inputs_give_float32_and_bad_options_raise() -> None:
    views = torch.randn(2, 8, 4)
    assert CACR(repulsion_cost="rbf")(views).dtype == torch.float32
    with pytest.raises(ValueError, match="neg_weights must be one of"):
        CACR(neg_weights="flat")
    with pytest.raises(ValueError, match="repulsion_cost must be one of"):
        CACR(repulsion_cost="cosine")
    with pytest.raises(ValueError, match="rbf_precision must be"):
        CACR(repulsion_cost="rbf", rbf_precision=0.0)
    with pytest.raises(ValueError, match="detach_neg_weights"):
        CACR(repulsion_cost="rbf", detach_neg_weights=True)
