"""How the InfoNCE family and CACR see their negatives: through row-wise softmax statistics.

Every loss in :mod:`.infonce` and :mod:`.macl` depends on an anchor's negatives only
through ``log Σ_j exp(s·neg_j)`` at one or two inverse temperatures ``s`` and their count;
CACR's repulsion (:mod:`.cacr`) only through the softmax mean ``Σ_j softmax_j(s·neg)·neg_j``.
:class:`Negatives` is that interface. :class:`DenseNegatives` serves a ``[M, K]`` tensor;
:class:`GramNegatives` serves negatives that are inner products of anchors with key
embeddings (SimCLR's 2N views, cross-view pairs, a queue, V views) straight from the
embeddings, through :func:`gram_logsumexp` and :func:`gram_softmax_mean`. ``backend``
picks the implementation: matrix products in torch (:mod:`._gram_torch`, ``"torch"``: one
product forward, two backward, O(M·block) memory with ``block_size``), the fused Triton
kernels of :mod:`._gram_triton` (``"triton"``, O(M) extra memory, ``block_size``
ignored) or ``"auto"`` (:mod:`._backend`).

Safe under autocast and on half inputs by themselves: the wrappers cast to one compute
dtype (at least float32) and run forward and backward with autocast off, as
``torch.amp.custom_fwd(cast_inputs=torch.float32)`` / ``custom_bwd`` would (torch < 2.4 has
no ``device_type`` for them).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from types import ModuleType

import torch
from torch import Tensor

from ..._optional import require
from . import _backend, _gram_torch
from ._precision import (
    HALF,
    autocast_on,
    compute_dtype,
    device_type_of,
    in_dtype,
    no_autocast,
    upcast_tensor,
)


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
    def logsumexp(self, scale: float | Tensor) -> Tensor:
        """``[M]`` differentiable ``log Σ_j exp(scale·neg_ij)``; ``scale >= 0``, a number or
        a 0-d tensor (not differentiated, never read on the host)."""

    def logsumexps(self, scales: tuple[float, ...]) -> tuple[Tensor, ...]:
        """:meth:`logsumexp` at each of ``scales`` (HCL's two): one call per scale, or
        one pass for all where an implementation has it (:class:`GramNegatives`)."""
        return tuple(self.logsumexp(c) for c in scales)

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

    def logsumexp(self, scale: float | Tensor) -> Tensor:
        if isinstance(scale, Tensor):
            return torch.logsumexp(self.neg * scale.detach(), dim=1)
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
        dtype = compute_dtype(self.neg)
        return self if self.neg.dtype == dtype else DenseNegatives(self.neg, dtype)


# (x, kx): float32 rows holding bfloat16 values, the anchors' and the keys' (None: own)
Source = tuple[Tensor, Tensor | None]


def _triton_gram() -> ModuleType:
    """The Triton implementation (:mod:`._gram_triton`), imported on first use; a missing
    ``triton`` raises :class:`~contrastkit._optional.MissingExtraError` naming the ``gpu``
    extra."""
    require("triton", "gpu", "backend='triton'")
    from . import _gram_triton

    return _gram_triton


def gram_softmax_mean(
    anchors: Tensor,
    scale: float,
    keys: Tensor | None = None,
    extra: Tensor | None = None,
    exclude: Tensor | None = None,
    block_size: int | None = None,
    detach_weights: bool = False,
    backend: str = _backend.DEFAULT_BACKEND,
    unit: bool = False,
    source: Source | None = None,
) -> Tensor:
    """Fused ``[M]`` softmax mean ``Σ_j softmax_j(scale·s_ij)·s_ij`` of the inner products
    ``s_ij = a_i·k_j`` with ``k = cat(keys or anchors, extra)``, ``scale > 0``; arguments
    as :func:`gram_logsumexp`. ``detach_weights`` stops the gradient through the softmax.
    """
    if block_size is not None and block_size < 1:
        raise ValueError(f"block_size must be a positive integer or None, got {block_size}")
    anchors, keys, extra = _common_dtype(anchors, keys, extra)
    args = (anchors, scale, keys, extra, exclude, block_size, detach_weights, backend, unit, source)
    device = device_type_of(anchors)
    if not autocast_on(device):  # the common case: no region to build and enter
        return _softmax_mean(*args)
    with no_autocast(device):
        return _softmax_mean(*args)


def _softmax_mean(
    anchors: Tensor,
    scale: float,
    keys: Tensor | None,
    extra: Tensor | None,
    exclude: Tensor | None,
    block_size: int | None,
    detach_weights: bool,
    backend: str,
    unit: bool,
    source: Source | None,
) -> Tensor:
    """:func:`gram_softmax_mean` on the backend ``backend`` resolves to."""
    if _backend.resolve(backend, anchors) == "triton":
        if source is not None:
            x, kx = source
            return _triton_gram().unit_softmax_mean(x, scale, kx, exclude, detach_weights)
        return _triton_gram().softmax_mean(anchors, scale, keys, extra, exclude, detach_weights)
    return _gram_torch.softmax_mean(
        anchors, float(scale), keys, extra, exclude, block_size, bool(detach_weights), unit
    )


def gram_logsumexp(
    anchors: Tensor,
    scale: float | Tensor,
    keys: Tensor | None = None,
    extra: Tensor | None = None,
    exclude: Tensor | None = None,
    block_size: int | None = None,
    backend: str = _backend.DEFAULT_BACKEND,
    unit: bool = False,
    source: Source | None = None,
) -> Tensor:
    """Fused ``lse [M]`` over the key matrix ``k = cat(keys or anchors, extra)``.

    ``lse_i = log Σ_j exp(scale·a_i·k_j)`` over the columns ``j`` not listed in row ``i``
    of ``exclude`` (``[M, r]`` long). ``extra`` is constant (no gradient); gradients
    reach ``anchors`` and ``keys``. ``block_size`` trades a recomputed matrix product for
    memory: extra memory O(block_size·|k|) instead of O(M·|k|). Computed in the compute
    dtype of the three (at least float32) with autocast off; ``lse`` is in that dtype.
    ``backend``: ``"torch"``, ``"triton"`` or ``"auto"`` (:mod:`._backend`). ``unit``
    promises rows of norm <= 1 (normalised embeddings), which spares the torch path its
    underflow guard at moderate ``scale`` (:func:`._gram_torch.needs_guard`). ``scale``
    may be a 0-d tensor (MACL's adaptive ``1/τ_a``): the torch path uses it on the device,
    the Triton path reads it on the host (one synchronisation); it gets no gradient.
    ``source = (x, kx)``: float32 rows holding bfloat16 values whose unit rows are
    ``anchors`` and ``keys`` (``kx`` ``None`` for own keys; no ``extra``): the Triton path
    then computes from them on bfloat16 tensor cores, exactly
    (:func:`._gram_triton.unit_logsumexp`); the torch path ignores it.
    """
    if block_size is not None and block_size < 1:
        raise ValueError(f"block_size must be a positive integer or None, got {block_size}")
    anchors, keys, extra = _common_dtype(anchors, keys, extra)
    args = (anchors, scale, keys, extra, exclude, block_size, backend, unit, source)
    device = device_type_of(anchors)
    if not autocast_on(device):  # the common case: no region to build and enter
        return _logsumexp(*args)
    with no_autocast(device):
        return _logsumexp(*args)


def _logsumexp(
    anchors: Tensor,
    scale: float | Tensor,
    keys: Tensor | None,
    extra: Tensor | None,
    exclude: Tensor | None,
    block_size: int | None,
    backend: str,
    unit: bool,
    source: Source | None,
) -> Tensor:
    """:func:`gram_logsumexp` on the backend ``backend`` resolves to."""
    if _backend.resolve(backend, anchors) == "triton":
        if source is not None:
            return _triton_gram().unit_logsumexp(source[0], float(scale), source[1], exclude)
        return _triton_gram().logsumexp(anchors, float(scale), keys, extra, exclude)
    scale = scale.detach() if isinstance(scale, Tensor) else float(scale)
    return _gram_torch.logsumexp(anchors, scale, keys, extra, exclude, block_size, unit)


def _common_dtype(
    anchors: Tensor, keys: Tensor | None, extra: Tensor | None
) -> tuple[Tensor, Tensor | None, Tensor | None]:
    """``anchors``, ``keys`` and the detached ``extra`` in their compute dtype (the
    promoted dtype, at least float32)."""
    if keys is None and extra is None:  # the 2N layout: the anchors are their own keys
        return in_dtype(anchors, compute_dtype(anchors)), None, None
    dtype = compute_dtype(*(t for t in (anchors, keys, extra) if t is not None))
    keys = None if keys is None else in_dtype(keys, dtype)
    extra = None if extra is None else in_dtype(extra.detach(), dtype)
    return in_dtype(anchors, dtype), keys, extra


class GramNegatives(Negatives):
    """Negatives that are inner products of ``anchors [M, d]`` with the rows of
    ``cat(keys or anchors, extra)``, minus the columns in ``exclude [M, r]``.

    SimCLR's 2N layout is ``anchors = cat(z1, z2)``, ``keys = None`` and ``exclude`` each
    row's own index and its positive's; a MoCo queue is ``extra`` (constant). ``backend``,
    ``unit`` (every row has norm <= 1) and ``source`` (the bfloat16 values whose unit
    rows the anchors and keys are, see :func:`gram_logsumexp`) are passed to
    :func:`gram_logsumexp` and :func:`gram_softmax_mean`.

    ``exclude``'s entries must be distinct within a row and in ``[0, K)``, and leave every
    row at least one column (the losses' layouts always do): :meth:`count` assumes
    distinct entries, the torch path raises on an index out of range where the Triton
    kernels ignore it, and a row with no column left has ``lse = -inf`` and a NaN
    gradient. These are not checked, since a check would read the device at every call.
    """

    def __init__(
        self,
        anchors: Tensor,
        keys: Tensor | None = None,
        extra: Tensor | None = None,
        exclude: Tensor | None = None,
        block_size: int | None = None,
        backend: str = _backend.DEFAULT_BACKEND,
        unit: bool = False,
        source: Source | None = None,
    ) -> None:
        if source is not None and extra is not None:  # the unit path reads source alone
            raise ValueError("GramNegatives: source stands for anchors and keys; not with extra")
        self.anchors, self.keys, self.extra = anchors, keys, extra
        self.exclude, self.block_size = exclude, block_size
        self.backend, self.unit, self.source = backend, unit, source
        own = anchors.shape[0] if keys is None else keys.shape[0]
        self._count = own + (0 if extra is None else extra.shape[0])
        self._count -= 0 if exclude is None else exclude.shape[1]

    @property
    def rows(self) -> int:
        return self.anchors.shape[0]

    def count(self) -> Tensor:
        return self.anchors.new_full((self.rows,), float(self._count))

    def upcast(self) -> GramNegatives:
        """Themselves when no tensor is half precision (the common case: every loss call
        passes its negatives through :func:`~._common.call_in_float32` twice or more)."""
        keys, extra = self.keys, self.extra
        if (
            self.anchors.dtype not in HALF
            and (keys is None or keys.dtype not in HALF)
            and (extra is None or extra.dtype not in HALF)
        ):
            return self
        keys, extra = (None if t is None else upcast_tensor(t) for t in (self.keys, self.extra))
        anchors = upcast_tensor(self.anchors)
        args = (self.exclude, self.block_size, self.backend, self.unit, self.source)
        return GramNegatives(anchors, keys, extra, *args)

    def logsumexp(self, scale: float | Tensor) -> Tensor:
        return gram_logsumexp(
            self.anchors,
            scale,
            self.keys,
            self.extra,
            self.exclude,
            self.block_size,
            self.backend,
            self.unit,
            self.source,
        )

    def logsumexps(self, scales: tuple[float, ...]) -> tuple[Tensor, ...]:
        """Two scales on the Triton backend: both log-sum-exps from one pass of the kernels
        over the similarity tiles (:func:`._gram_triton.logsumexp2`); otherwise one call
        per scale."""
        anchors, keys, extra = _common_dtype(self.anchors, self.keys, self.extra)
        if len(scales) != 2 or _backend.resolve(self.backend, anchors) != "triton":
            return super().logsumexps(scales)  # resolved on the promoted dtype, as one scale
        pair = (float(scales[0]), float(scales[1]))
        with no_autocast(device_type_of(anchors)):
            if self.source is not None:
                x, kx = self.source
                return _triton_gram().unit_logsumexp2(x, pair, kx, self.exclude)
            return _triton_gram().logsumexp2(anchors, pair, keys, extra, self.exclude)

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
            self.unit,
            self.source,
        )
