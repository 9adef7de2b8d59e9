"""The Triton backend of :func:`~._negatives.gram_logsumexp` and
:func:`~._negatives.gram_softmax_mean` (imports ``triton``; reached through
:func:`._negatives._triton_gram` only).

Same arguments and values as the torch implementation: over the key matrix
``k = cat(keys or anchors, extra)`` ``[K, d]`` and each row's columns not in
``exclude [M, R]``,

* :func:`logsumexp`: ``lse_i = log Σ_j exp(σ·a_i·k_j)``;
* :func:`softmax_mean`: ``E_i = Σ_j p_ij·s_ij``, ``p_i = softmax_j(σ·s_ij)``, ``s_ij = a_i·k_j``.

Forward keeps only ``lse [M]`` (and ``E [M]``) for backward, which recomputes the
similarity tiles from the anchors and keys (see :mod:`._gram_kernels` for the equations
and the kernel layout). Extra memory is O(M + K·d) (the key matrix ``k``), whatever
``M`` and ``K``: the tiled mode's ``block_size`` of the torch implementation has nothing
left to trade here and is accepted and ignored. The statistics are returned in float32,
also for bfloat16/float16 inputs (the kernels accumulate in float32); gradients come back
in the inputs' dtype. Tiles: ``BLOCK_M x BLOCK_N`` = 32 x 64, 4 warps, 2 pipeline
stages, the fastest of ten configurations timed on an H200 at N = 4,096 pairs, d = 128,
with float32 and with bfloat16 operands (``benchmarks/gpu_tile_sweep.py``,
``docs/results/gpu/h200-2026-11-27-sweep.txt``; larger tiles lost, most likely to register
pressure with whole embeddings in a tile). float32 products run on tensor cores as three
TF32 products (``tf32x3``, about float32's accuracy; see :func:`_precision`) unless
``torch.backends.cuda.matmul.allow_tf32`` asks for one.

:func:`unit_logsumexp` and :func:`unit_softmax_mean` take un-normalised float32 rows that
hold bfloat16 values (embeddings the precision rule cast) and compute the same statistics
over their unit rows with one exact bfloat16 product forward and split-coefficient bfloat16
products backward (:class:`_UnitGramStatistic`): 5 bfloat16 products a call where the
float32 path takes 9 TF32 ones (docs/results/performance-log.md, "the Triton unit path").
:func:`logsumexp2` and :func:`unit_logsumexp2` give the log-sum-exps at two scales (HCL's)
from one pass over the tiles, forward and backward.
"""

from __future__ import annotations

import torch
import triton
from torch import Tensor

from ..._optional import triton_interpreted
from . import _gram_kernels as kernels
from ._gram_grad import differentiating_backward, gram_grads
from ._unit_rows import row_norms, unit_grad, unit_rows

NUM_WARPS, NUM_STAGES = 4, 2
TILES = (32, 64)  # (BLOCK_M, BLOCK_N) for every input dtype (see the module docstring)


def _precision(dtype: torch.dtype) -> str:
    """``tl.dot``'s input precision. float32: ``tf32x3`` (each operand split into a TF32
    high and low part, three tensor-core products), or plain ``tf32`` when torch's
    ``torch.backends.cuda.matmul.allow_tf32`` asks for it; half precision: Triton's
    default (the setting does not apply). Measured on an H200 at N = 4,096 pairs, d = 128
    (``docs/results/gpu/h200-2026-11-27b-sweep.txt``): ``tf32x3`` took 1.67 ms forward +
    backward against 22.7 ms for exact ``ieee`` (no tensor cores), with a relative error
    against float64 of 4.8e-7 (``ieee``: 1.4e-6)."""
    if dtype != torch.float32:
        return "tf32"
    return "tf32" if torch.backends.cuda.matmul.allow_tf32 else "tf32x3"


