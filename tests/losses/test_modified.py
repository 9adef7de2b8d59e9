"""Li, Zhang & Nie (ACL 2024) §4 / Appendix E: the unmodified objectives (Table 2, upper
part: Eqs. 7-10) and the modified mMHE, mMHS, mBarlow, mVICReg (Eqs. 6, 13-19), against
loop-based float64 references written here."""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest
import torch
from torch import Tensor

from contrastkit.losses import functional as F

Loss = Callable[[Tensor, Tensor], Tensor]


def views(n: int = 8, d: int = 16, seed: int = 0) -> tuple[Tensor, Tensor]:
    """Unit-norm views; positives from close to far so the m = 0.3 indicator splits them."""
    g = torch.Generator().manual_seed(seed)
    h = torch.nn.functional.normalize(torch.randn(n, d, generator=g, dtype=torch.float64), dim=1)
    noise = torch.linspace(0.2, 2.0, n, dtype=torch.float64)[:, None]
    hp = h + noise * torch.randn(n, d, generator=g, dtype=torch.float64) / math.sqrt(d)
    return h, torch.nn.functional.normalize(hp, dim=1)


def dot(x: Tensor, y: Tensor) -> float:
    return sum(float(a) * float(b) for a, b in zip(x, y, strict=True))


def indicator(h: Tensor, hp: Tensor, m: float) -> list[float]:
    n = len(h)
    return [
        float(dot(h[i], hp[i]) - max(dot(h[i], hp[k]) for k in range(n) if k != i) < m)
        for i in range(n)
    ]


def tangent(v: Tensor, at: Tensor) -> Tensor:
    return v - (v * at).sum(dim=1, keepdim=True) * at


def autograd_tangent(fn: Loss, h: Tensor, hp: Tensor) -> Tensor:
    x = h.clone().requires_grad_(True)
    (g,) = torch.autograd.grad(fn(x, hp), x)
    return tangent(g, h)


def pair_sum(x: Tensor, tau: float) -> float:
    """Σ_{k<l} e^{x_kᵀx_l/τ}."""
    n = len(x)
    return sum(math.exp(dot(x[k], x[q]) / tau) for k in range(n) for q in range(k + 1, n))


# ---------------------------------------------------------------------------------------
# Reference values (loops)


def ref_mmhe(h: Tensor, hp: Tensor, m: float, r: float, tau: float) -> float:
    n, d = len(h), indicator(h, hp, m)
    z = pair_sum(h, tau)
    uniform = math.log(
        2.0
        / (n * (n - 1))
        * sum(
            math.exp(-float((h[k] - h[q]).pow(2).sum()) / (2 * tau))
            for k in range(n)
            for q in range(k + 1, n)
        )
    )
    align = 0.0
    for i in range(n):
        c = r * sum(math.exp(dot(h[i], h[j]) / tau) for j in range(n) if j != i) / (2 * tau * z)
        align += d[i] * c * float((h[i] - hp[i]).pow(2).sum())
    return align + uniform


def ref_mmhs(h: Tensor, hp: Tensor, m: float, r: float) -> float:
    n, d = len(h), indicator(h, hp, m)
    total = 0.0
    for i in range(n):
        sep = min(float((h[i] - h[j]).norm()) for j in range(n) if j != i)
        total += d[i] * (r / (2 * sep) * float((h[i] - hp[i]).pow(2).sum()) - sep)
    return total / n


def ref_weighted(h: Tensor, hp: Tensor, x: Tensor, m: float, r: float, tau: float) -> float:
    """Eq. (6) / (13) summed over anchors, weights from the view ``x``."""
    n, d = len(h), indicator(h, hp, m)
    z = 2 * pair_sum(x, tau)
    total = 0.0
    for i in range(n):
        w = {j: math.exp(dot(x[i], x[j]) / tau) / z for j in range(n) if j != i}
        wp = r * sum(w.values())
        total += d[i] * (-wp * dot(h[i], hp[i]) + sum(w[j] * dot(h[i], h[j]) for j in w))
    return total


def ref_mhe(h: Tensor, hp: Tensor, nu: float) -> float:
    n = len(h)
    align = sum(float((h[i] - hp[i]).pow(2).sum()) for i in range(n)) / n
    u = math.log(
        2
        / (n * (n - 1))
        * sum(
            math.exp(-float((h[k] - h[q]).pow(2).sum())) for k in range(n) for q in range(k + 1, n)
        )
    )
    return align + nu * u


def ref_mhs(h: Tensor, hp: Tensor, nu: float) -> float:
    n = len(h)
    align = sum(float((h[i] - hp[i]).pow(2).sum()) for i in range(n)) / n
    sep = [min(float((h[i] - h[j]).norm()) for j in range(n) if j != i) for i in range(n)]
    return align - nu * sum(sep) / n


