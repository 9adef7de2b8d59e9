"""The compute dtype of the losses and a way out of an ambient ``torch.autocast`` region.

The rule they implement is stated once, in :mod:`._common`.
"""

from __future__ import annotations

import contextlib
import functools
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
    dtypes = {t.dtype for t in tensors}
    if dtypes <= _FLOATS:
        return torch.float64 if torch.float64 in dtypes else torch.float32
    return functools.reduce(torch.promote_types, dtypes, torch.float32)


def upcast_tensor(x: Tensor) -> Tensor:
    """``x`` in float32 if it is float16 or bfloat16, else ``x`` itself."""
    return x.float() if x.dtype in HALF else x


def no_autocast(device_type: str) -> contextlib.AbstractContextManager[Any]:
    """A region with autocast off on ``device_type`` (``torch.autocast(..., enabled=False)``);
    a no-op where it is off already (the losses nest these regions; building and entering
    one is tens of microseconds of host time per call) or for a device type torch has no
    autocast for (MPS before torch 2.5, meta)."""
    try:
        if not torch.is_autocast_enabled(device_type):
            return contextlib.nullcontext()
    except TypeError:  # torch < 2.4: no per-device query, so always open the region
        pass
    except RuntimeError:  # "unknown device type for autocast": autocast cannot be on there
        return contextlib.nullcontext()
    try:
        return torch.autocast(device_type, enabled=False)
    except RuntimeError:  # "unsupported autocast device_type": autocast cannot be on there
        return contextlib.nullcontext()