class _GramStatistic(torch.autograd.Function):
    """The row statistic ``mode`` (``"lse"``, ``"mean"`` or ``"mean_detached"``) of the
    softmax at each scale of ``scales`` over ``s = anchors·kᵀ`` (two scales: ``"lse"``
    only, both log-sum-exps from one pass over the tiles, HCL's); gradients for
    ``anchors`` and ``keys``.

    Double backward: exact. The kernels' backward is not differentiable, so a backward
    run with grad mode on (``create_graph=True``) returns :func:`._gram_grad.gram_grads`
    instead: differentiable torch operations on the saved inputs, which hold the whole
    ``[M, K]`` softmax in memory (the kernels' O(M) memory holds for first derivatives
    only). Not ``once_differentiable``: it raises no error when the incoming gradient
    needs none, nor under ``torch.autograd.grad(..., inputs=...)``, which never reaches
    its error node; the second derivative then silently lacks this statistic's part.
    """

    @staticmethod
    def forward(  # type: ignore[override]
        ctx,
        anchors: Tensor,
        keys: Tensor | None,
        extra: Tensor | None,
        exclude: Tensor | None,
        scales: tuple[float, ...],
        mode: str,
        tiles: tuple[int, int],
    ) -> Tensor | tuple[Tensor, Tensor]:
        a = anchors.contiguous()
        own = a if keys is None else keys.to(a.dtype).contiguous()
        k = own if extra is None else torch.cat([own, extra.to(a.dtype)]).contiguous()
        excl = None if exclude is None else exclude.contiguous()
        stats = _forward(ctx, a, k, excl, (None, None), scales, mode, tiles)
        ctx.save_for_backward(a, k, excl, *stats, anchors, keys)
        ctx.n_own, ctx.own_keys = own.shape[0], keys is None
        return _outputs(stats, scales, mode)

    @staticmethod
    def backward(ctx, *grads: Tensor | None) -> tuple:  # type: ignore[override]
        a, k, excl, lse, mean, lse2, anchors, keys = ctx.saved_tensors
        if differentiating_backward():
            extra = k[ctx.n_own :] if k.shape[0] > ctx.n_own else None
            need_keys = ctx.needs_input_grad[1]
            exact = _formula_grads(ctx, anchors, keys, extra, excl, grads, need_keys)
            return *exact, None, None, None, None, None
        grad_a, grad_k = _kernel_grads(
            ctx, (a, k, excl, None, None), (lse, mean, lse2), grads, ctx.needs_input_grad[:2]
        )
        return grad_a, grad_k, None, None, None, None, None


class _UnitGramStatistic(torch.autograd.Function):
    """:class:`_GramStatistic` over the unit rows of ``x [M, d]`` and of ``kx [K, d]``
    (``None``: ``x``'s own), both float32 tensors of bfloat16 values
    (:func:`._precision.holds_bf16_values`): ``s_ij = r_i·r'_j·(x_i·kx_j)`` with the
    inverse norms ``r`` (0 for a row of norm <= ``NORM_EPS``, whose unit row
    :func:`._unit_rows.unit_rows` makes 0), the products on bfloat16 tensor cores (exact in
    float32), no normalised copy formed. Backward: the kernels' gradients of the unit rows
    (split-coefficient products, :mod:`._gram_kernels`), then the normalisation's,
    ``∂x = (∂u - u·(u·∂u))/‖x‖``, in torch. Double backward: by differentiating the
    statistic's gradient formula (:func:`._gram_grad.gram_grads`) through ``unit_rows``."""

    @staticmethod
    def forward(  # type: ignore[override]
        ctx,
        x: Tensor,
        kx: Tensor | None,
        exclude: Tensor | None,
        scales: tuple[float, ...],
        mode: str,
        tiles: tuple[int, int],
    ) -> Tensor | tuple[Tensor, Tensor]:
        na = row_norms(x)  # [M, 1], inf for the zero rows
        nk = na if kx is None else row_norms(kx)
        ra = na.reciprocal().view(-1)  # 0 for the zero rows
        rk = ra if kx is None else nk.reciprocal().view(-1)
        a = x.to(torch.bfloat16).contiguous()  # exact: x holds bfloat16 values
        k = a if kx is None else kx.to(torch.bfloat16).contiguous()
        excl = None if exclude is None else exclude.contiguous()
        stats = _forward(ctx, a, k, excl, (ra, rk), scales, mode, tiles)
        ctx.save_for_backward(x, kx, a, k, excl, ra, rk, na, nk, *stats)
        ctx.n_own, ctx.own_keys = k.shape[0], kx is None
        return _outputs(stats, scales, mode)

    @staticmethod
    def backward(ctx, *grads: Tensor | None) -> tuple:  # type: ignore[override]
        x, kx, a, k, excl, ra, rk, na, nk, lse, mean, lse2 = ctx.saved_tensors
        needs = ctx.needs_input_grad[:2]
        if differentiating_backward():
            return *_unit_formula_grads(ctx, x, kx, excl, grads, needs), None, None, None, None
        stats = (lse, mean, lse2)
        grad_u, grad_ku = _kernel_grads(ctx, (a, k, excl, ra, rk), stats, grads, needs)
        grad_x = None if grad_u is None else unit_grad(grad_u, a.float() / na, na)
        grad_kx = None if grad_ku is None else unit_grad(grad_ku, k.float() / nk, nk)
        return grad_x, grad_kx, None, None, None, None


