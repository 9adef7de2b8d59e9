"""The angle simulations of Li, Zhang & Nie (ACL 2024) §3.1 and the bound of Lemma 1.

Following §3.1 / Appendix A.1, a batch is one anchor–positive angle
``θ_ii' ~ N(μ_pos, 0.05²)`` and 127 anchor–negative angles ``θ_ij' ~ N(μ_neg, 0.10²)``;
every component is computed in the angular form of Table 1 and averaged over batches.

* :func:`paradigm_maps` — mean GD of InfoNCE, ArcCon, MPT and MET on a μ_pos × μ_neg grid
  (Figs. 2 and 10) and the mean dynamic ratios of ArcCon and MET (Fig. 4; MET's ratio is
  taken at the hardest negative, the only one its weight keeps).
* :func:`hardest_share` — the hardest negative's share of the softmax weight against μ_neg
  for several τ at μ_pos = π/6 (Fig. 3).
* :func:`lemma1_min_ratio` — Lemma 1's lower bound on the ratio r.

Everything is vectorised over batches and negatives; the only loop is over grid rows.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

SIGMA_POS, SIGMA_NEG, N_NEG = 0.05, 0.10, 127  # §3.1
MU_POS_RANGE = (math.pi / 20, math.pi / 2)
MU_NEG_RANGE = (math.pi / 20, math.pi)
MAP_KEYS = ("gd_infonce", "gd_arccon", "gd_mpt", "gd_met", "ratio_arccon", "ratio_met")


def grid(lo_hi: tuple[float, float], points: int) -> Tensor:
    """``points`` equally spaced values over the closed interval (float64)."""
    if points < 2:
        raise ValueError(f"points must be >= 2, got {points}")
    return torch.linspace(lo_hi[0], lo_hi[1], points, dtype=torch.float64)


def _angles(
    mu_pos: float, mu_neg: Tensor, batches: int, gen: torch.Generator
) -> tuple[Tensor, Tensor]:
    """``θ_pos [G, B]`` and ``θ_neg [G, B, 127]`` for one μ_pos and every μ_neg."""
    g = mu_neg.shape[0]
    pos = mu_pos + SIGMA_POS * torch.randn(g, batches, generator=gen, dtype=torch.float64)
    neg = mu_neg[:, None, None] + SIGMA_NEG * torch.randn(
        g, batches, N_NEG, generator=gen, dtype=torch.float64
    )
    return pos, neg


def angular_components(
    theta_pos: Tensor,
    theta_neg: Tensor,
    temperature: float = 0.05,
    margin: float = 0.3,
    arc_margin: float = math.radians(10.0),
) -> dict[str, Tensor]:
    """Per-batch GD and dynamic ratios (Table 1, angular form) from ``theta_pos [...]`` and
    ``theta_neg [..., K]``; returns tensors of ``theta_pos``'s shape named by :data:`MAP_KEYS`.
    """
    cos_pos, cos_neg = torch.cos(theta_pos), torch.cos(theta_neg)
    lse_neg = torch.logsumexp(cos_neg / temperature, dim=-1)
    arc_pos = torch.cos(theta_pos + arc_margin)
    hardest = cos_neg.amax(dim=-1)
    d_pos = torch.sqrt(2.0 - 2.0 * cos_pos)
    d_hard = torch.sqrt(2.0 - 2.0 * hardest)
    return {
        "gd_infonce": torch.sigmoid(lse_neg - cos_pos / temperature),
        "gd_arccon": torch.sigmoid(lse_neg - arc_pos / temperature),
        "gd_mpt": (cos_pos - hardest < margin).to(cos_pos.dtype),
        "gd_met": (d_hard - d_pos < margin).to(cos_pos.dtype),
        "ratio_arccon": torch.sin(theta_pos + arc_margin) / torch.sin(theta_pos),
        "ratio_met": d_hard / d_pos,
    }


def softmax_hardest_share(theta_neg: Tensor, temperature: float) -> Tensor:
    """``max_j e^{cos θ_j/τ} / Σ_k e^{cos θ_k/τ}`` over the last dimension of ``theta_neg``."""
    if not temperature > 0:
        raise ValueError(f"temperature must be > 0, got {temperature}")
    cos_neg = torch.cos(theta_neg)
    log_share = cos_neg.amax(dim=-1) / temperature - torch.logsumexp(cos_neg / temperature, dim=-1)
    return torch.exp(log_share)


def paradigm_maps(
    mu_pos: Tensor,
    mu_neg: Tensor,
    batches: int = 1000,
    temperature: float = 0.05,
    margin: float = 0.3,
    arc_margin: float = math.radians(10.0),
    seed: int = 0,
) -> dict[str, Tensor]:
    """Mean GD and dynamic ratios on the ``[P, G]`` grid ``mu_pos × mu_neg`` (radians).

    Returns the float64 maps named in :data:`MAP_KEYS`. GD forms (Table 1): InfoNCE
    ``1/(1 + e^{cos θ_ii'/τ}/Σ_k e^{cos θ_ik'/τ})``; ArcCon the same with ``cos(θ_ii' + u)``;
    MPT ``1[cos θ_ii' − max_k cos θ_ik' < m]``; MET ``1[min_k √(2−2cos θ_ik') −
    √(2−2cos θ_ii') < m]``. Ratios: ArcCon ``sin(θ_ii' + u)/sin θ_ii'``, MET
    ``√((1 − cos θ_ij')/(1 − cos θ_ii'))`` at the hardest negative j.
    """
    if batches < 1:
        raise ValueError(f"batches must be >= 1, got {batches}")
    gen = torch.Generator().manual_seed(seed)
    out = {k: torch.empty(mu_pos.shape[0], mu_neg.shape[0], dtype=torch.float64) for k in MAP_KEYS}
    for row, mp in enumerate(mu_pos.tolist()):
        pos, neg = _angles(mp, mu_neg, batches, gen)
        values = angular_components(pos, neg, temperature, margin, arc_margin)
        for key in MAP_KEYS:
            out[key][row] = values[key].mean(dim=1)
    return out


def hardest_share(
    mu_neg: Tensor,
    temperatures: tuple[float, ...] = (0.01, 0.03, 0.05, 0.1, 0.3, 1.0),
    batches: int = 1000,
    seed: int = 0,
) -> Tensor:
    """``[T, G]``: mean share ``max_j W_ij`` of the hardest negative in the softmax weight
    ``e^{cos θ_ij'/τ} / Σ_k e^{cos θ_ik'/τ}`` over 127 negatives (Fig. 3). The weight does
    not depend on the positive, so μ_pos (π/6 in the paper) does not enter."""
    gen = torch.Generator().manual_seed(seed)
    _, neg = _angles(math.pi / 6, mu_neg, batches, gen)
    rows = [softmax_hardest_share(neg, t).mean(dim=1) for t in temperatures]
    return torch.stack(rows)


def lemma1_min_ratio(theta_pos: Tensor, theta_neg: Tensor, alpha: Tensor, lam: float) -> Tensor:
    """Lemma 1: the smallest r for which a step ``λ(r hp_i − hp_j)`` (on the tangent plane at
    h_i) does not move h_i away from its positive:
    ``1/λ + sin θ_ij' cos α / sin θ_ii' − √(1/λ² − sin²θ_ij' sin²α / sin²θ_ii')``.

    ``alpha`` is the dihedral angle between the planes O h_i hp_i and O h_i hp_j. Where the
    square root's argument is negative no r works and ``inf`` is returned. The paper states
    only this lower bound; the step also overshoots once r exceeds the matching upper root
    (``+√``), which is large when λ is small.
    """
    if not lam > 0:
        raise ValueError(f"lam must be > 0, got {lam}")
    q = torch.sin(theta_neg) / torch.sin(theta_pos)
    disc = 1.0 / lam**2 - (q * torch.sin(alpha)) ** 2
    bound = 1.0 / lam + q * torch.cos(alpha) - torch.sqrt(disc.clamp(min=0.0))
    return torch.where(disc >= 0, bound, torch.full_like(bound, float("inf")))
