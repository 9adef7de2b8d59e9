"""Alignment/uniformity, Barlow Twins, VICReg and SimSiam against float64 loops."""

from __future__ import annotations

import math

import pytest
import torch

from contrastkit.losses import AlignUniform, BarlowTwins, SimSiamLoss, VICReg
from contrastkit.losses import functional as F


def views(n: int, d: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, d, generator=g, dtype=torch.float64), torch.randn(
        n, d, generator=g, dtype=torch.float64
    )


def ref_uniformity(x: torch.Tensor, t: float) -> float:
    n = x.shape[0]
    terms = [
        math.exp(-t * float((x[i] - x[j]).pow(2).sum())) for i in range(n) for j in range(i + 1, n)
    ]
    return math.log(sum(terms) / len(terms))


@pytest.mark.parametrize("alpha,t,weight", [(2.0, 2.0, 1.0), (1.0, 1.0, 0.5), (3.0, 4.0, 2.0)])
def test_align_uniform_matches_loop(alpha: float, t: float, weight: float) -> None:
    z1, z2 = views(7, 5, seed=1)
    a, b = (torch.nn.functional.normalize(z, dim=1) for z in (z1, z2))
    align = sum(float((a[i] - b[i]).norm()) ** alpha for i in range(7)) / 7
    expected = align + weight * (ref_uniformity(a, t) + ref_uniformity(b, t)) / 2
    assert AlignUniform(alpha, t, weight)(z1, z2).item() == pytest.approx(expected, rel=1e-10)


def test_alignment_of_identical_views_has_finite_gradient() -> None:
    x = torch.nn.functional.normalize(torch.randn(4, 3, dtype=torch.float64), dim=1).requires_grad_(
        True
    )
    for alpha in (1.0, 2.0):
        (grad,) = torch.autograd.grad(F.alignment(x, x.detach().clone(), alpha), x)
        assert torch.isfinite(grad).all()


def ref_barlow(z1: torch.Tensor, z2: torch.Tensor, lambd: float) -> float:
    n, d = z1.shape

    def standardise(z: torch.Tensor, j: int) -> list[float]:
        col = [float(z[i, j]) for i in range(n)]
        mu = sum(col) / n
        sd = math.sqrt(sum((c - mu) ** 2 for c in col) / n)
        return [(c - mu) / (sd + 1e-5) for c in col]

    a = [standardise(z1, j) for j in range(d)]
    b = [standardise(z2, j) for j in range(d)]
    total = 0.0
    for i in range(d):
        for j in range(d):
            c = sum(a[i][k] * b[j][k] for k in range(n)) / n
            total += (1 - c) ** 2 if i == j else lambd * c**2
    return total


def ref_vicreg(z1: torch.Tensor, z2: torch.Tensor) -> float:
    n, d = z1.shape
    inv = sum(float((z1[i, j] - z2[i, j]) ** 2) for i in range(n) for j in range(d)) / (n * d)
    var = cov = 0.0
    for z in (z1, z2):
        cols = [[float(z[i, j]) for i in range(n)] for j in range(d)]
        mus = [sum(c) / n for c in cols]
        cen = [[v - mu for v in c] for c, mu in zip(cols, mus, strict=True)]
        var += (
            sum(max(0.0, 1 - math.sqrt(sum(v * v for v in c) / (n - 1) + 1e-4)) for c in cen)
            / d
            / 2
        )
        cov += (
            sum(
                (sum(cen[p][k] * cen[q][k] for k in range(n)) / (n - 1)) ** 2
                for p in range(d)
                for q in range(d)
                if p != q
            )
            / d
        )
    return 25 * inv + 25 * var + cov


@pytest.mark.parametrize("n,d", [(2, 3), (9, 5)])
def test_barlow_twins_and_vicreg_match_loops(n: int, d: int) -> None:
    z1, z2 = views(n, d, seed=n + d)
    assert BarlowTwins(5e-3)(z1, z2).item() == pytest.approx(ref_barlow(z1, z2, 5e-3), rel=1e-8)
    assert VICReg()(z1 * 0.3, z2 * 0.3).item() == pytest.approx(
        ref_vicreg(z1 * 0.3, z2 * 0.3), rel=1e-8
    )


def test_simsiam_is_symmetric_negative_cosine_with_stop_gradient() -> None:
    p1, p2 = views(5, 4, seed=2)
    z1, z2 = views(5, 4, seed=3)
    for t in (p1, p2, z1, z2):
        t.requires_grad_(True)
    loss = SimSiamLoss()(p1, p2, z1, z2)
    cos = torch.nn.functional.cosine_similarity
    assert loss.item() == pytest.approx(-(cos(p1, z2).mean() + cos(p2, z1).mean()).item() / 2)
    loss.backward()
    assert z1.grad is None and z2.grad is None and p1.grad is not None
