"""Closed-form paradigm components of every loss in Tables 1–2 of Li, Zhang & Nie (ACL 2024).

Each loss's gradient w.r.t. anchor ``h_i`` is written as

    ∂L/∂h_i = scale · GD_i Σ_{j≠i} W_ij (n_j − R_ij A hp_i)

with ``n_j = hp_j`` for the contrastive losses (Eq. 4) and ``n_j = h_j`` for the
non-contrastive ones (Eq. 12), ``A`` the identity except for Barlow Twins (``A = I −
(1 − ν) C_diag``, Eq. 10) and ``scale`` the factor between the per-anchor closed form and
the gradient of the batch loss of :mod:`contrastkit.losses.functional` called with
``symmetric=False`` (1/N for losses that average over anchors). Only the tangent part of
these vectors matters: the embeddings live on the unit sphere.

Example:
    >>> import torch
    >>> from contrastkit.analysis import components
    >>> c = components("mpt", torch.randn(6, 4), torch.randn(6, 4))
    >>> c.weight.shape, c.ratio.shape
    (torch.Size([6, 6]), torch.Size([6, 6]))
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as tf
from torch import Tensor

from contrastkit.losses.functional._common import check_positive
from contrastkit.losses.functional.paradigm import (
    ARCCON_MARGIN,
    clamp_cos,
    distances,
    gd_fraction,
    gd_indicator,
    gd_met,
    negatives_masked,
    paradigm_components,
    ratio_arccon,
    ratio_met,
    unit_views,
    weight_hardest,
    weight_softmax,
)


@dataclass(frozen=True)
class Components:
    """GD ``[N]``, W ``[N, N]`` (zero diagonal), R ``[N, N]`` of one loss on one batch."""

    gd: Tensor
    weight: Tensor
    ratio: Tensor
    negatives: str  # "other": n_j = hp_j (Eq. 4); "same": n_j = h_j (Eq. 12)
    scale: float
    ratio_matrix: Tensor | None = None  # Barlow Twins' A [d, d]; None means the identity


def _infonce(s: Tensor, temperature: float = 0.05) -> tuple[Tensor, Tensor, Tensor]:
    w = weight_softmax(s, temperature) / temperature
    return gd_fraction(s, temperature), w, torch.ones_like(s)


def _arccon(
    s: Tensor, temperature: float = 0.05, margin: float = ARCCON_MARGIN
) -> tuple[Tensor, Tensor, Tensor]:
    pos = torch.cos(torch.arccos(clamp_cos(torch.diagonal(s))) + margin)
    w = weight_softmax(s, temperature) / temperature
    return gd_fraction(s, temperature, pos), w, ratio_arccon(s, margin)


def _mpt(s: Tensor, margin: float = 0.3) -> tuple[Tensor, Tensor, Tensor]:
    return gd_indicator(s, margin), weight_hardest(s), torch.ones_like(s)


def _met(s: Tensor, margin: float = 0.3) -> tuple[Tensor, Tensor, Tensor]:
    d = distances(s)
    nearest = negatives_masked(d, float("inf")).argmin(dim=1)
    w = tf.one_hot(nearest, s.shape[1]).to(s.dtype) / d
    return gd_met(s, margin), w, ratio_met(s)


def _exp_weights(x: Tensor, temperature: float) -> Tensor:
    """``e^{x_iᵀx_j/τ} / Σ_{k≠l} e^{x_kᵀx_l/τ}`` over ordered pairs, zero diagonal."""
    logits = negatives_masked(x @ x.T) / temperature
    return torch.exp(logits - torch.logsumexp(logits.flatten(), dim=0))


_CONTRASTIVE = {"infonce": _infonce, "arccon": _arccon, "mpt": _mpt, "met": _met}
NAMES = (
    "infonce",
    "arccon",
    "mpt",
    "met",
    "paradigm",
    "mhe",
    "mhs",
    "barlow",
    "vicreg",
    "mmhe",
    "mmhs",
    "mbarlow",
    "mvicreg",
)


def components(name: str, h: Tensor, hp: Tensor, **hparams: float | str) -> Components:
    """GD, W and R of loss ``name`` (one of :data:`NAMES`) on ``h, hp: [N, d]``.

    ``hparams`` are the loss's own keywords with the same defaults as the loss functions
    (e.g. ``temperature``, ``margin``, ``ratio``; ``gd``/``weight``/``ratio_kind`` for
    ``"paradigm"``; ``nu`` for ``"mhe"`` and ``"barlow"``). Closed forms: Table 1 for
    InfoNCE, ArcCon, MPT, MET (W includes InfoNCE's 1/τ); Eq. (5) for the paradigm;
    Table 2 (upper part) for alignment + MHE and Barlow Twins (both on L2-normalised views);
    Eqs. (16)–(19) for the modified objectives (``W = 1/‖h_i − h_j‖`` on the nearest
    neighbour for mMHS).
    """
    if name not in NAMES:
        raise ValueError(f"name must be one of {NAMES}, got {name!r}")
    with torch.no_grad():
        a, b = unit_views(h, hp)
        n = a.shape[0]
        s = a @ b.T
        try:
            if name in _CONTRASTIVE:
                g, w, r = _CONTRASTIVE[name](s, **hparams)  # type: ignore[arg-type]
                return Components(g, w, r, "other", 1.0 / n)
            if name == "paradigm":
                g, w, r = paradigm_components(s, **hparams)  # type: ignore[arg-type]
                return Components(g, w, r, "other", 1.0 / n)
            if name == "mhe":
                return _mhe(a, **hparams)  # type: ignore[arg-type]
            if name == "barlow":
                return _barlow(a, b, **hparams)  # type: ignore[arg-type]
            if name == "mhs":
                return _mhs(a, **hparams)  # type: ignore[arg-type]
            if name == "vicreg":
                return _vicreg(a, **hparams)  # type: ignore[arg-type]
            return _modified(name, a, b, **hparams)  # type: ignore[arg-type]
        except TypeError as exc:
            raise ValueError(f"bad hyper-parameters for {name!r}: {exc}") from None


def _mhe(a: Tensor, nu: float = 1.0) -> Components:
    """Table 2, alignment + ν MHE: ``W = 2ν e^{2h_iᵀh_j}/Σ_{k<l} e^{2h_kᵀh_l}``,
    ``R = Σ_{k<l} e^{2h_kᵀh_l} / (ν N Σ_{k≠i} e^{2h_iᵀh_k})``."""
    nu = check_positive(nu, "nu")
    n = a.shape[0]
    logits = negatives_masked(2.0 * (a @ a.T))
    log_pairs = torch.logsumexp(logits.flatten(), dim=0) - math.log(2.0)  # log Σ_{k<l}
    w = 2.0 * nu * torch.exp(logits - log_pairs)
    r = torch.exp(log_pairs - torch.logsumexp(logits, dim=1)) / (nu * n)
    return Components(torch.ones_like(a[:, 0]), w, r[:, None].expand(n, n), "same", 1.0)


def _barlow(a: Tensor, b: Tensor, nu: float = 5e-3) -> Components:
    """Table 2, Barlow Twins (Tao et al.'s Eq. 10): ``W = 2ν hp_iᵀhp_j / N²``,
    ``R = N A / (ν Σ_{k≠i} hp_iᵀhp_k)`` with ``A = I − (1 − ν) C_diag``."""
    nu = check_positive(nu, "nu")
    n = a.shape[0]
    gram = negatives_masked(b @ b.T, 0.0)
    w = 2.0 * nu * gram / n**2
    total = gram.sum(dim=1)
    tiny = torch.finfo(a.dtype).tiny
    total = torch.where(total.abs() < tiny, torch.full_like(total, tiny), total)
    r = n / (nu * total)
    c_diag = torch.diagonal(a.T @ b) / n
    a_mat = torch.diag(1.0 - (1.0 - nu) * c_diag)
    return Components(torch.ones_like(a[:, 0]), w, r[:, None].expand(n, n), "same", 1.0, a_mat)


def _mhs(a: Tensor, nu: float = 1.0) -> Components:
    """Alignment + ν MHS as the batch loss :func:`~contrastkit.losses.functional.mhs`
    (uniformity averaged over anchors). Its exact gradient puts ``W_ij = ν/‖h_i − h_j‖``
    on the nearest neighbour ``j = n(i)`` **and** on every ``j`` whose nearest neighbour is
    ``i`` (Table 2 / Eq. 9 keep only the first: they differentiate the per-anchor
    ``L_i^{u,MHS}``); ``R_i = 2 / Σ_j W_ij`` so that ``Σ_j W_ij R_ij = 2``, scale 1/N.
    With only the nearest neighbour this is Table 2's ``R = 2‖h_i − h_j‖/(ν N)`` at scale 1."""
    nu = check_positive(nu, "nu")
    n = a.shape[0]
    s_aa = a @ a.T
    nearest = tf.one_hot(negatives_masked(s_aa).argmax(dim=1), n).to(a.dtype)
    w = nu * (nearest + nearest.T) / distances(s_aa)
    r = 2.0 / w.sum(dim=1)
    return Components(torch.ones_like(a[:, 0]), w, r[:, None].expand(n, n), "same", 1.0 / n)


def _vicreg(a: Tensor, nu: float = 0.04) -> Components:
    """Table 2, VICReg (Tao et al.'s gradient, Eq. 11): ``W = 4ν h_iᵀh_j / (D (N−1)²)``,
    ``R = D (N−1)² / (2 ν N Σ_{k≠i} h_iᵀh_k)``, ν = ν^{V,1} (default 0.04, the covariance
    weight of :func:`~contrastkit.losses.functional.vicreg_l2`). This is exactly the
    gradient of ``L^a + (ν/D) ‖Σ_i h_i h_iᵀ/(N−1)‖_F²`` — VICReg without centring and
    without the variance hinge, the simplification Tao et al. and the paper make; the
    registered ``vicreg_l2`` (centred, off-diagonal, hinge) has extra matrix terms that do
    not fit the paradigm's scalar W and R."""
    nu = check_positive(nu, "nu")
    n, dim = a.shape
    gram = negatives_masked(a @ a.T, 0.0)
    w = 4.0 * nu * gram / (dim * (n - 1) ** 2)
    total = gram.sum(dim=1)
    tiny = torch.finfo(a.dtype).tiny
    total = torch.where(total.abs() < tiny, torch.full_like(total, tiny), total)
    r = dim * (n - 1) ** 2 / (2.0 * nu * n * total)
    return Components(torch.ones_like(a[:, 0]), w, r[:, None].expand(n, n), "same", 1.0)


def _modified(
    name: str,
    a: Tensor,
    b: Tensor,
    margin: float = 0.3,
    ratio: float | None = None,
    temperature: float = 0.05,
) -> Components:
    """Eqs. (16)–(19): indicator GD, exponential (or nearest-neighbour) W, static r."""
    n = a.shape[0]
    default_ratio = {"mmhe": 1.75, "mmhs": 1.75, "mbarlow": 1.5, "mvicreg": 1.5}[name]
    r = float(default_ratio if ratio is None else ratio)
    g = gd_indicator(a @ b.T, margin)
    scale = 1.0
    if name == "mmhe":
        w = 2.0 * _exp_weights(a, temperature) / temperature  # Σ_{k<l} = Σ_{k≠l} / 2
    elif name == "mbarlow":
        w = _exp_weights(b, temperature)
    elif name == "mvicreg":
        w = _exp_weights(a, temperature)
    else:
        s_aa = a @ a.T
        nearest = negatives_masked(s_aa).argmax(dim=1)
        w = tf.one_hot(nearest, n).to(a.dtype) / distances(s_aa)
        scale = 1.0 / n
    return Components(g, w, torch.full_like(w, r), "same", scale)


def paradigm_gradient(c: Components, h: Tensor, hp: Tensor) -> Tensor:
    """``scale · GD_i Σ_{j≠i} W_ij (n_j − R_ij A hp_i)`` for every anchor, ``[N, d]``,
    projected onto the tangent plane at each normalised ``h_i``."""
    a, b = unit_views(h, hp)
    neg = b if c.negatives == "other" else a
    pos = b if c.ratio_matrix is None else b @ c.ratio_matrix.T
    w = c.weight.to(a.dtype)
    grad = w @ neg - (w * c.ratio.to(a.dtype)).sum(dim=1, keepdim=True) * pos
    grad = c.scale * c.gd.to(a.dtype)[:, None] * grad
    return grad - (grad * a).sum(dim=1, keepdim=True) * a
