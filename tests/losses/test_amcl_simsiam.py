"""AMCL's SimSiam row (Eq. 2.2) at the similarity level: value against a float64 loop and
gradients against the closed forms ``∂/∂s = −1/(2τ)`` and
``∂/∂τ = s/(2τ²) + β(d'/(2τ) − 1/τ²)``."""

from __future__ import annotations

import pytest
import torch
from amcl_reference import omega_ref

from contrastkit.losses import functional as F


def test_simsiam_matches_eq_2_2_and_gradients() -> None:
    """Eq. (2.2) per head and sample: −s_a/(2τ_a) − s_b/(2τ_b) + βΩ(τ_a) + βΩ(τ_b)."""
    heads, m, d, beta = 3, 4, 8, 0.6
    g = torch.Generator().manual_seed(14)
    sa, sb = (2 * torch.rand(heads, m, generator=g, dtype=torch.float64) - 1 for _ in range(2))
    ta, tb = (0.05 + torch.rand(heads, m, generator=g, dtype=torch.float64) for _ in range(2))
    leaves = [x.clone().requires_grad_(True) for x in (sa, sb, ta, tb)]
    got = F.amcl_simsiam(*leaves, dim=d, beta=beta)
    want = 0.0
    for i in range(m):
        for c in range(heads):
            for s, t in ((sa[c, i].item(), ta[c, i].item()), (sb[c, i].item(), tb[c, i].item())):
                want += -s / (2 * t) + beta * omega_ref(t, d)
    assert got.item() == pytest.approx(want / m, rel=1e-12)
    none = F.amcl_simsiam(sa, sb, ta, tb, dim=d, beta=beta, reduction="none")
    assert none.shape == (heads, m)
    assert F.amcl_simsiam(sa, sb, ta, tb, dim=d, beta=beta, reduction="sum").item() == (
        pytest.approx(none.sum().item(), rel=1e-12)
    )
    g_sa, g_sb, g_ta, g_tb = torch.autograd.grad(got, leaves)
    for g_s, g_t, s, t in ((g_sa, g_ta, sa, ta), (g_sb, g_tb, sb, tb)):
        assert torch.allclose(g_s, -1 / (2 * m * t), rtol=1e-12)
        d_tau = s / (2 * t**2) + beta * (d / (2 * t) - 1 / t**2)
        assert torch.allclose(g_t, d_tau / m, rtol=1e-12)
