"""MACL (Huang et al., ICML 2023): Eq. (3), (7), (8), (11), Propositions 1-2, Algorithm 1."""

from __future__ import annotations

import itertools
import math

import pytest
import torch

from contrastkit.losses import MACL, NTXent
from contrastkit.losses import functional as F


def ref_macl(
    pos: list[float], negs: list[list[float]], tau0: float, alpha: float, a0: float
) -> float:
    """Algorithm 1, one anchor at a time."""
    a = sum(pos) / len(pos)
    tau = tau0 * (1 + alpha * (a - a0))
    total = 0.0
    for p, ng in zip(pos, negs, strict=True):
        den = math.exp(p / tau) + sum(math.exp(x / tau) for x in ng)
        prob = math.exp(p / tau) / den
        total += -1.0 / (1.0 - prob) * math.log(prob)
    return total / len(pos)


def sims(m: int, k: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    pos = torch.rand(m, generator=g, dtype=torch.float64) * 1.6 - 0.6
    return pos, torch.rand(m, k, generator=g, dtype=torch.float64) * 2 - 1


@pytest.mark.parametrize("m,k", [(2, 1), (6, 5), (20, 40)])
@pytest.mark.parametrize("tau0,alpha,a0", [(0.1, 0.5, 0.0), (0.2, 1.0, 0.2), (0.5, 0.3, 0.6)])
def test_macl_matches_algorithm_1(m: int, k: int, tau0: float, alpha: float, a0: float) -> None:
    pos, neg = sims(m, k, seed=m + k)
    expected = ref_macl(pos.tolist(), neg.tolist(), tau0, alpha, a0)
    assert F.macl(pos, neg, tau0, alpha, a0).item() == pytest.approx(expected, rel=1e-10)


def test_macl_without_adaptation_or_reweighting_is_info_nce() -> None:
    pos, neg = sims(10, 7, seed=2)
    torch.testing.assert_close(
        F.macl(pos, neg, 0.3, alpha=0.9, a0=0.1, reweight=False, adaptive=False),
        F.info_nce(pos, neg, 0.3),
    )
    # adaptive only: InfoNCE at τ_a
    tau = F.macl_temperature(pos, 0.3, 0.9, 0.1)
    torch.testing.assert_close(
        F.macl(pos, neg, 0.3, 0.9, 0.1, reweight=False), F.info_nce(pos, neg, tau.item())
    )


@pytest.mark.parametrize("reweight", [True, False])
def test_anchor_gradient_is_eq_3(reweight: bool) -> None:
    """∂L_i/∂f_i = -(W_i/τ)(g_i - Σ_j P̂_ij g_j); the reweighting cancels W_i."""
    g = torch.Generator().manual_seed(4)
    m, k, d = 5, 6, 7
    f = torch.randn(m, d, generator=g, dtype=torch.float64).div(3).requires_grad_(True)
    g_pos = torch.randn(m, d, generator=g, dtype=torch.float64) / 3
    g_neg = torch.randn(m, k, d, generator=g, dtype=torch.float64) / 3
    pos = (f * g_pos).sum(1)
    neg = torch.einsum("md,mkd->mk", f, g_neg)
    loss, tau = F.macl(
        pos, neg, 0.2, 0.5, 0.0, reweight=reweight, return_temperature=True, reduction="sum"
    )
    (grad,) = torch.autograd.grad(loss, f)
    with torch.no_grad():
        t = tau.item()
        p_hat = torch.softmax(neg / t, 1)  # Eq. (4)
        logits = torch.cat([pos[:, None], neg], 1) / t
        w = 1 - torch.softmax(logits, 1)[:, 0]  # Eq. (8)
        scale = torch.ones_like(w) if reweight else w
        expected = -(scale / t)[:, None] * (g_pos - torch.einsum("mk,mkd->md", p_hat, g_neg))
    torch.testing.assert_close(grad, expected)


def test_proposition_1_w_tends_to_one_as_k_grows() -> None:
    """Fig. 2's extreme case (pos = 1, neg = -1): W = K / (K + e^{2/τ}) exactly."""
    tau = 0.5
    ws = []
    for k in (1, 10, 100, 10_000, 1_000_000):
        _, log_w = F.info_nce_terms(
            torch.ones(1, dtype=torch.float64), -torch.ones(1, k, dtype=torch.float64), tau
        )
        ws.append(log_w.exp().item())
        assert ws[-1] == pytest.approx(k / (k + math.exp(2 / tau)), rel=1e-9)
    assert all(a < b for a, b in itertools.pairwise(ws))
    assert 1 - ws[-1] < 1e-4


@pytest.mark.parametrize("k", [1, 4, 63])
def test_proposition_2_w_tends_to_k_over_k_plus_one_as_tau_grows(k: int) -> None:
    pos, neg = sims(3, k, seed=k)
    ws = [F.info_nce_terms(pos, neg, tau)[1].exp() for tau in (1.0, 10.0, 1e3, 1e6)]
    torch.testing.assert_close(ws[-1], torch.full_like(ws[-1], k / (k + 1)), rtol=1e-5, atol=1e-6)
    assert (ws[-1] - k / (k + 1)).abs().max() < (ws[0] - k / (k + 1)).abs().max()


@pytest.mark.parametrize("alpha,a0", [(0.0, 0.0), (0.5, 0.0), (1.0, 0.0), (0.5, 0.6), (0.3, 0.9)])
def test_adaptive_temperature_is_eq_7_and_stays_in_its_range(alpha: float, a0: float) -> None:
    tau0 = 0.1
    lo, hi = (1 - alpha - alpha * a0) * tau0, (1 + alpha - alpha * a0) * tau0
    for seed in range(20):
        g = torch.Generator().manual_seed(seed)
        pos = torch.rand(16, generator=g, dtype=torch.float64) * 2 - 1
        tau = F.macl_temperature(pos, tau0, alpha, a0).item()
        expected = max(tau0 * (1 + alpha * (pos.mean().item() - a0)), 0.1 * tau0)
        assert tau == pytest.approx(expected)
        if lo >= 0.1 * tau0:
            assert lo - 1e-12 <= tau <= hi + 1e-12
    extremes = [
        F.macl_temperature(torch.full((3,), s, dtype=torch.float64), tau0, alpha, a0).item()
        for s in (-1.0, 1.0)
    ]
    assert extremes[1] == pytest.approx(hi)
    assert extremes[0] == pytest.approx(max(lo, 0.1 * tau0))


def test_temperature_floor_keeps_sentence_setting_finite() -> None:
    """α = 2, A0 = 0.8 (MACL Appendix B.4) gives τ_a <= 0 at A <= 0.3 without the floor."""
    pos = torch.full((4,), 0.1, dtype=torch.float64, requires_grad=True)
    neg = torch.rand(4, 9, dtype=torch.float64) * 0.2
    loss, tau = F.macl(pos, neg, 0.05, 2.0, 0.8, reweight=False, return_temperature=True)
    assert tau.item() == pytest.approx(0.005)
    loss.backward()
    assert torch.isfinite(loss) and torch.isfinite(pos.grad).all()
    assert F.macl_temperature(pos, 0.05, 2.0, 0.8, min_temperature=0.02).item() == pytest.approx(
        0.02
    )


def test_temperature_is_detached() -> None:
    pos, neg = sims(6, 5, seed=8)
    pos.requires_grad_(True)
    (g_adaptive,) = torch.autograd.grad(F.macl(pos, neg, 0.1, 0.5, reweight=False), pos)
    tau = F.macl_temperature(pos, 0.1, 0.5).item()
    (g_fixed,) = torch.autograd.grad(F.info_nce(pos, neg, tau), pos)
    torch.testing.assert_close(g_adaptive, g_fixed)


def _dominated(tau: float, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """Anchors whose positive beats the negatives by up to 2/τ logits (370 at τ = 0.005)."""
    pos = torch.tensor([0.99, 0.2, 0.5, 0.95], dtype=dtype)
    neg = torch.tensor(
        [[0.0, -0.1, 0.05], [0.3, 0.1, -0.2], [0.4, 0.45, 0.6], [-1.0, -0.9, -0.95]], dtype=dtype
    )
    return pos.requires_grad_(), neg.requires_grad_()


def _reference(pos: torch.Tensor, neg: torch.Tensor, tau: float) -> tuple[list, list, list]:
    """Per anchor, in float64: ``sg[1/W]·(-log P) = softplus(d)/sigmoid(d)`` with the gap
    ``d = log Σ exp(neg/τ) - pos/τ`` (``1 + e^d/2`` below d = -30), and its gradient, which
    the stop-gradient weight makes the gap's: ``-1/τ`` for the positive, ``softmax(neg/τ)/τ``
    for the negatives."""
    values, g_pos, g_neg = [], [], []
    for p, row in zip(pos.tolist(), neg.tolist(), strict=True):
        top = max(row)
        gap = top / tau + math.log(sum(math.exp((x - top) / tau) for x in row)) - p / tau
        if gap < -30:
            values.append(1 + math.exp(gap) / 2)
        else:
            values.append(math.log1p(math.exp(gap)) * (1 + math.exp(-gap)))
        g_pos.append(-1 / tau)
        weights = [math.exp((x - top) / tau) for x in row]
        g_neg.append([w / sum(weights) / tau for w in weights])
    return values, g_pos, g_neg


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("tau", [0.1, 0.03, 0.01, 0.005])
def test_weight_cancels_exactly_when_the_positive_dominates(tau: float, dtype: torch.dtype) -> None:
    """Eq. (11)'s ``sg[1/W]`` cancels the small ``W`` of an anchor whose positive dominates:
    the value tends to 1 and the gradient to the gap's. A clamp on ``1/W`` (at 44 logits in
    float32, 354 in float64) gave 0.006 for 1 here at τ = 0.02, and a gradient 50× too
    small. Dual temperature's ``sg[W(1)/W(τ)]`` is the same product times ``W(1)``."""
    pos, neg = _dominated(tau, dtype)
    values, g_pos, g_neg = _reference(pos.detach().double(), neg.detach().double(), tau)
    per_anchor = F.macl(pos, neg, tau, alpha=0.0, reduction="none")
    grads = torch.autograd.grad(per_anchor.sum(), (pos, neg))
    # float32: the negatives' softmax weights down to 1e-8 of the largest are off by their
    # exponent's rounding, so the bound is relative to the largest gradient, 1/τ
    close = {"rtol": 2e-6, "atol": 2e-6 / tau}
    if dtype == torch.float64:
        close = {"rtol": 1e-12, "atol": 1e-14 / tau}
    torch.testing.assert_close(
        per_anchor.double(), torch.tensor(values, dtype=torch.float64), **close
    )
    torch.testing.assert_close(grads[0].double(), torch.tensor(g_pos, dtype=torch.float64), **close)
    torch.testing.assert_close(grads[1].double(), torch.tensor(g_neg, dtype=torch.float64), **close)
    dual = F.dual_temperature(pos, neg, tau, inter_temperature=1.0, reduction="none")
    w_inter = torch.sigmoid(neg.detach().double().logsumexp(1) - pos.detach().double())
    torch.testing.assert_close(
        dual.double(), w_inter * torch.tensor(values, dtype=torch.float64), **close
    )
    (g_dual,) = torch.autograd.grad(dual.sum(), pos)
    torch.testing.assert_close(
        g_dual.double(), w_inter * torch.tensor(g_pos, dtype=torch.float64), **close
    )


def test_second_derivative_of_the_stop_gradient_product_is_exact() -> None:
    """``create_graph``: the gradient of MACL's gradient equals that of the plain float64
    product ``sg[1/W]·(-log P)``, ``-log P = softplus(d)`` and ``W = sigmoid(d)`` (where
    nothing overflows; ``-log`` of a softmax would lose 1e-8 of a dominated anchor's)."""
    pos, neg = _dominated(0.1, torch.float64)
    reference_pos, reference_neg = (t.detach().clone().requires_grad_() for t in (pos, neg))
    gap = (reference_neg / 0.1).logsumexp(1) - reference_pos / 0.1
    plain = ((1 / torch.sigmoid(gap)).detach() * torch.nn.functional.softplus(gap)).mean()
    for loss, inputs in (
        (F.macl(pos, neg, 0.1, alpha=0.0), (pos, neg)),
        (plain, (reference_pos, reference_neg)),
    ):
        first = torch.autograd.grad(loss, inputs, create_graph=True)
        second = torch.autograd.grad(sum((g**2).sum() for g in first), inputs)
        if inputs[0] is pos:
            ours = second
    torch.testing.assert_close(ours, second, rtol=1e-10, atol=1e-12)


def test_module_uses_the_2n_layout_and_logs_temperature() -> None:
    g = torch.Generator().manual_seed(3)
    z1, z2 = (
        torch.randn(6, 8, generator=g, dtype=torch.float64),
        torch.randn(6, 8, generator=g, dtype=torch.float64),
    )
    module = MACL(0.1, alpha=0.0, reweight=False)
    assert module.last_temperature is None
    torch.testing.assert_close(module(z1, z2), NTXent(0.1)(z1, z2))
    module = MACL(0.1, 0.5, 0.0)
    module(z1, z2)
    a = torch.nn.functional.cosine_similarity(z1, z2).mean().item()
    assert module.last_alignment == pytest.approx(a)
    assert module.last_temperature == pytest.approx(0.1 * (1 + 0.5 * a))
