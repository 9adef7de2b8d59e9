"""The unified gradient paradigm of Li, Zhang & Nie (ACL 2024) and the four contrastive
sentence-embedding losses it unifies: InfoNCE, ArcCon, MPT and MET.

Every loss here takes two views ``h, hp: [N, d]`` of the same ``N`` sentences (normalised
inside). Anchor ``h_i`` has the positive ``hp_i`` and the negatives ``hp_j, j ≠ i``; same-view
embeddings are never negatives (as in the paper's official code). With ``symmetric=False``
a loss is ``(1/N) Σ_i L_i`` over the anchors of ``h``; ``symmetric=True`` (default) adds the
same loss with the views swapped.

The paper writes the gradient of each loss w.r.t. its anchor as (Eq. 4)

    ∂L_i/∂h_i = GD · Σ_{j≠i} W_ij (hp_j − R_ij hp_i)

with a Gradient-Dissipation term GD, a Weight W and a Ratio R (Table 1). The closed forms
of these components are the ``gd_*``, ``weight_*`` and ``ratio_*`` helpers below; they act
on the cross-view cosine matrix ``s = h hpᵀ`` (``s_ii`` the positives) and are used both by
:func:`paradigm` (Eq. 5) and by :mod:`contrastkit.analysis`.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
import torch.nn.functional as tf
from torch import Tensor

from ._common import check_positive, check_views, compute_dtype, float32_compute
from ._unit_rows import unit_rows

GD_KINDS = ("indicator", "fraction", "none")
WEIGHT_KINDS = ("softmax", "hardest", "uniform")
RATIO_KINDS = ("static", "arccon", "met")
ARCCON_MARGIN = math.radians(10.0)  # ArcCon's u = 10° (Zhang et al., 2022)


def unit_views(h: object, hp: object) -> tuple[Tensor, Tensor]:
    """Validate ``h, hp: [N, d]`` (N >= 2) and return them L2-normalised in the compute dtype."""
    a, b = check_views(h, hp, names=("h", "hp"))
    dtype = compute_dtype(a, b)
    return unit_rows(a.to(dtype)), unit_rows(b.to(dtype))


def check_finite(value: float, name: str) -> float:
    """``value`` as a float if it is a finite real number, else ``ValueError``/``TypeError``."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    if not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value}")
    return float(value)


def negatives_masked(s: Tensor, fill: float = float("-inf")) -> Tensor:
    """A copy of ``s [N, N]`` with its diagonal (the positives) replaced by ``fill``."""
    return _diagonal_filled(s.clone(), fill)


def _diagonal_filled(x: Tensor, fill: float) -> Tensor:
    """``x`` (a fresh tensor) with its diagonal set to ``fill`` in place."""
    x.diagonal().fill_(fill)
    return x


def clamp_cos(c: Tensor) -> Tensor:
    """Cosines clamped inside (-1, 1) so ``arccos`` and ``1/sin`` keep finite gradients."""
    eps = 4.0 * torch.finfo(c.dtype).eps
    return c.clamp(-1.0 + eps, 1.0 - eps)


def distances(s: Tensor) -> Tensor:
    """Euclidean distances ``√(2 − 2s)`` of unit vectors; the clamp keeps the sqrt's gradient
    finite (zero below ``eps``) when two embeddings coincide."""
    return (2.0 - 2.0 * s).clamp(min=torch.finfo(s.dtype).eps).sqrt()


# ----------------------------------------------------------------------------------------
# Table 1: closed forms of GD [N], W [N, N] (zero diagonal) and R [N, N]


def gd_indicator(s: Tensor, margin: float) -> Tensor:
    """MPT's GD: ``1[s_ii − max_{k≠i} s_ik < m]`` as 0/1 in ``s.dtype``."""
    hardest = negatives_masked(s).amax(dim=1)
    return (torch.diagonal(s) - hardest < margin).to(s.dtype)


def gd_met(s: Tensor, margin: float) -> Tensor:
    """MET's GD: ``1[min_{k≠i} d_ik − d_ii < m]`` with ``d = √(2 − 2s)``."""
    d = distances(s)
    nearest = negatives_masked(d, float("inf")).amin(dim=1)
    return (nearest - torch.diagonal(d) < margin).to(s.dtype)


def gd_fraction(s: Tensor, temperature: float, pos: Tensor | None = None) -> Tensor:
    """InfoNCE's GD ``1 / (1 + e^{pos/τ} / Σ_{k≠i} e^{s_ik/τ})``, as a stable sigmoid.

    ``pos`` defaults to ``s_ii``; ArcCon passes ``cos(θ_ii + u)``.
    """
    pos = torch.diagonal(s) if pos is None else pos
    lse_neg = torch.logsumexp(_diagonal_filled(s / temperature, float("-inf")), dim=1)
    return torch.sigmoid(lse_neg - pos / temperature)


def weight_softmax(s: Tensor, temperature: float) -> Tensor:
    """``e^{s_ij/τ} / Σ_{k≠i} e^{s_ik/τ}`` over ``j ≠ i`` (Eq. 5's baseline weight)."""
    return torch.softmax(_diagonal_filled(s / temperature, float("-inf")), dim=1)


