"""The positive similarity and the negatives' log-sum-exps at a few scales, from SimCLR's
2N views in one ``autograd.Function`` (:class:`_ScaledTerms`): the statistics of HCL (two
scales) and DCLW (one), whose per-anchor losses are formed from them outside
(:func:`.infonce.hcl_from_statistics`, :func:`.infonce.dclw_from_statistics`). The torch
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
exponentials) and ``h_i`` at the positive; that matrix ``C`` gives
``∂u = C·u + Cᵀ·u`` (two products), then the normalisation's backward. Double backward: by
differentiating a recomputation, as in :mod:`._pair_terms`.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from ._common import unit_rows
from ._gram_grad import differentiating_backward
from ._pair_terms import _recomputed_grads, _unit, _unit_backward
from ._precision import no_autocast


class _ScaledTerms(torch.autograd.Function):
    """``(pos [2N], lse [K, 2N])`` from ``z1, z2 [N, d]`` at the ``K`` scales ``scales``
    (see the module docstring); ``exclude [2N, 2]``: each anchor's own and positive
    column, in that order."""

    @staticmethod
    def forward(  # type: ignore[override]
        ctx, z1: Tensor, z2: Tensor, scales: tuple[float, ...], exclude: Tensor
    ) -> tuple[Tensor, Tensor]:
        u, norm = _unit(torch.cat([z1, z2]))
        top = max(max(scales), 1.0)  # the shift; 1 when every scale is 0
        logits = torch.addmm(u.new_full((), -top), u, u.T, alpha=top)  # top·(s - 1)
        pos = logits.gather(1, exclude[:, 1:]).squeeze(1).div_(top).add_(1.0)
        kept, lse = [], []
        for scale in scales:
            e = (logits * (scale / top)).exp_().scatter_(1, exclude, 0.0)
            row_sum = e.sum(dim=1)
            kept += [e, row_sum]
            lse.append(row_sum.log().add_(scale))
        ctx.save_for_backward(z1, z2, exclude, u, norm, *kept)
        ctx.scales = scales
        ctx.set_materialize_grads(False)
        return pos, torch.stack(lse)

    @staticmethod
    def backward(ctx, grad_pos: Tensor | None, grad_lse: Tensor | None) -> tuple:  # type: ignore[override]
        z1, z2, exclude, u, norm, *kept = ctx.saved_tensors
        scales, n = ctx.scales, z1.shape[0]
        if differentiating_backward():

            def recompute(a: Tensor, b: Tensor) -> tuple[Tensor, Tensor]:
                return _recomputed(a, b, scales, exclude)

            grads = _recomputed_grads(ctx, (z1, z2), recompute, (grad_pos, grad_lse))
            return *grads, None, None
        coef = None
        if grad_lse is not None:
            for k, scale in enumerate(scales):
                e, row_sum = kept[2 * k], kept[2 * k + 1]
                r = (grad_lse[k] * scale / row_sum)[:, None]
                coef = e * r if coef is None else coef.addcmul_(e, r)
        if grad_pos is not None:
            coef = u.new_zeros(u.shape[0], u.shape[0]) if coef is None else coef
            coef.scatter_(1, exclude[:, 1:], grad_pos[:, None])  # C was 0 at the positive
        if coef is None:
            return None, None, None, None
        with no_autocast(u.device.type):  # a backward inside autocast keeps float32 products
            grad_u = torch.addmm(coef @ u, coef.T, u)
        return *_unit_backward(grad_u, u, norm, n), None, None


def _recomputed(
    z1: Tensor, z2: Tensor, scales: tuple[float, ...], exclude: Tensor
) -> tuple[Tensor, Tensor]:
    """:class:`_ScaledTerms` by plain differentiable operations."""
    u = unit_rows(torch.cat([z1, z2]))
    sim = u @ u.T
    pos = sim.gather(1, exclude[:, 1:]).squeeze(1)
    lse = [(scale * sim).scatter(1, exclude, -math.inf).logsumexp(dim=1) for scale in scales]
    return pos, torch.stack(lse)


def scaled_terms(
    z1: Tensor, z2: Tensor, scales: tuple[float, ...], exclude: Tensor
) -> tuple[Tensor, Tensor]:
    """``pos [2N]`` (each anchor's cosine with its positive) and ``lse [K, 2N]`` (the
    negatives' ``log Σ exp(c_k·s)`` at each scale ``c_k >= 0``) over the 2N layout of
    ``z1, z2 [N, d]`` (one dtype, no autocast; normalised inside); ``exclude [2N, 2]``:
    each anchor's own and positive column. Valid only where no row sum can underflow at
    the largest scale."""
    return _ScaledTerms.apply(z1, z2, tuple(float(c) for c in scales), exclude)
