"""§3.1 simulations (Figs. 2-4, 10) and Lemma 1 of Li, Zhang & Nie (ACL 2024)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from contrastkit import cli
from contrastkit.analysis import (
    MAP_KEYS,
    angular_components,
    grid,
    hardest_share,
    lemma1_min_ratio,
    paradigm_maps,
    softmax_hardest_share,
)


def test_angular_components_match_table_1_in_loops() -> None:
    g = torch.Generator().manual_seed(0)
    pos = 0.2 + 0.8 * torch.rand(6, generator=g, dtype=torch.float64)
    neg = 0.3 + 1.5 * torch.rand(6, 9, generator=g, dtype=torch.float64)
    tau, m, u = 0.1, 0.3, math.radians(10)
    got = angular_components(pos, neg, tau, m, u)
    for b in range(6):
        p, ns = float(pos[b]), [float(x) for x in neg[b]]
        z = sum(math.exp(math.cos(x) / tau) for x in ns)
        hardest = max(math.cos(x) for x in ns)
        d_hard = min(math.sqrt(2 - 2 * math.cos(x)) for x in ns)
        d_pos = math.sqrt(2 - 2 * math.cos(p))
        expected = {
            "gd_infonce": 1 / (1 + math.exp(math.cos(p) / tau) / z),
            "gd_arccon": 1 / (1 + math.exp(math.cos(p + u) / tau) / z),
            "gd_mpt": float(math.cos(p) - hardest < m),
            "gd_met": float(d_hard - d_pos < m),
            "ratio_arccon": math.sin(p + u) / math.sin(p),
            "ratio_met": math.sqrt((1 - hardest) / (1 - math.cos(p))),
        }
        for key in MAP_KEYS:
            assert float(got[key][b]) == pytest.approx(expected[key], rel=1e-10), key
        share = softmax_hardest_share(neg[b], tau)
        assert float(share) == pytest.approx(math.exp(hardest / tau) / z, rel=1e-10)


def test_gd_maps_show_the_papers_pattern() -> None:
    """Figs. 2 / 10: GD ≈ 1 when μ_neg ≈ μ_pos and ≈ 0 once μ_neg ≫ μ_pos, for all four."""
    mu_pos = torch.tensor([math.pi / 6, math.pi / 3], dtype=torch.float64)
    mu_neg = torch.tensor([math.pi / 6, math.pi / 3, math.pi], dtype=torch.float64)
    maps = paradigm_maps(mu_pos, mu_neg, batches=200)
    for key in ("gd_infonce", "gd_arccon", "gd_mpt", "gd_met"):
        values = maps[key]
        assert values[0, 0] > 0.9 and values[1, 1] > 0.9, key  # μ_neg = μ_pos
        assert values[0, 2] < 0.01 and values[1, 2] < 0.01, key  # μ_neg = π
    # ArcCon's GD is InfoNCE's with a harder positive: never smaller
    assert (maps["gd_arccon"] >= maps["gd_infonce"]).all()
    # dynamic ratios: ArcCon's > 1 for small θ_ii', MET's > 1 when negatives are farther
    assert (maps["ratio_arccon"] > 1).all()
    assert maps["ratio_met"][0, 2] > 1


def test_maps_are_reproducible_from_the_seed() -> None:
    mu = grid((0.3, 1.0), 3)
    a = paradigm_maps(mu, mu, batches=20, seed=5)
    b = paradigm_maps(mu, mu, batches=20, seed=5)
    assert all(torch.equal(a[k], b[k]) for k in MAP_KEYS)


def test_hardest_share_falls_with_temperature() -> None:
    """Fig. 3 (Conjecture 2): the hardest negative's share shrinks as τ grows; at τ = 1
    the weight is close to uniform over the 127 negatives."""
    mu_neg = torch.tensor([math.pi / 4, math.pi / 2], dtype=torch.float64)
    share = hardest_share(mu_neg, (0.01, 0.05, 0.3, 1.0), batches=100)
    assert (share[:-1] > share[1:]).all()
    assert (share[-1] < 2.0 / 127).all()
    assert (share[0] > 0.5).all()


def geometric_step(
    theta_pos: float,
    theta_neg: float,
    alpha: float,
    lam: float,
    r: float,
    d: int = 6,
    seed: int = 0,
) -> tuple[float, float]:
    """Anchor–positive distance on the tangent plane at h_i before and after the step
    λ(r hp_i − hp_j), built from explicit vectors in R^d."""
    g = torch.Generator().manual_seed(seed)
    q, _ = torch.linalg.qr(torch.randn(d, 3, generator=g, dtype=torch.float64))
    h, e1, e2 = q[:, 0], q[:, 1], q[:, 2]
    u_neg = math.cos(alpha) * e1 + math.sin(alpha) * e2
    hp_i = math.cos(theta_pos) * h + math.sin(theta_pos) * e1
    hp_j = math.cos(theta_neg) * h + math.sin(theta_neg) * u_neg

    def proj(v: torch.Tensor) -> torch.Tensor:
        return v - (v @ h) * h

    target = h + proj(hp_i)  # hp_i on the tangent plane
    moved = h + lam * (r * proj(hp_i) - proj(hp_j))
    return float((h - target).norm()), float((moved - target).norm())


@pytest.mark.parametrize("case", range(40))
def test_lemma_1_bound_against_geometric_simulation(case: int) -> None:
    g = torch.Generator().manual_seed(case)
    tp, tn, al = (float(x) for x in torch.rand(3, generator=g, dtype=torch.float64))
    theta_pos, theta_neg, alpha = 0.1 + 1.2 * tp, 0.3 + 2.5 * tn, math.pi * al
    lam = 0.05 + 0.4 * float(torch.rand(1, generator=g, dtype=torch.float64))
    angles = torch.tensor([theta_pos, theta_neg, alpha], dtype=torch.float64)
    bound = float(lemma1_min_ratio(angles[0], angles[1], angles[2], lam))
    if math.isinf(bound):
        # no ratio works: even the best r leaves the anchor farther away
        q = math.sin(theta_neg) / math.sin(theta_pos)
        best_r = 1 / lam + q * math.cos(alpha)
        before, after = geometric_step(theta_pos, theta_neg, alpha, lam, best_r)
        assert after > before
        return
    before, at = geometric_step(theta_pos, theta_neg, alpha, lam, bound)
    assert at == pytest.approx(before, rel=1e-9)  # the bound is where the distance is kept
    _, above = geometric_step(theta_pos, theta_neg, alpha, lam, bound + 1e-3)
    _, below = geometric_step(theta_pos, theta_neg, alpha, lam, bound - 1e-3)
    assert above < before < below


def test_lemma_1_rejects_bad_step() -> None:
    with pytest.raises(ValueError, match="lam must be > 0"):
        lemma1_min_ratio(torch.tensor(0.5), torch.tensor(1.0), torch.tensor(0.3), 0.0)


def test_figures_command_writes_pngs_and_arrays(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import numpy as np

    code = cli.main(
        ["figures", "paradigm", "--out", str(tmp_path), "--grid", "5", "--batches", "10"]
    )
    assert code == 0
    for name in ("gd_heatmaps.png", "hardest_share.png", "dynamic_ratio.png", "paradigm.npz"):
        assert (tmp_path / name).stat().st_size > 0
    data = np.load(tmp_path / "paradigm.npz")
    assert data["gd_met"].shape == (5, 5) and data["hardest_share"].shape[1] == 100
    assert "wrote" in capsys.readouterr().out
    assert cli.main(["figures", "paradigm", "--out", str(tmp_path), "--grid", "1"]) == 2
    assert "--grid must be in [2, 1000]" in capsys.readouterr().err
    # a second run into the folder replaces nothing unless asked to
    before = (tmp_path / "paradigm.npz").read_bytes()
    again = ["figures", "paradigm", "--out", str(tmp_path), "--grid", "4", "--batches", "5"]
    assert cli.main(again) == 2
    assert "already holds paradigm.npz" in capsys.readouterr().err
    assert (tmp_path / "paradigm.npz").read_bytes() == before
    assert cli.main([*again, "--overwrite"]) == 0
    assert np.load(tmp_path / "paradigm.npz")["gd_met"].shape == (4, 4)
    for flag, value in (("--margin", "nan"), ("--temperature", "inf"), ("--seed", "-1")):
        assert cli.main([*again, "--overwrite", flag, value]) == 2
        assert flag in capsys.readouterr().err
