"""Adaptive multi-head contrastive learning (AMCL), at the similarity level.

Every similarity of head ``c`` carries its own temperature, and each temperature pays the
price ``Ω(τ) = (d'/2)·log τ + 1/τ`` of Eq. (4), which is the ``τ``-dependent part of the
negative log-density of a Gaussian with variance ``τ`` on the distance ``2 - 2·sim``
(Eq. 8, constant ``(d'/2)·log 2π`` dropped). The functions here work on *logits*

    ``ℓ(sim, τ) = sim/τ - β·Ω(τ)``,

the Gaussian log-likelihood of a pair up to a constant, so that the terms of Table 2 read:

* positive term ``-sim⁺/τ⁺ + β·Ω(τ⁺) = -ℓ⁺``;
* Eq. (2.1)/(2.4) with the top-κ average of §4.1: ``(1/κ)·Σ_{k ≤ κ} ℓ_{n_k}`` over the κ
  negatives of largest *similarity* ``n_1, …, n_κ`` (κ = 1 is the max of Eq. 2.1);
* Eq. (7)'s soft maximum: ``log Σ_n τ_n^{-d'/2}·exp((sim_n - 1)/τ_n) = logsumexp_n ℓ_n`` at
  β = 1 (the value the derivation uses).

Barlow Twins' row (Eq. 2.3) has no similarities and no logits: it divides the entries of
each head's cross-correlation matrix by per-channel-pair temperatures, see
:func:`amcl_barlow_twins`.

Shapes: ``pos_sim [C, M]`` (C heads, M anchors), ``neg_sim [C, M, K]``, temperatures of
the same shapes. ``-inf`` in ``neg_sim`` marks an absent negative, as elsewhere in
:mod:`contrastkit.losses.functional`.

Half-precision inputs are computed, and returned, in float32: at the paper's lower bound
τ = 1e-5, ``1/τ`` alone exceeds float16's range, so casting back would give ``inf``.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from ._common import (
    check_reduction,
    check_tensor,
    compute_dtype,
    float32_compute,
    reads_values,
)
from .infonce import dcl, info_nce

_NEGATIVES = ("topk", "softmax")


def _check_dim(dim: object) -> int:
    if not isinstance(dim, int) or isinstance(dim, bool) or dim < 1:
        raise ValueError(f"dim must be the projection dimension d', an int >= 1, got {dim!r}")
    return dim


def _check_weight(value: object, name: str) -> float:
    """A loss weight such as β or λ: a finite number >= 0."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    if not (value >= 0 and math.isfinite(value)):
        raise ValueError(f"{name} must be a finite number >= 0, got {value}")
    return float(value)


def _check_temperature(tau: Tensor, name: str) -> None:
    if not reads_values(tau):  # on a GPU: no host sync per call (see reads_values)
        return
    if not bool((tau > 0).all()) or not bool(torch.isfinite(tau).all()):
        low = tau.min().item()
        raise ValueError(f"{name} must hold finite temperatures > 0, got min {low:.3g}")


def amcl_omega(tau: Tensor, dim: int) -> Tensor:
    """Temperature regulariser of AMCL Eq. (4): ``Ω(τ) = (d'/2)·log τ + 1/τ``.

    Its derivative ``d'/(2τ) - 1/τ²`` vanishes at ``τ = 2/d'``, the minimum. Args: ``tau``
    any-shaped tensor of temperatures > 0; ``dim`` the projection dimension ``d'``.
    Returns a tensor of ``tau``'s shape, in float32 for half-precision ``tau`` (at
    τ = 1e-5, ``1/τ`` overflows float16).
    """
    if not isinstance(tau, Tensor) or not tau.is_floating_point():
        raise TypeError(f"tau must be a floating-point tensor, got {type(tau).__name__}")
    dim = _check_dim(dim)
    tau = tau.to(compute_dtype(tau))
    return 0.5 * dim * torch.log(tau) + torch.reciprocal(tau)


