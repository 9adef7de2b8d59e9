"""Input checks and numerics shared by every functional loss.

Conventions used throughout :mod:`contrastkit.losses.functional`:

* ``pos`` is a ``[M]`` tensor: the similarity of each of ``M`` anchors with its positive.
* ``neg`` is a ``[M, K]`` tensor: its similarities with ``K`` negatives. An entry equal to
  ``-inf`` marks an absent negative, so view builders can mask a full similarity matrix
  in place instead of gathering a copy (see :mod:`contrastkit.losses.views`).

Precision, one rule for every loss of the package (functional and registered modules):

* a loss computes in its *compute dtype*, the promoted dtype of its floating inputs but at
  least float32 (:func:`compute_dtype`): half-precision inputs (float16, bfloat16) are cast
  to float32, float64 inputs stay float64;
* it computes with ``torch.autocast`` switched off on the inputs' device, so an ambient
  autocast region (the user's, or a training step's) neither puts its similarity products
  back into half precision nor hands the fused ``autograd.Function`` kernels of
  :mod:`._negatives` mixed dtypes;
* it returns its result in the compute dtype: a float32 loss for half or float32 inputs, a
  float64 loss for float64 inputs. Gradients reach half-precision leaves in their own
  dtype (through the cast).
* bfloat16 inputs keep their values through the cast, and the cast remembers it
  (:func:`._precision.holds_bf16_values`): the Triton kernels multiply them on bfloat16
  tensor cores, exactly, with the float32 values and gradients to float32 rounding
  (:func:`._gram_triton.unit_logsumexp`).
* ``backward`` called inside an autocast region: the fused kernels still run theirs in
  float32; the built-in ops' backward products follow the region (autocast's own
  behaviour, a relative error of order 2^-8 in bf16), so call ``backward`` outside it, as
  a training step does (then the gradients are exactly those of the fp32 computation).

The public functional losses, the view builders of :mod:`contrastkit.losses.views` and the
fused kernels' wrappers (:func:`._negatives.gram_logsumexp`,
:func:`._negatives.gram_softmax_mean`) follow it through :func:`float32_compute`; every
registered module follows it through the registry's wrapper of ``forward`` /
``similarity_loss`` / ``queue_loss`` (:mod:`contrastkit.losses.registry`), which also runs
the loss's own parameters (AMCL's heads, learned temperatures; kept in float32) in float32.
Buffers passed in as negatives (MoCo's queue, NNCLR's support set) keep their dtype and are
cast to the compute dtype where they are used.
"""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Callable
from itertools import chain
from typing import Any, TypeVar

import torch
from torch import Tensor

from ._negatives import DenseNegatives, GramNegatives, Negatives
from ._precision import (
    HALF,
    autocast_on,
    compute_dtype,
    device_type_of,
    no_autocast,
    upcast_tensor,
)

_REDUCTIONS = ("mean", "sum", "none")


# The checks that read tensor values (a finite loss, finite labels, valid temperatures):
# "auto" runs them on CPU tensors only, "on" everywhere, "off" nowhere.
_VALUE_CHECKS = {
    "mode": {"0": "off", "1": "on"}.get(os.environ.get("CONTRASTKIT_CHECK_FINITE", ""), "auto")
}


def reads_values(t: Tensor) -> bool:
    """Whether the checks that read the values of ``t`` run: by default (``"auto"``) on CPU
    tensors, where reading one costs nothing, and not on an accelerator, where it would make
    the host wait for the device at every call (a synchronisation that stalls the step);
    :func:`contrastkit.losses.set_check_finite` or ``CONTRASTKIT_CHECK_FINITE=1`` / ``0``
    turn them on / off everywhere. Never while ``torch.compile`` traces, in any mode: a
    read would break its graph (an error under ``fullgraph=True``)."""
    if torch.compiler.is_compiling():
        return False
    mode = _VALUE_CHECKS["mode"]
    return mode == "on" or (mode == "auto" and device_type_of(t) == "cpu")


def set_value_checks(mode: str) -> str:
    """Set the mode of :func:`reads_values` (``"auto"``, ``"on"``, ``"off"``); returns
    the previous one."""
    if mode not in ("auto", "on", "off"):
        raise ValueError(f"value checks must be 'auto', 'on' or 'off', got {mode!r}")
    previous, _VALUE_CHECKS["mode"] = _VALUE_CHECKS["mode"], mode
    return previous


def check_tensor(x: object, name: str, ndim: int, shape_text: str) -> Tensor:
    """Return ``x`` if it is a floating tensor with ``ndim`` dimensions, else raise."""
    if not isinstance(x, Tensor):
        raise TypeError(
            f"{name} must be a torch.Tensor of shape {shape_text}, got {type(x).__name__}"
        )
    if not x.is_floating_point():
        raise TypeError(
            f"{name} must be a floating-point tensor of shape {shape_text}, got {x.dtype}"
        )
    if x.dim() != ndim:
        raise ValueError(f"{name} must have shape {shape_text}, got {tuple(x.shape)}")
    return x


