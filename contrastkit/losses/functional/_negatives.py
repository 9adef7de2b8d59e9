"""How the InfoNCE family and CACR see their negatives: through row-wise softmax statistics.

Every loss in :mod:`.infonce` and :mod:`.macl` depends on an anchor's negatives only
through ``log Σ_j exp(s·neg_j)`` at one or two inverse temperatures ``s`` and their count;
CACR's repulsion (:mod:`.cacr`) only through the softmax mean ``Σ_j softmax_j(s·neg)·neg_j``.
:class:`Negatives` is that interface. :class:`DenseNegatives` serves a ``[M, K]`` tensor;
:class:`GramNegatives` serves negatives that are inner products of anchors with key
embeddings (SimCLR's 2N views, cross-view pairs, a queue, V views) straight from the
embeddings, through :func:`gram_logsumexp` and :func:`gram_softmax_mean`: one matrix
product forward, the softmax gradient formed once, two products backward, and, with
``block_size``, O(M·block) memory. ``backend`` picks the implementation: these matrix
products (``"torch"``), the fused Triton kernels of :mod:`._gram_triton` (``"triton"``,
O(M) extra memory, ``block_size`` ignored) or ``"auto"`` (:mod:`._backend`).

Safe under autocast and on half inputs by themselves: the wrappers cast to one compute
dtype (at least float32) and run forward and backward with autocast off, as
``torch.amp.custom_fwd(cast_inputs=torch.float32)`` / ``custom_bwd`` would (torch < 2.4 has
no ``device_type`` for them).
"""

from __future__ import annotations

import functools
from abc import ABC, abstractmethod
from collections.abc import Callable

import torch
from torch import Tensor

from . import _backend
from ._precision import compute_dtype, no_autocast, upcast_tensor


class Negatives(ABC):
    """The negatives of ``M`` anchors."""

    @property
    @abstractmethod
    def rows(self) -> int:
        """M, the number of anchors."""

    @abstractmethod
    def count(self) -> Tensor:
        """``[M]`` number of negatives of each anchor."""

    @abstractmethod
    def logsumexp(self, scale: float) -> Tensor:
        """``[M]`` differentiable ``log Σ_j exp(scale·neg_ij)``; ``scale >= 0``."""

    @abstractmethod
    def softmax_mean(self, scale: float, detach_weights: bool = False) -> Tensor:
        """``[M]`` differentiable ``Σ_j p_ij·neg_ij`` with ``p_i = softmax_j(scale·neg_ij)``,
        ``scale > 0``; ``detach_weights`` stops the gradient through ``p``."""

    @abstractmethod
    def upcast(self) -> Negatives:
        """These negatives with their float16/bfloat16 tensors in float32."""


class DenseNegatives(Negatives):
    """Negatives given as a ``[M, K]`` similarity tensor; ``-inf`` marks an absent one."""

    def __init__(self, neg: Tensor, dtype: torch.dtype) -> None:
        self.neg = neg.to(dtype)

    @property
    def rows(self) -> int:
        return self.neg.shape[0]

    def count(self) -> Tensor:
        return torch.isfinite(self.neg).sum(dim=1).to(self.neg.dtype)

    def logsumexp(self, scale: float) -> Tensor:
        if scale == 0:
            absent = ~torch.isfinite(self.neg)
            return torch.logsumexp(torch.zeros_like(self.neg).masked_fill(absent, float("-inf")), 1)
        return torch.logsumexp(self.neg * scale, dim=1)

    def softmax_mean(self, scale: float, detach_weights: bool = False) -> Tensor:
        present = torch.isfinite(self.neg)
        p = torch.softmax(self.neg * scale, dim=1)
        if detach_weights:
            p = p.detach()
        return (p * torch.where(present, self.neg, 0.0)).sum(dim=1)

    def upcast(self) -> DenseNegatives:
        return DenseNegatives(self.neg, compute_dtype(self.neg))


def _shifted_logits(anchors: Tensor, keys: Tensor, scale: float, shift: Tensor) -> Tensor:
    """``scale·a·kᵀ - shift``, the shift folded into the matrix product as its bias."""
    return torch.addmm(-shift[:, None], anchors, keys.T, alpha=scale)


def _keys_and_shift(
    anchors: Tensor, keys: Tensor | None, extra: Tensor | None, scale: float
) -> tuple[Tensor, Tensor]:
    """The key matrix ``cat(keys or anchors, extra)`` and the per-row shift, initially the
    bound ``scale·max‖a‖·max‖k‖`` on every logit (so ``exp`` never overflows)."""
    own = anchors if keys is None else keys
    k = own if extra is None else torch.cat([own, extra])
    bound = scale * anchors.norm(dim=1).max() * k.norm(dim=1).max()
    return k, bound.expand(anchors.shape[0]).clone()