def amcl_runaway(neg_sim: Tensor, tau_neg: Tensor, *, dim: int, beta: float) -> Tensor:
    """Which negative pairs sit where descending the loss drives their temperature down to
    its lower bound: a bool tensor of ``neg_sim``'s shape.

    A negative enters the loss through ``ℓ(s, τ) = (s - β)/τ - (βd'/2)·log τ`` (Eq. 4 in
    the logit), with ``∂ℓ/∂τ = ((β - s) - (βd'/2)·τ)/τ²``. Where that is positive,
    ``2(β - s) > β·d'·τ``, descending the loss lowers ``τ⁻`` and so lowers ``ℓ`` further,
    down to the temperature's lower bound (1e-5 in the paper), where the top-κ term is of
    order ``(s - β)/1e-5``. Above ``τ_c = 2(β - s)/(β·d')`` (about ``2/d'`` at β = 10) the
    same gradient raises ``τ⁻`` instead. Shapes: ``neg_sim`` and ``tau_neg`` alike (any);
    absent negatives (``-inf``) are ``False``.
    """
    dim, beta = _check_dim(dim), _check_weight(beta, "beta")
    return (2 * (beta - neg_sim) > beta * dim * tau_neg) & torch.isfinite(neg_sim)


def _logits(sim: Tensor, tau: Tensor, dim: int, beta: float) -> Tensor:
    """``sim/τ - β·Ω(τ)`` (see the module docstring)."""
    return sim / tau - beta * amcl_omega(tau, dim)


def _check_contrast_inputs(
    pos_sim: object, neg_sim: object, tau_pos: object, tau_neg: object
) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    pos = check_tensor(pos_sim, "pos_sim", 2, "[C, M]")
    neg = check_tensor(neg_sim, "neg_sim", 3, "[C, M, K]")
    if neg.shape[:2] != pos.shape or neg.shape[2] < 1:
        raise ValueError(
            f"neg_sim must have shape [C, M, K] with [C, M] = {tuple(pos.shape)} and K >= 1, "
            f"got {tuple(neg.shape)}"
        )
    t_pos = check_tensor(tau_pos, "tau_pos", 2, "[C, M]")
    t_neg = check_tensor(tau_neg, "tau_neg", 3, "[C, M, K]")
    pairs = (("tau_pos", t_pos, "pos_sim", pos.shape), ("tau_neg", t_neg, "neg_sim", neg.shape))
    for name, t, ref, shape in pairs:
        if t.shape != shape:
            raise ValueError(f"{name} must have {ref}'s shape {tuple(shape)}, got {tuple(t.shape)}")
    _check_temperature(t_pos, "tau_pos")
    _check_temperature(t_neg, "tau_neg")
    return pos, neg, t_pos, t_neg


def _reduce_heads(per_head: Tensor, reduction: str) -> Tensor:
    """``[C, M]`` → sum over heads, then mean/sum over anchors (or ``[C, M]`` as is)."""
    if reduction == "none":
        return per_head
    per_anchor = per_head.sum(dim=0)
    return per_anchor.mean() if reduction == "mean" else per_anchor.sum()


