"""Many views of an image batch in one pass: the random parameters, their transfer, the ops.

:class:`~.image_augment.ImageAugment` draws each view's parameters on the CPU
(:class:`Drawn`). Here the draws of several views, possibly of different augments (BYOL's
two), are stacked into one batch of ``n·B`` samples (:func:`stack`), moved to the images'
device in two copies (:func:`to_device`) and applied once to the repeated batch
(:func:`apply`), so a GPU launches each kernel once per step, not once per view, and never
waits for a transfer: every op acts per sample, so the result is bit for bit that of one
call per view.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import torch
from torch import Tensor

from .._optional import triton_interpreted
from .colour import JitterPlan, gray, jitter, solarize
from .spatial import separable_blur, warp

# per-sample masks (the coins, the jitter's hue steps), 0/1 floats on the CPU, bool on the device
MASKS = ("flip", "gray", "blur", "solarize", "hue")


class Drawn(NamedTuple):
    """The random parameters of ``B`` views, on the CPU.

    Attributes:
        cols: ``[B, ...]`` float32 columns: the masks of :data:`MASKS`, ``theta
            [B, 2, 3]`` (crop and flip as one affine map), ``coef [B, 4, 4]`` and ``hue
            [B, 4]`` (the colour jitter, see :class:`~.colour.JitterPlan`), ``kernel
            [B, K]`` (Gaussian blur).
        hue_rows: the jitter's four row sets (empty without jitter).
        blends: the jitter's four "any blend at this step" flags (empty without jitter).
    """

    cols: dict[str, Tensor]
    hue_rows: tuple[Tensor, ...] = ()
    blends: tuple[bool, ...] = ()


def filler(name: str, like: Tensor, b: int) -> Tensor | None:
    """The value of column ``name`` for ``b`` views that lack it, leaving them unchanged
    (``like`` is the column of a view that has it); ``None`` where none exists."""
    if name in MASKS:
        return torch.zeros(b, *like.shape[1:])
    if name not in ("coef", "kernel"):
        return None  # theta: no crop is not an affine map of the same resampling
    out = torch.zeros(b, *like.shape[1:])
    if name == "coef":
        out[..., 0] = 1.0  # a = 1, every other coefficient 0: no colour change
    else:
        out[:, like.shape[1] // 2] = 1.0  # a delta (the blur coin is 0 anyway)
    return out


def stackable(drawn: Sequence[Drawn]) -> bool:
    """Whether :func:`stack` can join ``drawn``: every column either in all draws or with a
    neutral value, and of one shape per sample."""
    names = {k for d in drawn for k in d.cols}
    for name in names:
        have = [d.cols[name] for d in drawn if name in d.cols]
        if len({c.shape[1:] for c in have}) > 1:
            return False
        if len(have) < len(drawn) and filler(name, have[0], 1) is None:
            return False
    return True


def stack(drawn: Sequence[Drawn]) -> Drawn:
    """The draws of several views (each of ``B`` samples) as one of ``len(drawn)·B``
    (see :func:`stackable`): columns joined (a view lacking one gets the neutral value),
    each jitter step's rows joined with view ``v``'s offset by ``v·B``."""
    if len(drawn) == 1:
        return drawn[0]
    b = next(iter(drawn[0].cols.values())).shape[0]
    names = list(dict.fromkeys(k for d in drawn for k in d.cols))
    cols = {}
    for name in names:
        like = next(d.cols[name] for d in drawn if name in d.cols)
        cols[name] = torch.cat([d.cols.get(name, filler(name, like, b)) for d in drawn])
    hue_rows: tuple[Tensor, ...] = ()
    blends: tuple[bool, ...] = ()
    if any(d.hue_rows for d in drawn):
        hue_rows = tuple(
            torch.cat([d.hue_rows[t] + v * b for v, d in enumerate(drawn) if d.hue_rows])
            for t in range(4)
        )
        blends = tuple(any(d.blends[t] for d in drawn if d.blends) for t in range(4))
    return Drawn(cols, hue_rows, blends)


def to_device(drawn: Drawn, device: torch.device, rows: bool = True) -> dict[str, Any]:
    """``drawn`` on ``device`` in two non-blocking copies (the float columns packed in one,
    the jitter's rows in the other; pinned first on CUDA, where a copy from pageable memory
    may wait for the queued work): the columns by name (masks as bool) plus, if ``rows``,
    ``hue_rows`` and ``blends`` in place of ``hue`` (without them :func:`apply` takes the
    fixed-shape form)."""
    out: dict[str, Any] = {}
    cols = drawn.cols
    if cols:
        n = next(iter(cols.values())).shape[0]
        widths = [math.prod(c.shape[1:]) for c in cols.values()]
        packed = torch.cat([c.reshape(n, w) for c, w in zip(cols.values(), widths, strict=True)], 1)
        packed = _to(packed, device)
        with_rows = rows and bool(drawn.hue_rows)
        for (name, col), part in zip(cols.items(), packed.split(widths, 1), strict=True):
            if name == "hue" and with_rows:
                continue  # the row sets stand for it
            part = part.view(col.shape)
            out[name] = part.bool() if name in MASKS else part
    if rows and drawn.hue_rows:
        sizes = [len(r) for r in drawn.hue_rows]
        out["hue_rows"] = _to(torch.cat(drawn.hue_rows), device).split(sizes)
        out["blends"] = drawn.blends
    return out


def _to(t: Tensor, device: torch.device) -> Tensor:
    if device.type == "cuda":
        t = t.pin_memory()
    return t.to(device, non_blocking=True)


def check_triton_device(device: torch.device) -> None:
    """``ValueError`` unless the fused colour kernel can run on ``device``: CUDA, or the CPU
    under Triton's interpreter (``TRITON_INTERPRET=1``, set before triton is imported)."""
    if device.type != "cuda" and not triton_interpreted():
        raise ValueError(
            f"aug_backend / backend 'triton' needs a CUDA device, got {device.type} "
            "(on CPU only under Triton's interpreter, TRITON_INTERPRET=1)"
        )