def _exp_block(
    logits: Tensor,
    scale: float,
    shift: Tensor,
    rows: slice,
    exclude: Tensor | None,
    recompute: tuple[Tensor, Tensor],
    keep_logits: bool = False,
) -> tuple[Tensor, Tensor]:
    """``exp(logits)`` with excluded columns zeroed, and its row sums; in place unless
    ``keep_logits``.

    Rows whose sum underflows are recomputed from ``recompute = (anchors, keys)`` with their
    exact maximum as shift (``shift`` is updated in place, and so are those rows of
    ``logits`` when kept, with 0 at excluded columns)."""
    e = logits.exp() if keep_logits else logits.exp_()
    if exclude is not None:
        e.scatter_(1, exclude[rows], 0.0)
    row_sum = e.sum(dim=1)
    tiny = row_sum < torch.finfo(e.dtype).tiny / torch.finfo(e.dtype).eps
    if tiny.any():
        idx = tiny.nonzero().squeeze(1)
        anchors, keys = recompute
        exact = scale * (anchors[rows][idx] @ keys.T)
        if exclude is not None:
            exact.scatter_(1, exclude[rows][idx], float("-inf"))
        local_shift = exact.amax(dim=1)
        shift[rows.start + idx] = local_shift
        exact -= local_shift[:, None]
        e[idx] = exact.exp()
        row_sum[idx] = e[idx].sum(dim=1)
        if keep_logits:
            logits[idx] = exact.nan_to_num(neginf=0.0)
    return e, row_sum


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

    A constant shift ``s·max‖a‖·max‖k‖`` bounds every
    logit, so ``exp`` never overflows; rows whose sum underflows are redone with their
    exact maximum. Without ``block`` the exponentials are kept for backward; with
    ``block`` rows are processed ``block`` at a time and recomputed in backward, so extra
    memory is O(block·K).
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
    ) -> Tensor:
        k, shift = _keys_and_shift(anchors, keys, extra, scale)
        m = anchors.shape[0]
        step = m if block is None else block
        lse = anchors.new_empty(m)
        kept = []
        for r0 in range(0, m, step):
            rows = slice(r0, min(m, r0 + step))
            logits = _shifted_logits(anchors[rows], k, scale, shift[rows])
            e, row_sum = _exp_block(logits, scale, shift, rows, exclude, (anchors, k))
            lse[rows] = shift[rows] + row_sum.log()
            if block is None:
                kept = [e, row_sum]
        ctx.save_for_backward(anchors, keys, k, exclude, lse, *kept)
        ctx.scale, ctx.block = scale, block
        return lse

    @staticmethod
    @_autocast_off
    def backward(ctx, grad_lse: Tensor) -> tuple:  # type: ignore[override]
        anchors, keys, k, exclude, lse, *kept = ctx.saved_tensors
        scale, m = ctx.scale, anchors.shape[0]
        grads = _Grads(anchors, keys, k, ctx.needs_input_grad[1])
        step = m if ctx.block is None else ctx.block
        for r0 in range(0, m, step):
            rows = slice(r0, min(m, r0 + step))
            if ctx.block is None:  # ∂lse_i/∂sim_ij = s·e_ij / row_sum_i
                e, row_sum = kept
                grads.add(rows, e, grad_lse * scale / row_sum)
            else:
                e = _shifted_logits(anchors[rows], k, scale, lse[rows]).exp_()
                if exclude is not None:
                    e.scatter_(1, exclude[rows], 0.0)
                grads.add(rows, e, grad_lse[rows] * scale)
        return grads.anchors, grads.keys, None, None, None, None


class _Grads:
    """Gradients w.r.t. ``anchors`` and ``keys`` from ``∂L/∂sim = diag(r)·X``, block by block.

    The row scaling goes on the ``[rows, d]`` products, never on the ``[rows, K]`` block
    ``X`` (which stays unchanged): ``∂a = diag(r)·(X·k)``, ``∂own = X[:, :own]ᵀ·(diag(r)·a)``.
    """

    def __init__(self, anchors: Tensor, keys: Tensor | None, k: Tensor, need_keys: bool) -> None:
        self.a, self.k = anchors, k
        self.anchors = torch.zeros_like(anchors)
        self.n_own = anchors.shape[0] if keys is None else keys.shape[0]
        self.keys = torch.zeros_like(keys) if keys is not None and need_keys else None
        self._own = self.anchors if keys is None else self.keys

    def add(self, rows: slice, x: Tensor, r: Tensor) -> None:
        self.anchors[rows] += r[:, None] * (x @ self.k)
        if self._own is not None:
            self._own += x[:, : self.n_own].T @ (r[:, None] * self.a[rows])