@float32_compute
def amcl_contrast(
    pos_sim: Tensor,
    neg_sim: Tensor,
    tau_pos: Tensor,
    tau_neg: Tensor,
    *,
    dim: int,
    beta: float = 10.0,
    negatives: str = "topk",
    kappa: int = 100,
    include_positive: bool = False,
    reduction: str = "mean",
) -> Tensor:
    """Multi-head AMCL loss with pair-wise temperatures, Eq. (3) in the forms of Table 2.

    Per head ``c`` and anchor ``i`` the loss is ``-ℓ⁺ + T_neg`` with
    ``ℓ = sim/τ - β·Ω(τ)`` (Eq. 4) and the negative term ``T_neg``:

    * ``negatives="topk"``: ``(1/κ)·Σ_k ℓ_{n_k}`` over the κ candidates of largest similarity
      (§4.1's TopMax-κ; κ = 1 is Eq. 2.1/2.4's max). κ is clamped, row by row, to the number
      of present candidates, so κ >= K uses every negative. The regulariser of the selected
      negatives is averaged with the same 1/κ as their similarities (for κ = 1 this is
      exactly Eq. 2.1's ``-β·Ω(τ_{in*})``; the paper's extracted formula for κ > 1 is
      garbled, and the average keeps each selected pair's ``sim/τ - βΩ(τ)`` balanced as in
      Eq. 5).
    * ``negatives="softmax"``: ``logsumexp_n ℓ_n``, which at β = 1 is Eq. (7)'s
      ``log Σ_n τ_n^{-d'/2}·exp((sim_n - 1)/τ_n)``; β scales the regulariser inside the sum
      as it does everywhere else, and this branch reuses :func:`dcl` / :func:`info_nce` on
      the logits at temperature 1.

    ``include_positive=True`` is Eq. (2.4) (InfoNCE, Eq. 9): the positive, with its own
    ``(sim⁺, τ⁺)``, joins the candidate set of the negative term; ``False`` is Eq. (2.1)
    (NT-Xent as the paper writes Eq. 1.1, positive not in the denominator). With one
    constant temperature the regularisers cancel; with ``negatives="softmax"`` the loss
    then equals :func:`dcl` / :func:`info_nce` at that temperature (the paper's §4.3
    reduction), with top-κ it is the mean of the κ largest negative similarities minus the
    positive one, over that temperature.

    Args:
        pos_sim: ``[C, M]`` cosine similarity of each anchor with its positive, per head.
        neg_sim: ``[C, M, K]`` similarities with K negatives; ``-inf`` = absent.
        tau_pos: ``[C, M]`` positive temperatures τ⁺ > 0.
        tau_neg: ``[C, M, K]`` negative temperatures τ⁻ > 0 (ignored where absent).
        dim: ``d'``, the projection dimension in Ω (128 for SimCLR's head).
        beta: β >= 0. Default 10, the top of the paper's search range 1e-5…10 (§5.1): in
            τ⁺ the positive term ``-s/τ + βΩ(τ)`` is minimised at ``τ* = (2/d')(1 - s/β)``,
            inside (0, ∞) only when β > s, i.e. β > 1 for cosines near 1; at β = 10,
            ``τ* ∈ [0.9, 1.1]·2/d'``. With β = 1 and β = 1e-5 we measured every learned
            temperature collapsing to the lower bound (docs/amcl.md).
        negatives: ``"topk"`` (the paper's best, Fig. 4) or ``"softmax"`` (Eq. 7).
        kappa: κ >= 1 for ``"topk"``; 100 is Fig. 4's best on STL-10 (100 and 150 tie).
        include_positive: Eq. (2.4) instead of Eq. (2.1).
        reduction: ``"mean"`` (sum over heads, mean over anchors, as Eq. 3 sums over
            heads), ``"sum"`` (over both) or ``"none"`` (``[C, M]``).
    """
    pos, neg, t_pos, t_neg = _check_contrast_inputs(pos_sim, neg_sim, tau_pos, tau_neg)
    dim, beta = _check_dim(dim), _check_weight(beta, "beta")
    if negatives not in _NEGATIVES:
        raise ValueError(f"negatives must be one of {_NEGATIVES}, got {negatives!r}")
    if not isinstance(kappa, int) or isinstance(kappa, bool) or kappa < 1:
        raise ValueError(f"kappa must be an int >= 1, got {kappa!r}")
    check_reduction(reduction)
    present = torch.isfinite(neg)
    if not include_positive and reads_values(neg) and not bool(present.any(dim=2).all()):
        raise ValueError("neg_sim must hold at least one finite negative for every anchor")

    dtype = compute_dtype(pos, neg)
    pos, neg, t_pos, t_neg = (x.to(dtype) for x in (pos, neg, t_pos, t_neg))
    l_pos = _logits(pos, t_pos, dim, beta)
    # absent negatives are computed at sim 0 and then masked, so no inf reaches a gradient
    l_neg = _logits(torch.where(present, neg, torch.zeros_like(neg)), t_neg, dim, beta)
    l_neg = l_neg.masked_fill(~present, float("-inf"))

    if negatives == "softmax":
        c, m, k = neg.shape
        base = info_nce if include_positive else dcl
        per_head = base(l_pos.reshape(c * m), l_neg.reshape(c * m, k), 1.0, "none").view(c, m)
    else:
        sims, logits, keep = neg, l_neg, present
        if include_positive:
            sims = torch.cat([pos[..., None], neg], dim=2)
            logits = torch.cat([l_pos[..., None], l_neg], dim=2)
            keep = torch.cat([torch.ones_like(present[..., :1]), present], dim=2)
        idx = sims.topk(min(kappa, sims.shape[2]), dim=2).indices  # absent (-inf) sort last
        chosen = keep.gather(2, idx)
        picked = logits.gather(2, idx).masked_fill(~chosen, 0.0)
        per_head = picked.sum(dim=2) / chosen.sum(dim=2) - l_pos
    return _reduce_heads(per_head, reduction)


