"""The positive similarity and the negatives' log-sum-exps at a few scales, from SimCLR's
2N views in one ``autograd.Function`` (:class:`_ScaledTerms`): the statistics of HCL (two
scales) and DCLW (one), whose per-anchor losses are formed from them outside
(:func:`.infonce.hcl_parts`, :func:`.infonce.dclw_from_statistics`). The torch
backend's path for those losses where it applies (issue #38; the same reasons as
:mod:`._pair_terms`).

For views ``z1, z2 [N, d]``, ``u`` the unit rows of ``cat(z1, z2)``, ``s = u·uᵀ``, anchor
``i``'s positive ``π(i) = (i + N) mod 2N`` and its negatives the rows ``j ∉ {i, π(i)}``:
``pos_i = s_iπ(i)`` and, for each scale ``c_k >= 0``,
``lse_ki = log Σ_{j ∉ {i, π(i)}} exp(c_k·s_ij)``.

Numerics. One matrix product gives ``L = c·(s - 1)`` at the largest scale ``c``; scale
``c_k`` takes ``(c_k/c)·L``, so no exponential overflows and, for ``2c < log(eps/tiny)``,
no row sum underflows (callers check it with :func:`._gram_torch.needs_guard`). A scale of
0 gives ``log`` of the number of negatives.

Backward in closed form: with upstream ``g_k`` (of ``lse_k``) and ``h`` (of ``pos``),
``∂L/∂s_ij = Σ_k g_ki·c_k·e_kij/Σ_j e_kij`` at the negatives (``e_k`` the kept
exponentials) and ``h_i`` at the positive. The negatives' matrix ``C`` gives
``C·u + Cᵀ·u`` (two products; with one scale the row factors go onto ``u``, so no
``[2N, 2N]`` buffer is made), the positives ``(h_i + h_π(i))·u_π(i)``; then the
normalisation's backward. Double backward: by
differentiating a recomputation, as in :mod:`._pair_terms`.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import Tensor

from ._gram_grad import differentiating_backward
from ._pair_terms import _recomputed_grads, _unit_backward
from ._precision import no_autocast
from ._unit_rows import unit_and_norm, unit_rows
from .infonce import hcl_parts


class _ScaledTerms(torch.autograd.Function):
    """``(pos [2N], lse_1 [2N], ..., lse_K [2N])`` from ``z1, z2 [N, d]`` at the ``K``
    scales ``scales`` (see the module docstring); ``exclude [2N, 2]``: each anchor's own
    and positive column, in that order. One output per scale, not a stacked ``[K, 2N]``:
    a caller's indexing of a stack would add a stack forward and a zero-filled gradient
    per index backward (four kernels for HCL)."""

    @staticmethod
    def forward(  # type: ignore[override]
        ctx, z1: Tensor, z2: Tensor, scales: tuple[float, ...], exclude: Tensor
    ) -> tuple[Tensor, ...]:
        u, norm = unit_and_norm(torch.cat([z1, z2]))
        top = max(max(scales), 1.0)  # the shift; 1 when every scale is 0
        logits = torch.addmm(u.new_full((), -top), u, u.T, alpha=top)  # top·(s - 1)
        pos = logits.gather(1, exclude[:, 1:]).squeeze(1).div_(top).add_(1.0)
        kept, lse, last = [], [], len(scales) - 1
        for k, scale in enumerate(scales):  # the last one in place: one [2N, 2N] buffer less
            ratio = scale / top
            e = logits * ratio if k != last else logits if ratio == 1.0 else logits.mul_(ratio)
            e = e.exp_().scatter_(1, exclude, 0.0)
            row_sum = e.sum(dim=1)
            kept += [e, row_sum]
            lse.append(row_sum.log().add_(scale))
        ctx.save_for_backward(z1, z2, exclude, u, norm, *kept)
        ctx.scales = scales
        ctx.set_materialize_grads(False)
        return pos, *lse

    @staticmethod
    def backward(ctx, grad_pos: Tensor | None, *grad_lse: Tensor | None) -> tuple:  # type: ignore[override]
        z1, z2, exclude, u, norm, *kept = ctx.saved_tensors
        scales, n = ctx.scales, z1.shape[0]
        if differentiating_backward():
            upstream = (grad_pos, *grad_lse)
            grads = _recomputed_grads(ctx, (z1, z2), upstream, _recomputed, scales, exclude)
            return *grads, None, None
        if grad_pos is None and all(g is None for g in grad_lse):
            return None, None, None, None
        grad_u = None
        if any(g is not None for g in grad_lse):
            with no_autocast(u.device.type):  # inside autocast, keep float32 products
                grad_u = _negatives_grad(kept, scales, grad_lse, u)
        if grad_pos is not None:  # ∂u_m += (h_m + h_π(m))·u_π(m); π swaps the halves
            h, partner = (grad_pos + grad_pos.roll(n))[:, None], u.roll(n, 0)
            grad_u = h * partner if grad_u is None else grad_u.addcmul_(h, partner)
        return *_unit_backward(grad_u, u, norm, n), None, None


def _negatives_grad(
    kept: list[Tensor], scales: tuple[float, ...], grad_lse: tuple[Tensor | None, ...], u: Tensor
) -> Tensor:
    """``C·u + Cᵀ·u`` for the negatives' coefficients ``C = Σ_k diag(r_k)·e_k``,
    ``r_k = g_k·c_k/Σ_j e_kj`` over the scales whose ``g_k`` is given: with one as
    ``diag(r)·e·u + eᵀ·diag(r)·u`` (no ``[2N, 2N]`` buffer), with several through ``C``
    (two products in all)."""
    terms = [
        (kept[2 * k], (g * c / kept[2 * k + 1])[:, None])
        for k, (g, c) in enumerate(zip(grad_lse, scales, strict=True))
        if g is not None
    ]
    if len(terms) == 1:
        e, r = terms[0]
        return torch.addmm(r * (e @ u), e.T, r * u)
    coef = terms[0][0] * terms[0][1]
    for e, r in terms[1:]:
        coef.addcmul_(e, r)
    return torch.addmm(coef @ u, coef.T, u)


def _recomputed(
    z1: Tensor, z2: Tensor, scales: tuple[float, ...], exclude: Tensor
) -> tuple[Tensor, ...]:
    """:class:`_ScaledTerms` by plain differentiable operations."""
    u = unit_rows(torch.cat([z1, z2]))
    sim = u @ u.T
    pos = sim.gather(1, exclude[:, 1:]).squeeze(1)
    lse = [(scale * sim).scatter(1, exclude, -math.inf).logsumexp(dim=1) for scale in scales]
    return pos, *lse


def scaled_terms(
    z1: Tensor, z2: Tensor, scales: tuple[float, ...], exclude: Tensor
) -> tuple[Tensor, tuple[Tensor, ...]]:
    """``pos [2N]`` (each anchor's cosine with its positive) and the ``K`` log-sum-exps
    ``lse_k [2N]`` (the negatives' ``log Σ exp(c_k·s)`` at each scale ``c_k >= 0``) over
    the 2N layout of ``z1, z2 [N, d]`` (one dtype, no autocast; normalised inside);
    ``exclude [2N, 2]``: each anchor's own and positive column. Valid only where no row
    sum can underflow at the largest scale."""
    pos, *lse = _ScaledTerms.apply(z1, z2, tuple(float(c) for c in scales), exclude)
    return pos, tuple(lse)


class _HclAnchors(torch.autograd.Function):
    """HCL's per-anchor loss ``[M]`` from ``pos, lse_hard, lse_soft [M]`` and a constant
    count: :func:`.infonce.hcl_parts`'s loss, its backward in closed form.

    With ``ℓ = softplus(log N_g - p)``, ``q = σ(log N_g - p)``, ``D`` the debiased estimate
    ``log(R - τ⁺K·e^p)``, ``R`` the reweighted sum and ``t = log(τ⁺K·e^p/R)``:
    ``∂D/∂log R = a = -1/expm1(t)`` and ``∂D/∂p = -a·e^t`` where ``D`` lies above its
    floor (0 elsewhere; ``a = 1``, no ``t``, for τ⁺ = 0), so ``∂ℓ/∂lse_hard = q·a =
    -∂ℓ/∂lse_soft`` and ``∂ℓ/∂p = -q - q·a·e^t`` (``p = pos/τ``). About a third of the
    kernels autograd launches through the formula. Double backward: by differentiating
    the formula."""

    @staticmethod
    def forward(  # type: ignore[override]
        ctx, pos: Tensor, lse_hard: Tensor, lse_soft: Tensor, count: int, temperature: float,
        tau_plus: float,
    ) -> Tensor:  # fmt: skip
        parts = hcl_parts(pos, lse_hard, lse_soft, count, temperature, tau_plus)
        q = (parts.log_ng - parts.both).exp_()  # ∂ℓ/∂log N_g = σ(log N_g - p)
        above = parts.debiased >= parts.floor  # where the floor passes the gradient
        ctx.save_for_backward(pos, lse_hard, lse_soft, q, above, parts.t)
        ctx.args = (count, temperature, tau_plus)
        return parts.loss

    @staticmethod
    def backward(ctx, grad: Tensor) -> tuple:  # type: ignore[override]
        pos, lse_hard, lse_soft, q, above, t = ctx.saved_tensors
        temperature = ctx.args[1]
        if differentiating_backward():
            inputs, upstream = (pos, lse_hard, lse_soft), (grad,)
            grads = _recomputed_grads(ctx, inputs, upstream, _hcl_loss, *ctx.args)
            return *grads, None, None, None
        gq = grad * q
        g_lse = gq * above
        if t is None:
            g_p = -gq
        else:
            g_lse = g_lse / t.expm1().neg_()
            g_p = torch.addcmul(gq, g_lse, t.exp()).neg_()
        return g_p / temperature, g_lse, -g_lse, None, None, None


def _hcl_loss(*args: Any) -> Tensor:
    """:func:`.infonce.hcl_parts`'s loss alone (double backward's recomputation)."""
    return hcl_parts(*args).loss


def hcl_anchors(
    pos: Tensor, lse_hard: Tensor, lse_soft: Tensor, count: int, temperature: float,
    tau_plus: float,
) -> Tensor:  # fmt: skip
    """:func:`.infonce.hcl_parts`'s loss for a constant ``count`` with a closed-form
    backward (:class:`_HclAnchors`): the fused HCL path's per-anchor loss."""
    return _HclAnchors.apply(pos, lse_hard, lse_soft, count, temperature, tau_plus)