def ref_barlow(h: Tensor, hp: Tensor, nu: float) -> float:
    n, dim = h.shape
    c = [
        [sum(float(h[i, k] * hp[i, q]) for i in range(n)) / n for q in range(dim)]
        for k in range(dim)
    ]
    return sum((c[k][k] - 1) ** 2 for k in range(dim)) + nu * sum(
        c[k][q] ** 2 for k in range(dim) for q in range(dim) if k != q
    )


def ref_vicreg(h: Tensor, hp: Tensor, nu_cov: float, nu_std: float, gamma: float) -> float:
    n, dim = h.shape

    def cov_std(x: Tensor) -> tuple[float, float]:
        mean = [sum(float(x[i, k]) for i in range(n)) / n for k in range(dim)]
        cov = [
            [
                sum((float(x[i, k]) - mean[k]) * (float(x[i, q]) - mean[q]) for i in range(n))
                / (n - 1)
                for q in range(dim)
            ]
            for k in range(dim)
        ]
        off = sum(cov[k][q] ** 2 for k in range(dim) for q in range(dim) if k != q) / dim
        std = sum(max(0.0, gamma - math.sqrt(cov[k][k] + 1e-4)) for k in range(dim)) / dim
        return off, std

    align = sum(float((h[i] - hp[i]).pow(2).sum()) for i in range(n)) / n
    (ca, sa), (cb, sb) = cov_std(h), cov_std(hp)
    return align + nu_cov * (ca + cb) + nu_std * (sa + sb)


VALUE_CASES: dict[str, tuple[Loss, Callable[[Tensor, Tensor], float]]] = {
    "mmhe": (
        lambda a, b: F.mmhe(a, b, 0.3, 1.5, 0.1, symmetric=False),
        lambda a, b: ref_mmhe(a, b, 0.3, 1.5, 0.1),
    ),
    "mmhs": (
        lambda a, b: F.mmhs(a, b, 0.3, 1.25, symmetric=False),
        lambda a, b: ref_mmhs(a, b, 0.3, 1.25),
    ),
    "mbarlow": (
        lambda a, b: F.mbarlow(a, b, 0.3, 1.5, 0.1, symmetric=False),
        lambda a, b: ref_weighted(a, b, b, 0.3, 1.5, 0.1),
    ),
    "mvicreg": (
        lambda a, b: F.mvicreg(a, b, 0.3, 1.5, 0.1, symmetric=False),
        lambda a, b: ref_weighted(a, b, a, 0.3, 1.5, 0.1),
    ),
    "mhe": (lambda a, b: F.mhe(a, b, 0.7, symmetric=False), lambda a, b: ref_mhe(a, b, 0.7)),
    "mhs": (lambda a, b: F.mhs(a, b, 0.7, symmetric=False), lambda a, b: ref_mhs(a, b, 0.7)),
    "barlow_l2": (
        lambda a, b: F.barlow_l2(a, b, 0.01, symmetric=False),
        lambda a, b: ref_barlow(a, b, 0.01),
    ),
    "vicreg_l2": (
        lambda a, b: F.vicreg_l2(a, b, 0.04, 1.0, 1.0, symmetric=False),
        lambda a, b: ref_vicreg(a, b, 0.04, 1.0, 1.0),
    ),
}


@pytest.mark.parametrize("name", sorted(VALUE_CASES))
def test_values_match_loop_references(name: str) -> None:
    h, hp = views(n=6, d=5, seed=1)
    fn, ref = VALUE_CASES[name]
    assert fn(h, hp).item() == pytest.approx(ref(h, hp), rel=1e-10, abs=1e-12)


# ---------------------------------------------------------------------------------------
# Eqs. (16)-(19): gradient w.r.t. each anchor, up to one positive factor shared by anchors


def eq16(h: Tensor, hp: Tensor, m: float, r: float, tau: float) -> Tensor:
    n, d, z = len(h), indicator(h, hp, m), pair_sum(h, tau)
    rows = []
    for i in range(n):
        v = sum(math.exp(dot(h[i], h[j]) / tau) * (h[j] - r * hp[i]) for j in range(n) if j != i)
        rows.append(d[i] * v / (tau * z))
    return torch.stack(rows)


def eq17(h: Tensor, hp: Tensor, m: float, r: float) -> Tensor:
    n, d = len(h), indicator(h, hp, m)
    rows = []
    for i in range(n):
        dist = {j: float((h[i] - h[j]).norm()) for j in range(n) if j != i}
        j = min(dist, key=dist.get)
        rows.append(d[i] * (h[j] - r * hp[i]) / dist[j])
    return torch.stack(rows)


def eq18_19(h: Tensor, hp: Tensor, x: Tensor, m: float, r: float, tau: float) -> Tensor:
    n, d, z = len(h), indicator(h, hp, m), 2 * pair_sum(x, tau)
    rows = []
    for i in range(n):
        v = sum(math.exp(dot(x[i], x[j]) / tau) * (h[j] - r * hp[i]) for j in range(n) if j != i)
        rows.append(d[i] * v / z)
    return torch.stack(rows)