@float32_compute
def amcl_simsiam(
    sim_a: Tensor,
    sim_b: Tensor,
    tau_a: Tensor,
    tau_b: Tensor,
    *,
    dim: int,
    beta: float = 10.0,
    reduction: str = "mean",
) -> Tensor:
    """Multi-head symmetric negative cosine with adaptive temperatures, AMCL Eq. (2.2).

    Per head and sample: ``-sim_a/(2τ_a) - sim_b/(2τ_b) + β·Ω(τ_a) + β·Ω(τ_b)``, where
    ``sim_a = cos(p_i, sg[z_i⁺])`` and ``sim_b = cos(p_i⁺, sg[z_i])`` (predictor outputs
    against the stop-gradient projections of the other view; the caller detaches). The
    1/2 weights the similarity only, as in Eq. (2.2); there are no negatives.

    Args:
        sim_a, sim_b: ``[C, M]`` cosine similarities of the two directions.
        tau_a, tau_b: ``[C, M]`` their temperatures > 0.
        dim, beta, reduction: as in :func:`amcl_contrast`.
    """
    a = check_tensor(sim_a, "sim_a", 2, "[C, M]")
    for name, x in (("sim_b", sim_b), ("tau_a", tau_a), ("tau_b", tau_b)):
        check_tensor(x, name, 2, "[C, M]")
        if x.shape != a.shape:
            raise ValueError(f"{name} must match sim_a {tuple(a.shape)}, got {tuple(x.shape)}")
    _check_temperature(tau_a, "tau_a")
    _check_temperature(tau_b, "tau_b")
    dim, beta = _check_dim(dim), _check_weight(beta, "beta")
    check_reduction(reduction)
    dtype = compute_dtype(a, sim_b)
    terms = [
        -0.5 * s.to(dtype) / t.to(dtype) + beta * amcl_omega(t.to(dtype), dim)
        for s, t in ((a, tau_a), (sim_b, tau_b))
    ]
    return _reduce_heads(terms[0] + terms[1], reduction)


def _check_square_stack(corr: object, tau: object) -> tuple[Tensor, Tensor]:
    c = check_tensor(corr, "corr", 3, "[C, d', d']")
    if c.shape[1] != c.shape[2] or c.shape[1] < 2:
        raise ValueError(f"corr must have shape [C, d', d'] with d' >= 2, got {tuple(c.shape)}")
    t = check_tensor(tau, "tau", 3, "[C, d', d']")
    if t.shape != c.shape:
        raise ValueError(f"tau must have corr's shape {tuple(c.shape)}, got {tuple(t.shape)}")
    _check_temperature(t, "tau")
    return c, t