def apply(x: Tensor, p: dict[str, Any], fused: bool = False) -> Tensor:
    """The ops of the parameters ``p`` (:func:`to_device`) on ``x [B, C, H, W]`` (float,
    in [0, 1]), in the recipe's order: crop and flip, colour jitter, grayscale, blur,
    solarisation. Without ``p["hue_rows"]`` no shape depends on the draw (see
    :func:`~.colour.jitter`), so ``torch.compile`` makes one graph of it
    (:func:`compiled_apply`). ``fused``: the jitter and grayscale in one Triton kernel
    (:mod:`._colour_triton`; ``p`` without row sets)."""
    if "theta" in p:
        x = warp(x, p["theta"])
    elif "flip" in p:
        x = torch.where(p["flip"].view(-1, 1, 1, 1), x.flip(-1), x)
    if "coef" in p and fused:
        from ._colour_triton import jitter_and_gray  # needs triton

        check_triton_device(x.device)
        x = jitter_and_gray(x, p["coef"], p["hue"], p.get("gray"))
    elif "coef" in p:
        plan = JitterPlan(p["coef"], p.get("hue"), p.get("hue_rows", ()), p.get("blends", ()))
        x = jitter(x, plan)
    if "gray" in p and not (fused and "coef" in p):
        x = torch.where(p["gray"].view(-1, 1, 1, 1), gray(x).expand_as(x), x)
    if "kernel" in p:
        x = torch.where(p["blur"].view(-1, 1, 1, 1), separable_blur(x, p["kernel"]), x)
    if "solarize" in p:
        x = solarize(x, p["solarize"])
    return x


@functools.cache
def compiled_apply() -> Callable[[Tensor, dict[str, Any]], Tensor]:
    """:func:`apply` through ``torch.compile`` (one graph, static shapes: a batch size or
    recipe compiles once) for parameters without row sets (``to_device(..., rows=False)``).
    On a GPU its elementwise ops fuse into a few kernels, where eager mode launches about
    125 for SimCLR's two views; the values are eager mode's up to rounding (fused
    multiply-adds)."""
    return torch.compile(apply, fullgraph=True, dynamic=False)