def _forward(
    ctx,
    a: Tensor,
    k: Tensor,
    excl: Tensor | None,
    row_scales: tuple[Tensor | None, Tensor | None],
    scales: tuple[float, ...],
    mode: str,
    tiles: tuple[int, int],
) -> tuple[Tensor, Tensor, Tensor]:
    """The forward kernel's ``(lse, mean, lse2)`` (float32 ``[M]``; those the mode does not
    fill are left empty); records the settings on ``ctx`` for backward."""
    (m, d), n = a.shape, k.shape[0]
    lse, mean, lse2 = (a.new_empty(m, dtype=torch.float32) for _ in range(3))
    two = len(scales) == 2
    if m > 0:
        kernels.forward_kernel[(triton.cdiv(m, tiles[0]),)](
            *(a, k, excl, *row_scales, lse, mean, lse2, m, n, d, scales[0], scales[-1]),
            **_meta(excl, tiles, a, row_scales[0] is not None, WITH_MEAN=mode != "lse", TWO=two),
        )
    ctx.scales, ctx.mode, ctx.tiles = scales, mode, tiles
    return lse, mean, lse2


def _outputs(
    stats: tuple[Tensor, Tensor, Tensor], scales: tuple[float, ...], mode: str
) -> Tensor | tuple[Tensor, Tensor]:
    """What the Functions return: the statistic, or both log-sum-exps for two scales."""
    lse, mean, lse2 = stats
    if len(scales) == 2:
        return lse, lse2
    return lse if mode == "lse" else mean


def _formula_grads(
    ctx, a: Tensor, k: Tensor | None, extra: Tensor | None, excl, grads: tuple, need_keys
) -> tuple[Tensor | None, Tensor | None]:
    """:func:`gram_grads` summed over the statistics whose gradient is given (recorded
    torch operations, for a backward differentiated in turn)."""
    total_a = total_k = None
    for scale, grad in zip(ctx.scales, grads, strict=True):
        if grad is None:
            continue
        ga, gk = gram_grads(a, k, extra, excl, scale, ctx.mode, grad, bool(need_keys))
        total_a = ga if total_a is None else total_a + ga
        if gk is not None:
            total_k = gk if total_k is None else total_k + gk
    if total_a is None:
        total_a = torch.zeros_like(a)
    return total_a, total_k


def _unit_formula_grads(
    ctx, x: Tensor, kx: Tensor | None, excl: Tensor | None, grads: tuple, needs: tuple
) -> tuple[Tensor | None, Tensor | None]:
    """``(∂x, ∂kx)`` as recorded torch operations (a backward differentiated in turn)."""
    u = unit_rows(x)
    ku = None if kx is None else unit_rows(kx)
    grad_u, grad_ku = _formula_grads(ctx, u, ku, None, excl, grads, needs[1])
    chains = [(u, x, grad_u)] if needs[0] else []
    if grad_ku is not None:
        chains.append((ku, kx, grad_ku))
    outputs, inputs, vectors = zip(*chains, strict=True) if chains else ((), (), ())
    found = list(torch.autograd.grad(outputs, inputs, vectors, create_graph=True)) if chains else []
    grad_x = found.pop(0) if needs[0] else None
    return grad_x, found.pop(0) if found else None


