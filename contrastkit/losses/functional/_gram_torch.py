"""The torch implementation of the fused Gram statistics of :mod:`._negatives`: matrix
products and elementwise passes, with hand-written backward passes (issue #38's
``backend="torch"``; :mod:`._gram_triton` is the Triton one).

For anchors ``a [M, d]`` and keys ``k = cat(keys or anchors, extra) [K, d]``, over the
columns not in ``exclude [M, r]``:

* :func:`logsumexp`: ``lse_i = log Σ_j exp(σ·a_i·k_j)``;
* :func:`softmax_mean`: ``E_i = Σ_j p_ij·s_ij``, ``p_i = softmax_j(σ·s_ij)``, ``s_ij = a_i·k_j``.

One matrix product forward; backward forms the softmax gradient once and takes two
products. Without ``block`` the ``[M, K]`` exponentials are kept for backward; with
``block`` rows go ``block`` at a time and are recomputed in backward (O(block·K) memory).
Neither synchronises the host with the device: no value decides a branch. A backward
that is itself differentiated (``create_graph=True``) runs :func:`._gram_grad.gram_grads`
instead, so second derivatives are exact (see :mod:`._gram_grad`).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import torch
from torch import Tensor

from ._gram_grad import differentiating_backward, gram_grads
from ._precision import no_autocast

Scale = float | Tensor  # σ: a number, or a detached 0-d tensor (MACL's adaptive 1/τ_a)


def _shifted_logits(anchors: Tensor, keys: Tensor, scale: Scale, offset: Tensor) -> Tensor:
    """``scale·a·kᵀ + offset`` (``offset = -shift``: ``[rows]``, or the 0-d bound shared by
    every row), the offset folded into the matrix product as its bias (a tensor ``scale``
    multiplies the ``[rows, d]`` anchors: ``addmm`` takes numbers only)."""
    bias = offset[:, None] if offset.dim() else offset
    if isinstance(scale, Tensor):
        return torch.addmm(bias, anchors * scale, keys.T)
    return torch.addmm(bias, anchors, keys.T, alpha=scale)


def _keys_and_offset(
    anchors: Tensor, keys: Tensor | None, extra: Tensor | None, scale: Scale, guard: bool
) -> tuple[Tensor, Tensor]:
    """The key matrix ``cat(keys or anchors, extra)`` and the offset ``-shift`` of the
    logits, initially minus the bound ``scale·max‖a‖·max‖k‖`` on every logit (so ``exp``
    never overflows): a 0-d tensor, or with ``guard`` one per row (``[M]``, which the guard
    updates in place). Its negation is exact, so both give the same values."""
    own = anchors if keys is None else keys
    k = own if extra is None else torch.cat([own, extra])
    largest = torch.linalg.vector_norm(anchors, dim=1).max()
    other = largest if k is anchors else torch.linalg.vector_norm(k, dim=1).max()
    offset = -scale * largest * other
    return k, offset.expand(anchors.shape[0]).clone() if guard else offset


def _blocks(m: int, block: int | None) -> list[slice]:
    """The row ranges of ``m`` rows, ``block`` at a time (all at once for ``None``)."""
    step = m if block is None else block
    return [slice(r0, min(m, r0 + step)) for r0 in range(0, m, step)]


def _rows(offset: Tensor, rows: slice) -> Tensor:
    """The offsets of ``rows``: a slice of a per-row offset, the shared 0-d one as is."""
    return offset[rows] if offset.dim() else offset


def _joined(parts: list[Tensor]) -> Tensor:
    """The per-row results of the blocks, in row order (no copy for a single block)."""
    return parts[0] if len(parts) == 1 else torch.cat(parts)


def _exp_block(
    logits: Tensor,
    offset: Tensor,
    rows: slice,
    exclude: Tensor | None,
    guard: bool,
    keep_logits: bool = False,
) -> tuple[Tensor, Tensor]:
    """``exp(logits)`` with excluded columns zeroed, and its row sums; in place unless
    ``keep_logits`` (then the kept ``logits`` hold 0 at excluded columns).

    With ``guard``, a row whose largest present logit ``m_i`` is so low that its sum
    could underflow (``m_i < log(tiny/eps)``) is shifted by ``m_i`` (and ``offset`` with
    it, in place); every other row is shifted by exactly 0, so its values are those of
    the unguarded path. No host synchronisation either way: the test is a ``where``."""
    if guard:
        if exclude is not None:
            logits.scatter_(1, exclude[rows], float("-inf"))
        top = logits.amax(dim=1)
        low = (top < math.log(_tiny_over_eps(logits.dtype))) & top.isfinite()
        lift = torch.where(low, top, 0.0)
        logits.sub_(lift[:, None])
        offset[rows] -= lift
        e = logits.exp() if keep_logits else logits.exp_()
        if keep_logits and exclude is not None:
            logits.scatter_(1, exclude[rows], 0.0)
    else:
        e = logits.exp() if keep_logits else logits.exp_()
        if exclude is not None:
            e.scatter_(1, exclude[rows], 0.0)
    return e, e.sum(dim=1)


def _tiny_over_eps(dtype: torch.dtype) -> float:
    """The smallest row sum kept as is: ``tiny/eps`` of ``dtype`` (float32: 1e-31)."""
    ratio = _TINY_OVER_EPS.get(dtype)  # torch.finfo twice at every call is not free
    return torch.finfo(dtype).tiny / torch.finfo(dtype).eps if ratio is None else ratio


_TINY_OVER_EPS = {
    dtype: torch.finfo(dtype).tiny / torch.finfo(dtype).eps
    for dtype in (torch.float16, torch.bfloat16, torch.float32, torch.float64)
}


def needs_guard(scale: Scale, unit: bool, dtype: torch.dtype) -> bool:
    """Whether a row sum could underflow: always, unless the rows are unit vectors (all
    logits then lie within ``2·scale`` of the shift) and ``2·scale`` stays below
    ``log(eps/tiny)`` (71 in float32, e.g. every temperature above 0.028); a tensor
    ``scale`` is not read (that would synchronise), so it is guarded."""
    if isinstance(scale, Tensor):
        return True
    return not (unit and 2.0 * scale * (1.0 + 1e-3) < -math.log(_tiny_over_eps(dtype)))


def _autocast_off(backward: Callable[..., tuple]) -> Callable[..., tuple]:
    """``backward`` run with autocast off, as ``torch.amp.custom_bwd`` runs it for a forward
    that ran with autocast off: a backward called inside an autocast region (``loss.backward()``
    within ``torch.autocast``) would otherwise take its matrix products in half precision."""

    @functools.wraps(backward)
    def wrapped(ctx: torch.autograd.function.FunctionCtx, grad: Tensor) -> tuple:
        with no_autocast(grad.device.type):
            return backward(ctx, grad)

    return wrapped


class _GramLogSumExp(torch.autograd.Function):
    """``lse_i = log Σ_{j ∉ exclude_i} exp(s·a_i·k_j)`` with ``k = cat(keys or anchors, extra)``.

    A constant shift ``s·max‖a‖·max‖k‖`` bounds every logit, so ``exp`` never overflows;
    with ``guard`` (:func:`needs_guard`) a row whose sum could underflow is shifted by its
    own maximum. Without ``block`` the exponentials are kept for backward; with ``block``
    rows are processed ``block`` at a time and recomputed in backward, so extra memory is
    O(block·K).

    Double backward: exact. A backward run with grad mode on (``create_graph=True``)
    returns :func:`._gram_grad.gram_grads`, differentiable operations on the saved inputs
    (the whole ``[M, K]`` softmax, whatever ``block``); otherwise the fast path below.
    """

    @staticmethod
    def forward(  # type: ignore[override]
        ctx,
        anchors: Tensor,
        keys: Tensor | None,
        extra: Tensor | None,
        exclude: Tensor | None,
        scale: Scale,
        block: int | None,
        guard: bool,
    ) -> Tensor:
        k, offset = _keys_and_offset(anchors, keys, extra, scale, guard)
        parts, kept = [], []
        for rows in _blocks(anchors.shape[0], block):
            logits = _shifted_logits(anchors[rows], k, scale, _rows(offset, rows))
            e, row_sum = _exp_block(logits, offset, rows, exclude, guard)
            parts.append(row_sum.log() - _rows(offset, rows))
            if block is None:
                kept = [e, row_sum]
        lse = _joined(parts)
        ctx.save_for_backward(anchors, keys, k, exclude, lse, *kept)
        ctx.scale, ctx.block = scale, block
        return lse

    @staticmethod
    @_autocast_off
    def backward(ctx, grad_lse: Tensor) -> tuple:  # type: ignore[override]
        anchors, keys, k, exclude, lse, *kept = ctx.saved_tensors
        scale = ctx.scale
        if differentiating_backward():
            grads_ak = _exact(anchors, keys, k, exclude, scale, "lse", grad_lse, ctx)
            return *grads_ak, None, None, None, None, None, None
        grads = _Grads(anchors, keys, k, ctx.needs_input_grad[1], ctx.block)
        for rows in grads.blocks:
            if ctx.block is None:  # ∂lse_i/∂sim_ij = s·e_ij / row_sum_i
                e, row_sum = kept
                grads.add(rows, e, grad_lse / row_sum, scale)
            else:
                e = _shifted_logits(anchors[rows], k, scale, -lse[rows]).exp_()
                if exclude is not None:
                    e.scatter_(1, exclude[rows], 0.0)
                grads.add(rows, e, grad_lse[rows] * scale)
        return grads.anchors, grads.keys, None, None, None, None, None, None


class _Grads:
    """Gradients w.r.t. ``anchors`` and ``keys`` from ``∂L/∂sim = scale·diag(r)·X``, block
    by block.

    The row scaling goes on the ``[rows, d]`` products, never on the ``[rows, K]`` block
    ``X`` (which stays unchanged): ``∂a = diag(r)·(X·k)``, ``∂own = X[:, :own]ᵀ·(diag(r)·a)``
    (``scale`` folded into ``r``). A single block (``block`` None) writes them directly;
    with keys None the two terms of ``∂a`` are summed by one ``addmm``, which also applies
    a number ``scale``. Blocks accumulate into zeros.
    """

    def __init__(
        self, anchors: Tensor, keys: Tensor | None, k: Tensor, need_keys: bool, block: int | None
    ) -> None:
        self.a, self.k, self.whole = anchors, k, block is None
        self.blocks = _blocks(anchors.shape[0], block)
        self.n_own = anchors.shape[0] if keys is None else keys.shape[0]
        self.keys = None
        self.need_own = keys is None or need_keys
        if not self.whole:
            self.anchors = torch.zeros_like(anchors)
            self.keys = torch.zeros_like(keys) if keys is not None and need_keys else None
        self.shared = keys is None  # anchors are their own keys

    def add(self, rows: slice, x: Tensor, r: Tensor, scale: Scale = 1.0) -> None:
        """Add the gradients of the block ``rows`` for ``∂L/∂sim = scale·diag(r)·X``."""
        fold = self.whole and self.shared and not isinstance(scale, Tensor)
        if not fold and (isinstance(scale, Tensor) or scale != 1.0):
            r = r * scale
        r = r[:, None]
        by_row = r * (x @ self.k)
        if self.whole:
            own = x[:, : self.n_own].T
            if self.shared:  # scale·(diag(r)·X·k + Xᵀ·diag(r)·a), scale on the addmm
                alpha = scale if fold else 1.0
                self.anchors = torch.addmm(by_row, own, r * self.a, beta=alpha, alpha=alpha)
                return
            self.anchors = by_row
            self.keys = own @ (r * self.a) if self.need_own else None
            return
        self.anchors[rows] += by_row
        if self.need_own:
            own = self.anchors if self.shared else self.keys
            own += x[:, : self.n_own].T @ (r * self.a[rows])


class _GramSoftmaxMean(torch.autograd.Function):
    """``E_i = Σ_j p_ij·s_ij``, ``p_i = softmax_j(β·s_ij)``, ``s_ij = a_i·k_j`` over the
    columns not in ``exclude``; same layout, shift and underflow handling as
    :class:`_GramLogSumExp`.

    With ``L = β·s - shift`` (kept) and ``P = exp(L)`` (unnormalised),
    ``β·E_i = Σ_j P_ij·L_ij / Z_i + shift_i``. The gradient is
    ``∂E_i/∂s_ij = p_ij·(1 + β·(s_ij - E_i))`` (just ``p_ij`` with ``detach``), formed in
    place in ``P∘L`` as ``(g_i/Z_i)·(P_ij·(1 + shift_i - β·E_i) + (P∘L)_ij)`` (so the
    backward runs once, unless ``detach``), the row factor ``g_i/Z_i`` on the products.

    Double backward: exact, as for :class:`_GramLogSumExp` (with ``detach`` the weights
    are constants there too). The in-place fast path spends the kept ``[M, K]`` tensors:
    after it, a further backward of the same graph (with ``retain_graph``) raises instead
    of reading them, unless ``block`` or ``detach``; the differentiable path reads only
    the inputs and may come first, as often as asked.
    """

    @staticmethod
    def forward(  # type: ignore[override]
        ctx,
        anchors: Tensor,
        keys: Tensor | None,
        extra: Tensor | None,
        exclude: Tensor | None,
        scale: float,
        block: int | None,
        detach: bool,
        guard: bool,
    ) -> Tensor:
        k, offset = _keys_and_offset(anchors, keys, extra, scale, guard)
        means, sums, kept = [], [], []
        for rows in _blocks(anchors.shape[0], block):
            logits = _shifted_logits(anchors[rows], k, scale, _rows(offset, rows))
            e, row_sum = _exp_block(logits, offset, rows, exclude, guard, keep_logits=True)
            weighted = logits.mul_(e)
            means.append((weighted.sum(dim=1) / row_sum - _rows(offset, rows)) / scale)
            sums.append(row_sum)
            if block is None:
                kept = [e, weighted]
        mean, row_sum = _joined(means), _joined(sums)
        ctx.save_for_backward(anchors, keys, k, exclude, offset, row_sum, mean, *kept)
        ctx.scale, ctx.block, ctx.detach, ctx.used = scale, block, detach, False
        return mean

    @staticmethod
    @_autocast_off
    def backward(ctx, grad_mean: Tensor) -> tuple:  # type: ignore[override]
        if ctx.used and ctx.block is None and not ctx.detach:
            raise RuntimeError("the fused softmax mean supports one backward pass per graph")
        if differentiating_backward():
            anchors, keys, k, exclude, *_ = ctx.saved_tensors
            mode = "mean_detached" if ctx.detach else "mean"
            grads_ak = _exact(anchors, keys, k, exclude, ctx.scale, mode, grad_mean, ctx)
            return *grads_ak, None, None, None, None, None, None
        ctx.used = True
        anchors, keys, k, exclude, offset, row_sum, mean, *kept = ctx.saved_tensors
        scale = ctx.scale
        grads = _Grads(anchors, keys, k, ctx.needs_input_grad[1], ctx.block)
        for rows in grads.blocks:
            if ctx.block is None:
                e, weighted = kept
            else:
                logits = _shifted_logits(anchors[rows], k, scale, _rows(offset, rows))
                e = logits.exp()
                if exclude is not None:
                    e.scatter_(1, exclude[rows], 0.0)
                weighted = logits.mul_(e)
            if not ctx.detach:  # P∘(1 + shift - βE + L), formed in place in P∘L
                own = (1.0 - _rows(offset, rows)) - scale * mean[rows]
                e = weighted.addcmul_(e, own[:, None])
            grads.add(rows, e, grad_mean[rows] / row_sum[rows])
        return grads.anchors, grads.keys, None, None, None, None, None, None


def _exact(
    anchors: Tensor,
    keys: Tensor | None,
    k: Tensor,
    exclude: Tensor | None,
    scale: Scale,
    mode: str,
    grad: Tensor,
    ctx: torch.autograd.function.FunctionCtx,
) -> tuple[Tensor, Tensor | None]:
    """The differentiable gradients (:func:`._gram_grad.gram_grads`); the constant rows
    of ``k`` after the own keys are ``extra``."""
    n_own = anchors.shape[0] if keys is None else keys.shape[0]
    extra = k[n_own:] if k.shape[0] > n_own else None
    need_keys = ctx.needs_input_grad[1]  # type: ignore[attr-defined]
    return gram_grads(anchors, keys, extra, exclude, scale, mode, grad, need_keys)


def logsumexp(
    anchors: Tensor,
    scale: Scale,
    keys: Tensor | None = None,
    extra: Tensor | None = None,
    exclude: Tensor | None = None,
    block: int | None = None,
    unit: bool = False,
) -> Tensor:
    """``lse [M]``; ``unit``: the rows of ``anchors`` and ``k`` have norm <= 1, which
    lets small ``scale`` skip the underflow guard (:func:`needs_guard`). A tensor ``scale``
    gets no gradient."""
    guard = needs_guard(scale, unit, anchors.dtype)
    return _GramLogSumExp.apply(anchors, keys, extra, exclude, scale, block, guard)


def softmax_mean(
    anchors: Tensor,
    scale: float,
    keys: Tensor | None = None,
    extra: Tensor | None = None,
    exclude: Tensor | None = None,
    block: int | None = None,
    detach_weights: bool = False,
    unit: bool = False,
) -> Tensor:
    """``E [M]``, arguments as :func:`logsumexp`; ``detach_weights`` stops the gradient
    through the softmax weights."""
    guard = needs_guard(scale, unit, anchors.dtype)
    args = (anchors, keys, extra, exclude, scale, block, detach_weights, guard)
    return _GramSoftmaxMean.apply(*args)
