"""The compute dtype of the losses and a way out of an ambient ``torch.autocast`` region.

The rule they implement is stated once, in :mod:`._common`. A float32 tensor made here
from a bfloat16 one (:func:`upcast_tensor`, :func:`in_dtype`) is remembered as holding
bfloat16 values (:func:`holds_bf16_values`): their products are exact in float32 whether
computed in float32 or on bfloat16 tensor cores, which the Triton kernels use
(:mod:`._gram_triton`, :func:`unit_logsumexp <._gram_triton.unit_logsumexp>`).
"""

from __future__ import annotations

import contextlib
import functools
import weakref
from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor

HALF = (torch.float16, torch.bfloat16)
_FLOATS = frozenset((*HALF, torch.float32, torch.float64))


def compute_dtype(*tensors: Tensor) -> torch.dtype:
    """The promoted dtype of ``tensors``, at least float32: float32 for half-precision
    (and integer) inputs, float64 when any input is float64. Real floating dtypes are
    decided in Python (``torch.promote_types`` is a dispatched operator, one per input,
    at every loss call); any other dtype goes through it."""
    if 0 < len(tensors) <= 2:  # the common calls: one or two tensors of one wide dtype
        dtype = tensors[0].dtype
        if (dtype is torch.float32 or dtype is torch.float64) and tensors[-1].dtype is dtype:
            return dtype
    dtypes = {t.dtype for t in tensors}
    if dtypes <= _FLOATS:
        return torch.float64 if torch.float64 in dtypes else torch.float32
    return functools.reduce(torch.promote_types, dtypes, torch.float32)


def device_type_of(t: Tensor | None) -> str:
    """``t.device.type`` (``"cpu"`` for ``None``), without building a ``torch.device``
    for the common CPU and CUDA tensors (the losses ask at every call)."""
    if t is None or t.is_cpu:
        return "cpu"
    return "cuda" if t.is_cuda else t.device.type


def in_dtype(x: Tensor, dtype: torch.dtype) -> Tensor:
    """``x.to(dtype)``, without the call (several microseconds of host time) when ``x``
    has that dtype already."""
    if x.dtype is dtype:
        return x
    return (
        _noted(x.to(dtype)) if x.dtype is torch.bfloat16 and dtype is torch.float32 else x.to(dtype)
    )


def upcast_tensor(x: Tensor) -> Tensor:
    """``x`` in float32 if it is float16 or bfloat16, else ``x`` itself."""
    if x.dtype is torch.bfloat16:
        return _noted(x.float())
    return x.float() if x.dtype is torch.float16 else x


# id -> weak reference and version counter of the float32 tensors made from bfloat16 ones
# (id-keyed: a tensor's == compares elements, so it cannot be a WeakSet member); an entry
# leaves with its tensor, and holds only while the tensor's values are unchanged
_FROM_BF16: dict[int, tuple[weakref.ref, int]] = {}


def _noted(t: Tensor) -> Tensor:
    """``t``, remembered as holding bfloat16 values (not while ``torch.compile`` traces)
    as long as its version counter stays (an in-place change, ``z.mul_(3.7)``, or one of a
    tensor it views, ends that; assigning ``t.data`` does not count and is not seen).
    Inference tensors keep no version counter and are not remembered."""
    if not torch.compiler.is_compiling() and not t.is_inference():
        key = id(t)
        ref = weakref.ref(t, lambda _, key=key: _FROM_BF16.pop(key, None))
        _FROM_BF16[key] = (ref, t._version)
    return t


def same_values(source: Tensor, parts: Sequence[Tensor]) -> Sequence[Tensor]:
    """``parts`` (slices of ``source``, or copies of its values), remembered as holding
    bfloat16 values where ``source`` is known to (:func:`holds_bf16_values`)."""
    if holds_bf16_values(source):
        for t in parts:
            _noted(t)
    return parts


def holds_bf16_values(*tensors: Tensor) -> bool:
    """Whether every one of ``tensors`` is a float32 tensor made from a bfloat16 one by
    :func:`upcast_tensor` or :func:`in_dtype` (so each value is a bfloat16 number) and not
    changed in place since; always ``False`` while ``torch.compile`` traces."""
    if torch.compiler.is_compiling():
        return False
    for t in tensors:
        entry = _FROM_BF16.get(id(t))
        if entry is None or entry[0]() is not t or entry[1] != t._version:
            return False
    return True


def autocast_on(device_type: str) -> bool:
    """Whether autocast may be on for ``device_type``: ``False`` where it is off or torch
    has no autocast for the device type (MPS before torch 2.5, meta), ``True`` where it is
    on or torch cannot tell (torch < 2.4 has no per-device query)."""
    try:
        return torch.is_autocast_enabled(device_type)
    except TypeError:  # torch < 2.4: no per-device query
        return True
    except RuntimeError:  # "unknown device type for autocast": autocast cannot be on there
        return False


def no_autocast(device_type: str) -> contextlib.AbstractContextManager[Any]:
    """A region with autocast off on ``device_type`` (``torch.autocast(..., enabled=False)``);
    a no-op where it is off already (:func:`autocast_on`: the losses nest these regions;
    building and entering one is tens of microseconds of host time per call)."""
    if not autocast_on(device_type):
        return contextlib.nullcontext()
    try:
        return torch.autocast(device_type, enabled=False)
    except RuntimeError:  # "unsupported autocast device_type": autocast cannot be on there
        return contextlib.nullcontext()