def _kernel_grads(
    ctx, tensors: tuple, stats: tuple, grads: tuple, needs: tuple[bool, bool]
) -> tuple[Tensor | None, Tensor | None]:
    """The backward kernels' ``(∂a, ∂k)`` (``None`` where not needed) for the incoming
    ``grads`` (one per statistic, ``None`` for one that gets none);
    ``tensors = (a, k, excl, ra, rk)``, the row scales ``None`` unless the unit path's
    (then ``∂a, ∂k`` are the scaled rows' gradients, in float32); ``stats = (lse, mean,
    lse2)``."""
    a, k, excl, ra, rk = tensors
    lse, mean, lse2 = stats
    scales, tiles, (m, d) = ctx.scales, ctx.tiles, a.shape
    g = [
        a.new_zeros(m, dtype=torch.float32) if t is None else t.float().contiguous() for t in grads
    ]
    scale = scales[0]
    if ctx.mode == "lse":  # ∂lse_i/∂s_ij = σ·p_ij
        u, v = g[0] * scale, None
    elif ctx.mode == "mean":  # ∂E_i/∂s_ij = p_ij·(1 + σ·(s_ij - E_i))
        u, v = g[0] * (1.0 - scale * mean), g[0] * scale
    else:  # detached weights: ∂E_i/∂s_ij = p_ij
        u, v = g[0], None
    two = len(scales) == 2
    u2 = g[1] * scales[1] if two else None
    args = (a, k, excl, ra, rk, lse, u, v, lse2 if two else None, u2)
    meta = _meta(excl, tiles, a, ra is not None, WITH_V=v is not None, TWO=two)
    out = torch.float32 if ra is not None else a.dtype
    grad_a = grad_k = None
    if needs[0]:  # own keys: their part as keys too, in the same kernel
        grad_a = torch.zeros(m, d, dtype=out, device=a.device)
        if m > 0:
            kernels.grad_anchors_kernel[(triton.cdiv(m, tiles[0]),)](
                *args, grad_a, m, k.shape[0], d, scale, scales[-1], OWN=ctx.own_keys, **meta
            )
    if needs[1]:
        grad_k = torch.zeros(ctx.n_own, d, dtype=out, device=a.device)
        if m > 0 and ctx.n_own > 0:
            kernels.grad_keys_kernel[(triton.cdiv(ctx.n_own, tiles[1]),)](
                *args, grad_k, m, ctx.n_own, d, scale, scales[-1], **meta
            )
    return grad_a, grad_k


def _stages(dtype: torch.dtype, d: int) -> int:
    """``num_stages``: :data:`NUM_STAGES`, but 1 for float32 rows wider than 128, whose
    double-buffered tiles need 246,272 bytes of shared memory in the keys' backward kernel
    (compiled for sm_90), more than an H100 block may take (232,448); one stage needs
    about 213 KiB."""
    return 1 if dtype == torch.float32 and kernels.block_d(d) > 128 else NUM_STAGES


def _meta(
    excl: Tensor | None, tiles: tuple[int, int], a: Tensor, scaled: bool, **flags: bool
) -> dict:
    """The compile-time arguments shared by the kernels; ``scaled``: the unit path's
    bfloat16 rows with row scales (``SCALED``)."""
    return {
        "R": 0 if excl is None else excl.shape[1],
        "SCALED": scaled,
        "BLOCK_M": tiles[0],
        "BLOCK_N": tiles[1],
        "BLOCK_D": kernels.block_d(a.shape[1]),
        "PRECISION": _precision(a.dtype),
        "UPCAST": a.dtype == torch.bfloat16 and triton_interpreted(),
        "num_warps": NUM_WARPS,
        "num_stages": _stages(a.dtype, a.shape[1]),
        **flags,
    }


