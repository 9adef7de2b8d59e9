"""AMCL's top-κ selection (§4.1; Eq. 2.1 and 2.4): which candidates κ keeps, κ clamped
per row to the present negatives, and the positive as a candidate under Eq. (2.4); values
against the float64 loops of amcl_reference.py and by hand."""

from __future__ import annotations

import math

import pytest
import torch
from amcl_reference import contrast_ref, omega_ref, random_inputs

from contrastkit.losses import functional as F


def _neg_grad(
    pos: torch.Tensor, neg: torch.Tensor, tp: torch.Tensor, tn: torch.Tensor, **kwargs: object
) -> torch.Tensor:
    """Gradient of the mean AMCL loss w.r.t. ``neg_sim`` (0 at absent negatives)."""
    neg = neg.clone().requires_grad_(True)
    (g,) = torch.autograd.grad(F.amcl_contrast(pos, neg, tp, tn, dim=8, **kwargs), neg)
    return g


def test_kappa_equal_k_uses_every_negative() -> None:
    m, k = 5, 7
    pos, neg, tp, tn = random_inputs(heads=2, m=m, k=k, seed=5, absent=False)
    g = _neg_grad(pos, neg, tp, tn, beta=0.7, kappa=k)
    assert torch.allclose(g, 1 / (m * k * tn), rtol=1e-12)
    for more in (k + 1, 50):
        assert torch.equal(_neg_grad(pos, neg, tp, tn, beta=0.7, kappa=more), g)
        a, b = (F.amcl_contrast(pos, neg, tp, tn, dim=8, beta=0.7, kappa=kk) for kk in (k, more))
        assert a.item() == b.item()


def test_kappa_one_uses_only_the_hardest_negative() -> None:
    m = 6
    pos, neg, tp, tn = random_inputs(heads=2, m=m, k=7, seed=6)
    # the hardest by similarity is not the largest logit in some rows: selection must use sims
    logits = torch.where(torch.isfinite(neg), neg / tn - 0.7 * F.amcl_omega(tn, 8), -math.inf)
    assert (logits.argmax(2) != neg.argmax(2)).any()
    g = _neg_grad(pos, neg, tp, tn, beta=0.7, kappa=1)
    hardest = torch.nn.functional.one_hot(neg.argmax(2), 7).bool()
    assert torch.allclose(g, torch.where(hardest, 1 / (m * tn), 0.0), rtol=1e-12, atol=0)
    # by hand: sims [0.9, 0.5] at τ [1, 0.05]; n* = 0 although 0.5/0.05 = 10 is the top logit
    one = torch.tensor([[0.2]], dtype=torch.float64)
    got = F.amcl_contrast(
        one,
        torch.tensor([[[0.9, 0.5]]], dtype=torch.float64),
        torch.full_like(one, 0.5),
        torch.tensor([[[1.0, 0.05]]]).double(),
        dim=8,
        beta=0.0,
        kappa=1,
    )
    assert got.item() == pytest.approx(-0.2 / 0.5 + 0.9 / 1.0, rel=1e-14)


def test_kappa_is_clamped_per_row_to_present_negatives() -> None:
    inf = -math.inf
    neg = torch.tensor(
        [
            [
                [0.3, inf, inf, inf, inf],  # 1 present → κ' = 1
                [inf, 0.1, -0.4, inf, 0.6],  # 3 present → κ' = 3
                [0.5, -0.9, 0.2, 0.7, 0.0],
            ]
        ],  # 5 present → top 4 (not -0.9)
        dtype=torch.float64,
    )
    pos = torch.tensor([[0.8, 0.4, 0.1]], dtype=torch.float64)
    g = torch.Generator().manual_seed(7)
    tp = 0.1 + torch.rand(1, 3, generator=g, dtype=torch.float64)
    tn = 0.1 + torch.rand(1, 3, 5, generator=g, dtype=torch.float64)
    grad = _neg_grad(pos, neg, tp, tn, beta=0.7, kappa=4)
    kept = torch.isfinite(neg)
    kept[0, 2, 1] = False
    count = torch.tensor([1.0, 3.0, 4.0], dtype=torch.float64)[None, :, None]
    assert torch.allclose(grad, torch.where(kept, 1 / (3 * count * tn), 0.0), rtol=1e-12)
    got = F.amcl_contrast(pos, neg, tp, tn, dim=8, beta=0.7, kappa=4)
    assert got.item() == pytest.approx(
        contrast_ref(pos, neg, tp, tn, 8, 0.7, "topk", 4, False), rel=1e-12
    )


def test_include_positive_lets_the_positive_be_selected() -> None:
    """Eq. (2.4): the positive joins the candidates with its own (s⁺, τ⁺)."""
    inf, d, beta = -math.inf, 8, 0.5
    pos = torch.tensor([[0.95, 0.0, 0.3]], dtype=torch.float64, requires_grad=True)
    neg = torch.tensor([[[0.3, 0.1, inf], [0.6, 0.2, -0.5], [inf, inf, inf]]], dtype=torch.float64)
    tp = torch.tensor([[0.4, 0.7, 0.2]], dtype=torch.float64)
    tn = torch.tensor([[[0.9, 0.3, 1.1], [0.5, 0.05, 0.8], [0.6, 0.6, 0.6]]], dtype=torch.float64)

    def ell(s: float, t: float) -> float:
        return s / t - beta * omega_ref(t, d)

    kw = dict(dim=d, beta=beta, include_positive=True, reduction="none")
    per = F.amcl_contrast(pos, neg, tp, tn, kappa=1, **kw)[0]
    # anchor 0: the positive is the top candidate, its own ℓ⁺ cancels; anchor 2 has only it
    assert per[0].item() == 0.0 and per[2].item() == 0.0
    assert per[1].item() == pytest.approx(-ell(0.0, 0.7) + ell(0.6, 0.5), rel=1e-14)
    (gp,) = torch.autograd.grad(per.sum(), pos)
    assert gp[0, 0].item() == 0.0 and gp[0, 1].item() == pytest.approx(-1 / 0.7, rel=1e-14)
    # κ = 2 in anchor 0: the positive and the top negative are averaged
    per2 = F.amcl_contrast(pos, neg, tp, tn, kappa=2, **kw)[0]
    want = -ell(0.95, 0.4) + 0.5 * (ell(0.95, 0.4) + ell(0.3, 0.9))
    assert per2[0].item() == pytest.approx(want, rel=1e-14)
    (gp2,) = torch.autograd.grad(per2.sum(), pos)
    assert gp2[0, 0].item() == pytest.approx(-0.5 / 0.4, rel=1e-14)
    # Eq. (2.1): the positive is never a candidate, so anchor 0 pays its hardest negative
    excl = F.amcl_contrast(
        pos[:, :2], neg[:, :2], tp[:, :2], tn[:, :2], dim=d, beta=beta, kappa=1, reduction="none"
    )[0]
    assert excl[0].item() == pytest.approx(-ell(0.95, 0.4) + ell(0.3, 0.9), rel=1e-14)
    with pytest.raises(ValueError, match="at least one finite negative"):
        F.amcl_contrast(pos, neg, tp, tn, dim=d, beta=beta, kappa=1)