GRAD_CASES: dict[str, tuple[Loss, Callable[[Tensor, Tensor], Tensor], str]] = {
    "mmhe": (
        lambda a, b: F.mmhe(a, b, symmetric=False),
        lambda a, b: eq16(a, b, 0.3, 1.75, 0.05),
        "1",
    ),
    "mmhs": (lambda a, b: F.mmhs(a, b, symmetric=False), lambda a, b: eq17(a, b, 0.3, 1.75), "1/N"),
    "mbarlow": (
        lambda a, b: F.mbarlow(a, b, symmetric=False),
        lambda a, b: eq18_19(a, b, b, 0.3, 1.5, 0.05),
        "1",
    ),
    "mvicreg": (
        lambda a, b: F.mvicreg(a, b, symmetric=False),
        lambda a, b: eq18_19(a, b, a, 0.3, 1.5, 0.05),
        "1",
    ),
}


@pytest.mark.parametrize("name", sorted(GRAD_CASES))
@pytest.mark.parametrize("seed", [0, 1])
def test_gradient_is_eq_16_to_19_up_to_one_shared_factor(name: str, seed: int) -> None:
    h, hp = views(n=8, d=16, seed=seed)
    fn, eq, documented = GRAD_CASES[name]
    d = torch.tensor(indicator(h, hp, 0.3), dtype=torch.bool)
    assert d.any() and not d.all()
    got = autograd_tangent(fn, h, hp)
    expected = tangent(eq(h, hp), h)
    # anchors with GD = 0 get no gradient at all
    assert torch.equal(got[~d], torch.zeros_like(got[~d]))
    # one positive factor shared by every anchor
    factor = float((got * expected).sum() / (expected * expected).sum())
    assert factor > 0
    torch.testing.assert_close(got, factor * expected, rtol=1e-9, atol=1e-12)
    assert factor == pytest.approx(1.0 if documented == "1" else 1.0 / len(h), rel=1e-10)


@pytest.mark.parametrize("name", sorted(GRAD_CASES))
def test_ratio_is_not_silently_rescaled(name: str) -> None:
    """Eqs. (16)-(19) at a different r: the fitted shared factor must not absorb r."""
    h, hp = views(n=8, d=16, seed=3)
    kw = {"ratio": 0.6}
    fn = {"mmhe": F.mmhe, "mmhs": F.mmhs, "mbarlow": F.mbarlow, "mvicreg": F.mvicreg}[name]
    got = autograd_tangent(lambda a, b: fn(a, b, symmetric=False, **kw), h, hp)
    eq = {
        "mmhe": lambda: eq16(h, hp, 0.3, 0.6, 0.05),
        "mmhs": lambda: eq17(h, hp, 0.3, 0.6) / len(h),
        "mbarlow": lambda: eq18_19(h, hp, hp, 0.3, 0.6, 0.05),
        "mvicreg": lambda: eq18_19(h, hp, h, 0.3, 0.6, 0.05),
    }[name]()
    torch.testing.assert_close(got, tangent(eq, h), rtol=1e-9, atol=1e-12)


# ---------------------------------------------------------------------------------------
# Table 2 (upper part): W and R of alignment + MHE and of Barlow Twins


def test_table_2_alignment_mhe_weight_and_ratio() -> None:
    h, hp = views(n=7, d=12, seed=4)
    n, nu = len(h), 0.8
    z = sum(math.exp(2 * dot(h[k], h[q])) for k in range(n) for q in range(k + 1, n))
    rows = []
    for i in range(n):
        w = {j: 2 * nu * math.exp(2 * dot(h[i], h[j])) / z for j in range(n) if j != i}
        r = z / (nu * n * sum(math.exp(2 * dot(h[i], h[k])) for k in range(n) if k != i))
        rows.append(sum(w[j] * (h[j] - r * hp[i]) for j in w))
    got = autograd_tangent(lambda a, b: F.mhe(a, b, nu, symmetric=False), h, hp)
    torch.testing.assert_close(got, tangent(torch.stack(rows), h), rtol=1e-9, atol=1e-12)


def test_table_2_barlow_twins_weight_and_ratio() -> None:
    h, hp = views(n=7, d=12, seed=5)
    n, dim = h.shape
    nu = 5e-3
    c_diag = torch.tensor(
        [sum(float(h[i, k] * hp[i, k]) for i in range(n)) / n for k in range(dim)],
        dtype=torch.float64,
    )
    a_mat = torch.eye(dim, dtype=torch.float64) - (1 - nu) * torch.diag(c_diag)
    rows = []
    for i in range(n):
        w = {j: 2 * nu * dot(hp[i], hp[j]) / n**2 for j in range(n) if j != i}
        r_scalar = n / (nu * sum(dot(hp[i], hp[k]) for k in range(n) if k != i))
        rows.append(sum(w[j] * (h[j] - r_scalar * (a_mat @ hp[i])) for j in w))
    got = autograd_tangent(lambda a, b: F.barlow_l2(a, b, nu, symmetric=False), h, hp)
    torch.testing.assert_close(got, tangent(torch.stack(rows), h), rtol=1e-8, atol=1e-12)