@float32_compute
def amcl_barlow_twins(
    corr: Tensor,
    tau: Tensor,
    *,
    dim: int,
    lambd: float = 5e-3,
    beta: float = 0.0,
) -> Tensor:
    """Multi-head Barlow Twins with channel-pair temperatures, AMCL Eq. (2.3) plus Eq. (3)'s Ω.

    For every head ``c``, with ``C = corr[c]`` and ``τ = tau[c]`` (diagonal ``τ⁺_l``,
    off-diagonal ``τ⁻_lm``)::

        Σ_l (1 - C_ll/τ⁺_l)²  +  λ·Σ_l Σ_{m≠l} C_lm²/τ⁻_lm
          + β·Σ_l [ Ω(τ⁺_l) - mean_{m≠l} Ω(τ⁻_lm) ]

    summed over heads, as Eq. (2.3) sums over ``c``. The first two terms are Table 2's row
    (2.3) verbatim; that row prints no regulariser, so ``beta=0`` reproduces it exactly. The
    third term is the general form Eq. (3), ``+βΩ(τ⁺) - βΩ(τ⁻)``, applied with the channels
    in the role of anchors: channel ``l`` has one positive temperature (its own pair across
    the two views) and ``d' - 1`` negative ones, whose Ω is averaged, just as the top-κ form
    of :func:`amcl_contrast` averages over its selected negatives.

    Caveat (tested): ``(1 - C/τ)²`` is smallest at ``C = τ``, not at ``C = 1``. A learned τ⁺
    can therefore *absorb* the invariance term (at ``beta=0``, moving τ⁺ onto ``C_ll``
    lowers the loss without changing the embeddings, and ``∂L/∂C_ll = -2(1 - C_ll/τ)/τ``
    vanishes there), and with ``beta > 0`` Ω pulls τ⁺ toward ``2/d'``, which in turn pulls
    ``C_ll`` toward ``2/d'`` instead of 1. With one constant temperature ``t`` the Ω terms
    cancel and the loss is Barlow Twins with targets ``C_ll = t``; ``t = 1`` is
    :func:`barlow_twins` per head.

    Args:
        corr: ``[C, d', d']`` cross-correlation of the batch-standardised projections of the
            two views, one matrix per head (``d' >= 2``).
        tau: ``[C, d', d']`` temperatures > 0: ``τ⁺`` on the diagonal, ``τ⁻`` off it.
        dim: ``d'`` in Ω (Eq. 4); normally ``corr.shape[-1]``.
        lambd: λ >= 0, the off-diagonal weight; 5e-3 (§5.1, as Zbontar et al.).
        beta: β >= 0; 0: Table 2's row as printed, and the least harmful value in our
            short runs (β = 0.01, 1 and 10 all trained worse; docs/amcl_bases.md).

    Returns a scalar, in float32 for half-precision inputs (at τ = 1e-5, ``1/τ`` and Ω
    exceed float16's range).
    """
    c, t = _check_square_stack(corr, tau)
    dim = _check_dim(dim)
    lambd, beta = _check_weight(lambd, "lambd"), _check_weight(beta, "beta")
    dtype = compute_dtype(c, t)
    c, t = c.to(dtype), t.to(dtype)
    width = c.shape[-1]
    diagonal = torch.eye(width, dtype=torch.bool, device=c.device)
    ratio = c / t
    invariance = (1.0 - torch.diagonal(ratio, dim1=1, dim2=2)).pow(2).sum()
    redundancy = (c * ratio).masked_fill(diagonal, 0.0).sum()
    omega = amcl_omega(t, dim)
    omega_pos = torch.diagonal(omega, dim1=1, dim2=2).sum()
    omega_neg = omega.masked_fill(diagonal, 0.0).sum() / (width - 1)
    return invariance + lambd * redundancy + beta * (omega_pos - omega_neg)