def weight_hardest(s: Tensor) -> Tensor:
    """One-hot on the hardest negative ``argmax_{k≠i} s_ik`` (MPT's weight)."""
    idx = negatives_masked(s).argmax(dim=1)
    return tf.one_hot(idx, s.shape[1]).to(s.dtype)


def weight_uniform(s: Tensor) -> Tensor:
    """``1/(N − 1)`` on every negative: no negative is preferred."""
    return _diagonal_filled(torch.full_like(s, 1.0 / (s.shape[0] - 1)), 0.0)


def ratio_arccon(s: Tensor, arc_margin: float) -> Tensor:
    """ArcCon's ``sin(θ_ii + u) / sin θ_ii`` (Eq. 2), broadcast over ``j`` to ``[N, N]``."""
    cos = clamp_cos(torch.diagonal(s))
    theta = torch.arccos(cos)
    r = torch.sin(theta + arc_margin) / torch.sqrt(1.0 - cos * cos)
    return r[:, None].expand_as(s)


def ratio_met(s: Tensor) -> Tensor:
    """MET's ``√((1 − cos θ_ij) / (1 − cos θ_ii))`` = ``d_ij / d_ii`` (Eq. 3)."""
    d = distances(s)
    return d / torch.diagonal(d)[:, None]


def paradigm_components(
    s: Tensor,
    margin: float = 0.3,
    temperature: float = 0.05,
    ratio: float = 1.0,
    gd: str = "indicator",
    weight: str = "softmax",
    ratio_kind: str = "static",
    arc_margin: float = ARCCON_MARGIN,
) -> tuple[Tensor, Tensor, Tensor]:
    """``(GD [N], W [N, N], R [N, N])`` of Eq. (5) from the cosine matrix ``s [N, N]``.

    The choices are Table 1's: ``gd`` in :data:`GD_KINDS`, ``weight`` in
    :data:`WEIGHT_KINDS`, ``ratio_kind`` in :data:`RATIO_KINDS` (``"static"`` is ``ratio``).
    """
    g, w = _gd_and_weight(s, margin, temperature, gd, weight, ratio_kind)
    if ratio_kind == "static":
        r = torch.full_like(s, ratio)
    elif ratio_kind == "arccon":
        r = ratio_arccon(s, arc_margin)
    else:
        r = ratio_met(s)
    return g, w, r


def _gd_and_weight(
    s: Tensor, margin: float, temperature: float, gd: str, weight: str, ratio_kind: str
) -> tuple[Tensor, Tensor]:
    """GD ``[N]`` and a freshly allocated W ``[N, N]`` after checking the three choices."""
    for value, name, kinds in (
        (gd, "gd", GD_KINDS),
        (weight, "weight", WEIGHT_KINDS),
        (ratio_kind, "ratio_kind", RATIO_KINDS),
    ):
        if value not in kinds:
            raise ValueError(f"{name} must be one of {kinds}, got {value!r}")
    if gd == "indicator":
        g = gd_indicator(s, margin)
    elif gd == "fraction":
        g = gd_fraction(s, temperature)
    else:
        g = torch.ones_like(torch.diagonal(s))
    if weight == "softmax":
        w = weight_softmax(s, temperature)
    elif weight == "hardest":
        w = weight_hardest(s)
    else:
        w = weight_uniform(s)
    return g, w


def paradigm_coefficients(
    s: Tensor,
    margin: float = 0.3,
    temperature: float = 0.05,
    ratio: float = 1.0,
    gd: str = "indicator",
    weight: str = "softmax",
    ratio_kind: str = "static",
    arc_margin: float = ARCCON_MARGIN,
) -> Tensor:
    """``C [N, N]`` with ``Σ_i L_i = Σ_ij C_ij s_ij`` for Eq. (5) at fixed GD, W, R.

    ``C_ij = GD_i·W_ij`` off the diagonal and ``C_ii = -GD_i·Σ_j W_ij R_ij``, so ``C`` is
    also ``∂(Σ_i L_i)/∂s``; a static ratio never forms the ``[N, N]`` R.
    """
    g, w = _gd_and_weight(s, margin, temperature, gd, weight, ratio_kind)
    if ratio_kind == "static":
        wr = ratio * w.sum(dim=1)
    elif ratio_kind == "arccon":
        wr = w.sum(dim=1) * ratio_arccon(s, arc_margin)[:, 0]
    else:
        wr = (w * ratio_met(s)).sum(dim=1)
    c = w.mul_(g[:, None])  # W has a zero diagonal
    c.diagonal().copy_(-g * wr)
    return c


# ----------------------------------------------------------------------------------------
# Losses


def both_ways(
    one: Callable[[Tensor, Tensor], Tensor], h: Tensor, hp: Tensor, symmetric: bool
) -> Tensor:
    """``one(h, hp)`` on the normalised views, plus ``one(hp, h)`` when ``symmetric``."""
    a, b = unit_views(h, hp)
    loss = one(a, b)
    if symmetric:
        loss = loss + one(b, a)
    return loss


