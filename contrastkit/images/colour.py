"""The colour operations of SimCLR's recipe on a whole batch in a few kernels (issue #38).

torchvision's ``ColorJitter`` (the definitions SimCLR, MoCo and BYOL use) applies brightness
``b·x``, contrast ``c·x + (1 - c)·mean(gray(x))``, saturation ``s·x + (1 - s)·gray(x)`` and a
hue shift of ``h`` turns in HSV, each clamped to [0, 1], in a random order per image. On a
GPU a batch of small images costs kernel launches, not arithmetic, so here:

* the three blends are one formula, ``a·x + c·mean(gray(x)) + s·gray(x)`` clamped, with
  per-sample coefficients ``(a, c, s)``: ``(b, 0, 0)``, ``(c, 1 - c, 0)``, ``(s, 0, 1 - s)``,
  or ``(1, 0, 0)`` (no change) for a sample whose op at that step is the hue or which is
  not jittered. The jitter is four steps over the whole batch (each sample's op of that
  step), plus the hue shift of the samples whose op it is;
* the coefficients, which samples shift their hue at which step and by how much are
  worked out on the CPU, where the random order was drawn (:func:`plan_jitter`), so no
  device value is read and no row set is searched for on the device;
* the hue shift is computed in RGB: with ``v = max``, chroma ``C = max - min`` and the hue
  in sixths of a turn ``H``, channel ``n ∈ (5, 3, 1)`` of the result is
  ``v - C·clamp(min(k, 4 - k), 0, 1)``, ``k = (n + H + 6h) mod 6`` (the HSV → RGB formula
  with ``v·s = C``, as ``colorsys``), without an HSV image in between;
* the constants (luma weights, channel offsets) are made once per device: a tensor built
  from Python numbers at each call is a blocking host-to-device copy, which on CUDA waits
  for all the queued work.
"""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch import Tensor

LUMA = (0.299, 0.587, 0.114)
# below this chroma a pixel is grey to float32 precision: its hue is left at 0, as colorsys
# does for chroma 0 (the result differs from the exact one by at most the chroma)
_TINY = 1e-12
_CONSTANTS: dict[tuple[torch.device, torch.dtype], tuple[Tensor, Tensor, Tensor]] = {}