def check_views(
    z1: object, z2: object, min_rows: int = 2, names: tuple[str, str] = ("z1", "z2")
) -> tuple[Tensor, Tensor]:
    """Validate two row-aligned ``[N, d]`` views with at least ``min_rows`` rows."""
    a = check_tensor(z1, names[0], 2, "[N, d]")
    b = check_tensor(z2, names[1], 2, "[N, d]")
    shape = a.shape
    if shape != b.shape:
        raise ValueError(
            f"{names[1]} must have the shape of {names[0]} {tuple(shape)}, got {tuple(b.shape)}"
        )
    if shape[0] < min_rows:
        raise ValueError(
            f"{names[0]} must have shape [N, d] with N >= {min_rows}, got {tuple(a.shape)}"
        )
    return a, b


def check_pos_neg(pos: object, neg: object) -> tuple[Tensor, Negatives]:
    """Validate the ``(pos [M], neg [M, K])`` pair of the InfoNCE family.

    ``neg`` may also be a :class:`Negatives` (e.g. the fused 2N layout of
    :func:`contrastkit.losses.views.ntxent_similarities`). Returns ``pos`` and the
    negatives, in float32 when the inputs are half precision.
    """
    pos_t = check_tensor(pos, "pos", 1, "[M]")
    if type(neg) is GramNegatives or (not isinstance(neg, Tensor) and isinstance(neg, Negatives)):
        if neg.rows != pos_t.shape[0]:
            raise ValueError(
                f"neg must describe M = len(pos) = {pos_t.shape[0]} anchors, got {neg.rows}"
            )
        return pos_t, neg
    neg_t = check_tensor(neg, "neg", 2, "[M, K]")
    if neg_t.shape[0] != pos_t.shape[0]:
        raise ValueError(
            f"neg must have shape [M, K] with M = len(pos) = {pos_t.shape[0]}, "
            f"got {tuple(neg_t.shape)}"
        )
    if neg_t.shape[1] < 1:
        raise ValueError("neg must have shape [M, K] with K >= 1 negatives, got K = 0")
    return pos_t, DenseNegatives(neg_t, compute_dtype(pos_t, neg_t))


def check_positive(value: float, name: str) -> float:
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    if not value > 0 or not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number > 0, got {value}")
    return float(value)


def check_reduction(reduction: str) -> str:
    if reduction not in _REDUCTIONS:
        raise ValueError(f"reduction must be one of {_REDUCTIONS}, got {reduction!r}")
    return reduction


def reduce(per_anchor: Tensor, reduction: str) -> Tensor:
    if reduction == "mean":
        return per_anchor.mean()
    if reduction == "sum":
        return per_anchor.sum()
    return per_anchor


def log1mexp(x: Tensor) -> Tensor:
    """``log(1 - exp(x))`` for ``x <= 0``, accurate near both ends (Mächler, 2012)."""
    return torch.where(x > -math.log(2.0), torch.log(-torch.expm1(x)), torch.log1p(-torch.exp(x)))


def upcast(value: Any) -> Any:
    """A float16/bfloat16 tensor in float32, :class:`Negatives` with their half-precision
    tensors in float32; any other value unchanged."""
    if isinstance(value, Tensor):
        return upcast_tensor(value)
    if isinstance(value, Negatives):
        return value.upcast()
    return value


# Arguments that are never cast: tested before the (slower) abstract-class test for
# :class:`Negatives` (the registry passes the module itself first).
_NEVER_CAST = (int, float, str, torch.nn.Module)


def call_in_float32(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)`` under the precision rule of this module: half-precision
    arguments (tensors, :class:`Negatives`) cast to float32 and autocast off on the device
    of the first tensor argument.

    Every loss call goes through several of these (the registry's wrapper, the view
    builder, the functional loss), so the common case costs one pass over the arguments:
    nothing to cast (no half tensor; :meth:`Negatives.upcast` returns the negatives
    themselves when they hold none) and autocast already off, ``fn`` is called as is."""
    first, cast = None, False
    for value in chain(args, kwargs.values()) if kwargs else args:
        if isinstance(value, Tensor):
            first = value if first is None else first
            cast = cast or value.dtype in HALF
        elif value is None or isinstance(value, _NEVER_CAST):
            continue
        elif (type(value) is GramNegatives or isinstance(value, Negatives)) and (
            value.upcast() is not value
        ):
            cast = True
    if cast:
        args = tuple(map(upcast, args))
        kwargs = {k: upcast(v) for k, v in kwargs.items()}
    device = device_type_of(first)
    if not autocast_on(device):
        return fn(*args, **kwargs)
    with no_autocast(device):
        return fn(*args, **kwargs)


_Fn = TypeVar("_Fn", bound=Callable[..., Any])


def float32_compute(fn: _Fn) -> _Fn:
    """Decorate a loss so that every call goes through :func:`call_in_float32`; the
    undecorated function stays reachable as ``__wrapped__``, for callers that run under
    the rule already (a loss calling another on its own float32 terms)."""

    @functools.wraps(fn)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        return call_in_float32(fn, *args, **kwargs)

    return wrapped  # type: ignore[return-value]