@float32_compute
def paradigm(
    h: Tensor,
    hp: Tensor,
    margin: float = 0.3,
    temperature: float = 0.05,
    ratio: float = 1.0,
    gd: str = "indicator",
    weight: str = "softmax",
    ratio_kind: str = "static",
    arc_margin: float = ARCCON_MARGIN,
    symmetric: bool = True,
) -> Tensor:
    """The paradigm loss of Eq. (5): ``L_i = GD Σ_{j≠i} W_ij (h_iᵀhp_j − R_ij h_iᵀhp_i)``.

    GD, W and R are computed from detached similarities (:func:`paradigm_components`), so
    ``∂L_i/∂h_i`` is exactly Eq. (4). The defaults are the paper's §3.2 baseline: indicator
    GD with m = 0.3, softmax weight with τ = 0.05, static ratio r = 1. ``arc_margin`` is
    ArcCon's u (10°), used only by ``ratio_kind="arccon"``.

    At fixed GD, W and R the loss is linear in ``s = h hpᵀ`` (:func:`paradigm_coefficients`),
    so it is evaluated as ``⟨h, C hp⟩/N`` with ``C`` built from one detached ``s``; the
    swapped direction adds ``⟨hp, C' h⟩/N``. That is six ``N×N×d`` matrix products in all,
    half the work of one InfoNCE over the 2N views, and a few passes over ``[N, N]``.

    Args:
        h, hp: ``[N, d]`` two views, N >= 2. Returns a scalar (see the module docstring).
    """
    margin, ratio = check_finite(margin, "margin"), check_finite(ratio, "ratio")
    temperature = check_positive(temperature, "temperature")
    a, b = unit_views(h, hp)
    hyper = (margin, temperature, ratio, gd, weight, ratio_kind, arc_margin)
    pairs = ((a, b), (b, a)) if symmetric else ((a, b),)
    loss = a.new_zeros(())
    for x, y in pairs:
        with torch.no_grad():
            c = paradigm_coefficients(x @ y.T, *hyper)
        loss = loss + (x * (c @ y)).sum()
    return loss / a.shape[0]


@float32_compute
def arccon(
    h: Tensor,
    hp: Tensor,
    temperature: float = 0.05,
    margin: float = ARCCON_MARGIN,
    symmetric: bool = True,
) -> Tensor:
    """ArcCon (Zhang et al., 2022; Li et al. §2.2): InfoNCE with the positive logit
    ``cos(θ_ii + u)/τ``, ``θ_ii = arccos(h_iᵀhp_i)`` (cosine clamped inside (-1, 1)).

    Defaults: τ = 0.05 (SimCSE's, used throughout the paper) and u = 10° (ArcCon's).
    Its gradient is Eq. (2): GD and W of InfoNCE with ``cos(θ_ii + u)`` in place of the
    positive, and R = ``sin(θ_ii + u)/sin θ_ii`` (Table 1).
    """
    temperature = check_positive(temperature, "temperature")
    margin = check_finite(margin, "margin")

    def one(a: Tensor, b: Tensor) -> Tensor:
        s = a @ b.T
        pos = torch.cos(torch.arccos(clamp_cos(torch.diagonal(s))) + margin) / temperature
        neg = negatives_masked(s) / temperature
        # log(e^pos + Σ e^neg) - pos, without cancelling two large terms (softplus)
        return tf.softplus(torch.logsumexp(neg, dim=1) - pos, threshold=40.0).mean()

    return both_ways(one, h, hp, symmetric)


@float32_compute
def mpt(h: Tensor, hp: Tensor, margin: float = 0.3, symmetric: bool = True) -> Tensor:
    """MPT (Nie et al., 2023): ``relu(max_{k≠i} h_iᵀhp_k − h_iᵀhp_i + m)``; m = 0.3.

    Gradient (Eq. 3): indicator GD, one-hot weight on the hardest negative, R = 1.
    """
    margin = check_finite(margin, "margin")

    def one(a: Tensor, b: Tensor) -> Tensor:
        s = a @ b.T
        hardest = negatives_masked(s).amax(dim=1)
        return tf.relu(hardest - torch.diagonal(s) + margin).mean()

    return both_ways(one, h, hp, symmetric)


@float32_compute
def met(h: Tensor, hp: Tensor, margin: float = 0.3, symmetric: bool = True) -> Tensor:
    """MET (Nie et al., 2023): ``relu(d_ii − min_{k≠i} d_ik + m)`` with the Euclidean
    distance ``d_ij = ‖h_i − hp_j‖ = √(2 − 2 h_iᵀhp_j)``; m = 0.3.

    Gradient (Eq. 3): indicator GD on distances, weight ``1/d_ij`` on the nearest negative,
    R = ``d_ij / d_ii`` (Table 1).
    """
    margin = check_finite(margin, "margin")

    def one(a: Tensor, b: Tensor) -> Tensor:
        d = distances(a @ b.T)
        nearest = negatives_masked(d, float("inf")).amin(dim=1)
        return tf.relu(torch.diagonal(d) - nearest + margin).mean()

    return both_ways(one, h, hp, symmetric)