class _GramSoftmaxMean(torch.autograd.Function):
    """``E_i = Σ_j p_ij·s_ij``, ``p_i = softmax_j(β·s_ij)``, ``s_ij = a_i·k_j`` over the
    columns not in ``exclude``; same layout, shift and underflow handling as
    :class:`_GramLogSumExp`.

    With ``L = β·s - shift`` (kept) and ``P = exp(L)`` (unnormalised),
    ``β·E_i = Σ_j P_ij·L_ij / Z_i + shift_i``. The gradient is
    ``∂E_i/∂s_ij = p_ij·(1 + β·(s_ij - E_i))`` (just ``p_ij`` with ``detach``), formed in
    place in ``P∘L`` as ``(g_i/Z_i)·(P_ij·(1 + shift_i - β·E_i) + (P∘L)_ij)`` (so the
    backward runs once, unless ``detach``), the row factor ``g_i/Z_i`` on the products.
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
    ) -> Tensor:
        k, shift = _keys_and_shift(anchors, keys, extra, scale)
        m = anchors.shape[0]
        step = m if block is None else block
        mean, row_sum = anchors.new_empty(m), anchors.new_empty(m)
        kept = []
        for r0 in range(0, m, step):
            rows = slice(r0, min(m, r0 + step))
            logits = _shifted_logits(anchors[rows], k, scale, shift[rows])
            e, row_sum[rows] = _exp_block(
                logits, scale, shift, rows, exclude, (anchors, k), keep_logits=True
            )
            weighted = logits.mul_(e)
            mean[rows] = (weighted.sum(dim=1) / row_sum[rows] + shift[rows]) / scale
            if block is None:
                kept = [e, weighted]
        ctx.save_for_backward(anchors, keys, k, exclude, shift, row_sum, mean, *kept)
        ctx.scale, ctx.block, ctx.detach, ctx.used = scale, block, detach, False
        return mean

    @staticmethod
    @_autocast_off
    def backward(ctx, grad_mean: Tensor) -> tuple:  # type: ignore[override]
        if ctx.used and ctx.block is None and not ctx.detach:
            raise RuntimeError("the fused softmax mean supports one backward pass per graph")
        ctx.used = True
        anchors, keys, k, exclude, shift, row_sum, mean, *kept = ctx.saved_tensors
        scale, m = ctx.scale, anchors.shape[0]
        grads = _Grads(anchors, keys, k, ctx.needs_input_grad[1])
        step = m if ctx.block is None else ctx.block
        for r0 in range(0, m, step):
            rows = slice(r0, min(m, r0 + step))
            if ctx.block is None:
                e, weighted = kept
            else:
                logits = _shifted_logits(anchors[rows], k, scale, shift[rows])
                e = logits.exp()
                if exclude is not None:
                    e.scatter_(1, exclude[rows], 0.0)
                weighted = logits.mul_(e)
            if not ctx.detach:  # P∘(1 + shift - βE + L), formed in place in P∘L
                own = 1.0 + shift[rows] - scale * mean[rows]
                e = weighted.addcmul_(e, own[:, None])
            grads.add(rows, e, grad_mean[rows] / row_sum[rows])
        return grads.anchors, grads.keys, None, None, None, None, None


def gram_softmax_mean(
    anchors: Tensor,
    scale: float,
    keys: Tensor | None = None,
    extra: Tensor | None = None,
    exclude: Tensor | None = None,
    block_size: int | None = None,
    detach_weights: bool = False,
    backend: str = _backend.DEFAULT_BACKEND,
) -> Tensor:
    """Fused ``[M]`` softmax mean ``Σ_j softmax_j(scale·s_ij)·s_ij`` of the inner products
    ``s_ij = a_i·k_j`` with ``k = cat(keys or anchors, extra)``, ``scale > 0``; arguments
    as :func:`gram_logsumexp`. ``detach_weights`` stops the gradient through the softmax.
    """
    if block_size is not None and block_size < 1:
        raise ValueError(f"block_size must be a positive integer or None, got {block_size}")
    anchors, keys, extra = _common_dtype(anchors, keys, extra)
    with no_autocast(anchors.device.type):
        if _backend.resolve(backend, anchors) == "triton":
            return _backend.triton_gram().softmax_mean(
                anchors, scale, keys, extra, exclude, detach_weights
            )
        return _GramSoftmaxMean.apply(
            anchors, keys, extra, exclude, float(scale), block_size, bool(detach_weights)
        )


def gram_logsumexp(
    anchors: Tensor,
    scale: float,
    keys: Tensor | None = None,
    extra: Tensor | None = None,
    exclude: Tensor | None = None,
    block_size: int | None = None,
    backend: str = _backend.DEFAULT_BACKEND,
) -> Tensor:
    """Fused ``lse [M]`` over the key matrix ``k = cat(keys or anchors, extra)``.

    ``lse_i = log Σ_j exp(scale·a_i·k_j)`` over the columns ``j`` not listed in row ``i``
    of ``exclude`` (``[M, r]`` long). ``extra`` is constant (no gradient); gradients
    reach ``anchors`` and ``keys``. ``block_size`` trades a recomputed matrix product for
    memory: extra memory O(block_size·|k|) instead of O(M·|k|). Computed in the compute
    dtype of the three (at least float32) with autocast off; ``lse`` is in that dtype.
    ``backend``: ``"torch"``, ``"triton"`` or ``"auto"`` (:mod:`._backend`).
    """
    if block_size is not None and block_size < 1:
        raise ValueError(f"block_size must be a positive integer or None, got {block_size}")
    anchors, keys, extra = _common_dtype(anchors, keys, extra)
    with no_autocast(anchors.device.type):
        if _backend.resolve(backend, anchors) == "triton":
            return _backend.triton_gram().logsumexp(anchors, scale, keys, extra, exclude)
        return _GramLogSumExp.apply(anchors, keys, extra, exclude, float(scale), block_size)


def _common_dtype(
    anchors: Tensor, keys: Tensor | None, extra: Tensor | None
) -> tuple[Tensor, Tensor | None, Tensor | None]:
    """``anchors``, ``keys`` and the detached ``extra`` in their compute dtype (the
    promoted dtype, at least float32)."""
    dtype = compute_dtype(*(t for t in (anchors, keys, extra) if t is not None))
    keys = None if keys is None else keys.to(dtype)
    extra = None if extra is None else extra.detach().to(dtype)
    return anchors.to(dtype), keys, extra


class GramNegatives(Negatives):
    """Negatives that are inner products of ``anchors [M, d]`` with the rows of
    ``cat(keys or anchors, extra)``, minus the columns in ``exclude [M, r]``.

    SimCLR's 2N layout is ``anchors = cat(z1, z2)``, ``keys = None`` and ``exclude`` each
    row's own index and its positive's; a MoCo queue is ``extra`` (constant). ``backend``
    is passed to :func:`gram_logsumexp` and :func:`gram_softmax_mean`.
    """

    def __init__(
        self,
        anchors: Tensor,
        keys: Tensor | None = None,
        extra: Tensor | None = None,
        exclude: Tensor | None = None,
        block_size: int | None = None,
        backend: str = _backend.DEFAULT_BACKEND,
    ) -> None:
        self.anchors, self.keys, self.extra = anchors, keys, extra
        self.exclude, self.block_size = exclude, block_size
        self.backend = backend
        own = anchors.shape[0] if keys is None else keys.shape[0]
        self._count = own + (0 if extra is None else extra.shape[0])
        self._count -= 0 if exclude is None else exclude.shape[1]

    @property
    def rows(self) -> int:
        return self.anchors.shape[0]

    def count(self) -> Tensor:
        return self.anchors.new_full((self.rows,), float(self._count))

    def upcast(self) -> GramNegatives:
        keys, extra = (None if t is None else upcast_tensor(t) for t in (self.keys, self.extra))
        anchors = upcast_tensor(self.anchors)
        return GramNegatives(anchors, keys, extra, self.exclude, self.block_size, self.backend)

    def logsumexp(self, scale: float) -> Tensor:
        return gram_logsumexp(
            self.anchors, scale, self.keys, self.extra, self.exclude, self.block_size, self.backend
        )

    def softmax_mean(self, scale: float, detach_weights: bool = False) -> Tensor:
        return gram_softmax_mean(
            self.anchors,
            scale,
            self.keys,
            self.extra,
            self.exclude,
            self.block_size,
            detach_weights,
            self.backend,
        )