def _constants(x: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """``[1, 3, 1, 1]`` luma weights, hue offsets ``(0, 2, 4)`` of the channel holding the
    maximum, and HSV → RGB offsets ``(5, 3, 1)``, on ``x``'s device and dtype (made once)."""
    key = (x.device, x.dtype)
    if key not in _CONSTANTS:
        rows = torch.tensor([LUMA, (0.0, 2.0, 4.0), (5.0, 3.0, 1.0)], dtype=x.dtype)
        luma, even, odd = rows.to(x.device).view(3, 1, 3, 1, 1).unbind(0)
        _CONSTANTS[key] = (luma, even, odd)
    return _CONSTANTS[key]


def gray(x: Tensor) -> Tensor:
    """Luma ``[B, 1, H, W]`` of RGB ``x [B, 3, H, W]``: ``0.299 R + 0.587 G + 0.114 B``
    (ITU-R 601-2, as torchvision's ``rgb_to_grayscale`` and Pillow's ``L``)."""
    return (x * _constants(x)[0]).sum(1, keepdim=True)


def blend(x: Tensor, coef: Tensor) -> Tensor:
    """``clamp(a·x + c·mean(gray(x)) + s·gray(x), 0, 1)`` for ``x [B, 3, H, W]`` and
    per-sample ``coef [B, ≥3]`` = ``(a, c, s, ...)`` (the mean over each image's pixels)."""
    a, c, s = (v.view(-1, 1, 1, 1) for v in coef[:, :3].unbind(1))
    g = gray(x)
    out = torch.addcmul(c * g.mean((2, 3), keepdim=True), a, x)
    return out.addcmul_(s, g).clamp_(0.0, 1.0)


def shift_hue(x: Tensor, sixths: Tensor) -> Tensor:
    """RGB ``x [R, 3, H, W]`` in [0, 1] with its HSV hue moved by ``sixths [R]`` sixths of a
    turn (6× torchvision's ``hue_factor``); saturation and value are kept."""
    _, even, odd = _constants(x)
    v, arg = x.max(1, keepdim=True)
    chroma = v - x.amin(1, keepdim=True)
    # hue of the pixel in sixths: 2i + (x[i+1] - x[i+2]) / C where channel i is the maximum
    diff = x.roll(-1, 1) - x.roll(-2, 1)
    hue = (diff / chroma.clamp_min(_TINY) + even).gather(1, arg)
    k = torch.remainder(hue + (odd + sixths.view(-1, 1, 1, 1)), 6.0)
    ramp = torch.minimum(k, 4.0 - k).clamp_(0.0, 1.0)
    return torch.addcmul(v, chroma, ramp, value=-1.0).clamp_(0.0, 1.0)


class JitterPlan(NamedTuple):
    """What :func:`jitter` does to a batch of ``B`` images, from :func:`plan_jitter`.

    Attributes:
        coef: ``[B, 4, 4]``: step ``t``'s blend coefficients ``(a, c, s)`` of each sample
            (see :func:`blend`) and its hue shift in sixths of a turn (0 unless its op at
            step ``t`` is the hue).
        hue: ``[B, 4]`` bool: whether the sample's op at step ``t`` is the hue (needed
            only without ``hue_rows``).
        hue_rows: per step, the samples whose op at that step is the hue (``[R]`` int64);
            empty: :func:`jitter` takes its fixed-shape form.
        blends: per step, whether any sample's op at that step is a blend (with
            ``hue_rows``).
    """

    coef: Tensor
    hue: Tensor | None
    hue_rows: tuple[Tensor, ...] = ()
    blends: tuple[bool, ...] = ()


def plan_jitter(apply: Tensor, factors: Tensor, order: Tensor) -> JitterPlan:
    """The colour jitter of ``B`` samples as four batched steps, on the CPU.

    Args:
        apply: ``[B]`` bool, whether the sample is jittered.
        factors: ``[B, 4]`` brightness, contrast, saturation factors and hue shift (turns).
        order: ``[B, 4]`` int64, the op (0 brightness, 1 contrast, 2 saturation, 3 hue)
            of each step, a permutation of 0..3 per sample.
    """
    f = factors.gather(1, order)  # [B, 4]: the factor of each step's op
    on = apply[:, None]
    mixed = on & (order < 3)
    coef = torch.stack(
        [
            torch.where(mixed, f, 1.0),
            torch.where(on & (order == 1), 1.0 - f, 0.0),
            torch.where(on & (order == 2), 1.0 - f, 0.0),
            torch.where(on & (order == 3), 6.0 * f, 0.0),
        ],
        2,
    )
    hue = on & (order == 3)
    rows = tuple(torch.nonzero(h).flatten() for h in hue.T)
    return JitterPlan(coef, hue, rows, tuple(mixed.any(0).tolist()))


def jitter(x: Tensor, plan: JitterPlan) -> Tensor:
    """Colour jitter of ``x [B, 3, H, W]`` by ``plan`` (its tensors on ``x``'s device):
    every jittered sample undergoes the four ops once each, in its own order.

    With ``plan.hue_rows`` a step blends only if some sample blends there and shifts the
    hue of those rows only; without them (the fixed-shape form, for ``torch.compile``:
    no shape depends on the draw) every step blends the whole batch (coefficients
    ``(1, 0, 0)`` leave a sample as it is, exactly) and takes the hue shift where
    ``plan.hue`` says. Every op acts per sample, so both forms give the same values
    (bit for bit in eager mode)."""
    for step in range(4):
        coef = plan.coef[:, step]
        if not plan.hue_rows:
            x = blend(x, coef)
            shifted = shift_hue(x, coef[:, 3])
            x = torch.where(plan.hue[:, step].view(-1, 1, 1, 1), shifted, x)
            continue
        rows = plan.hue_rows[step]
        if plan.blends[step]:
            x = blend(x, coef)
        if rows.numel():
            if not plan.blends[step]:
                x = x.clone()
            shifted = shift_hue(x.index_select(0, rows), coef[:, 3].index_select(0, rows))
            x.index_copy_(0, rows, shifted)
    return x


def solarize(x: Tensor, apply: Tensor) -> Tensor:
    """BYOL's solarisation ``x ↦ x·1[x < 0.5] + (1 - x)·1[x ≥ 0.5]`` on the samples where
    ``apply [B]`` (bool), for ``x [B, C, H, W]`` in [0, 1]."""
    return torch.where(apply.view(-1, 1, 1, 1) & (x >= 0.5), 1.0 - x, x)
