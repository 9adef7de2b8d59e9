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


def test_weight_stays_finite_when_the_positive_dominates() -> None:
    pos = torch.ones(3, requires_grad=True)
    neg = -torch.ones(3, 2)
    loss = F.macl(pos, neg, 0.01, alpha=0.0)
    loss.backward()
    assert torch.isfinite(loss) and torch.isfinite(pos.grad).all()


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