def unit_logsumexp(
    x: Tensor,
    scale: float,
    keys: Tensor | None = None,
    exclude: Tensor | None = None,
    tiles: tuple[int, int] | None = None,
) -> Tensor:
    """:func:`logsumexp` of ``unit_rows(x)`` over ``unit_rows(keys)`` (or the anchors'
    own), for float32 ``x`` and ``keys`` that hold bfloat16 values: the similarity on
    bfloat16 tensor cores, exact (:class:`_UnitGramStatistic`)."""
    return _UnitGramStatistic.apply(x, keys, exclude, (float(scale),), "lse", _tiles(tiles))


def unit_softmax_mean(
    x: Tensor,
    scale: float,
    keys: Tensor | None = None,
    exclude: Tensor | None = None,
    detach_weights: bool = False,
    tiles: tuple[int, int] | None = None,
) -> Tensor:
    """:func:`softmax_mean` of ``unit_rows(x)`` as :func:`unit_logsumexp`."""
    mode = "mean_detached" if detach_weights else "mean"
    return _UnitGramStatistic.apply(x, keys, exclude, (float(scale),), mode, _tiles(tiles))


def _tiles(tiles: tuple[int, int] | None) -> tuple[int, int]:
    if tiles is None:
        return TILES
    if min(tiles) < 16 or any(t & (t - 1) for t in tiles):
        raise ValueError(f"tiles must be powers of two >= 16, got {tiles}")
    return tiles


def logsumexp(
    anchors: Tensor,
    scale: float,
    keys: Tensor | None = None,
    extra: Tensor | None = None,
    exclude: Tensor | None = None,
    tiles: tuple[int, int] | None = None,
) -> Tensor:
    """Fused ``lse [M]`` (float32), as :func:`~._negatives.gram_logsumexp`; ``extra`` is
    constant. ``tiles`` overrides ``(BLOCK_M, BLOCK_N)`` (powers of two >= 16)."""
    extra = None if extra is None else extra.detach()
    scales = (float(scale),)
    return _GramStatistic.apply(anchors, keys, extra, exclude, scales, "lse", _tiles(tiles))


def softmax_mean(
    anchors: Tensor,
    scale: float,
    keys: Tensor | None = None,
    extra: Tensor | None = None,
    exclude: Tensor | None = None,
    detach_weights: bool = False,
    tiles: tuple[int, int] | None = None,
) -> Tensor:
    """Fused softmax mean ``E [M]`` (float32), as :func:`~._negatives.gram_softmax_mean`."""
    extra = None if extra is None else extra.detach()
    mode = "mean_detached" if detach_weights else "mean"
    scales = (float(scale),)
    return _GramStatistic.apply(anchors, keys, extra, exclude, scales, mode, _tiles(tiles))


def logsumexp2(
    anchors: Tensor,
    scales: tuple[float, float],
    keys: Tensor | None = None,
    extra: Tensor | None = None,
    exclude: Tensor | None = None,
    tiles: tuple[int, int] | None = None,
) -> tuple[Tensor, Tensor]:
    """The log-sum-exps at two scales (HCL's) from one pass over the similarity tiles, as
    two calls of :func:`logsumexp` (and one backward pass for both)."""
    extra = None if extra is None else extra.detach()
    pair = (float(scales[0]), float(scales[1]))
    return _GramStatistic.apply(anchors, keys, extra, exclude, pair, "lse", _tiles(tiles))


def unit_logsumexp2(
    x: Tensor,
    scales: tuple[float, float],
    keys: Tensor | None = None,
    exclude: Tensor | None = None,
    tiles: tuple[int, int] | None = None,
) -> tuple[Tensor, Tensor]:
    """:func:`logsumexp2` over the unit rows of bfloat16 values, as :func:`unit_logsumexp`."""
    pair = (float(scales[0]), float(scales[1]))
    return _UnitGramStatistic.apply(x, keys, exclude, pair, "lse", _tiles(tiles))
