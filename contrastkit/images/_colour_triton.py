"""SimCLR's colour jitter and grayscale as one Triton kernel (issue #38), imported only when
an augment's ``backend`` is ``"triton"``.

:func:`~.colour.jitter` followed by the grayscale coin costs about 110 launches for a batch
(four steps of a blend and a hue shift, each a dozen small ops). Here one program per image
does all of it, the per-pixel arithmetic of :mod:`.colour` unchanged:

* step ``t`` of a sample blends, ``clamp(a·x + c·m + s·gray(x), 0, 1)`` with its
  coefficients ``(a, c, s)`` (``(1, 0, 0)`` leaves it as it is), then, where its ``hue``
  flag is set, shifts the hue by ``h`` sixths of a turn in RGB (:func:`~.colour.shift_hue`);
* ``m`` is the image's mean luma where its contrast step starts: the only step with
  ``c ≠ 0``, and every step before it is per pixel. A first sweep over the image runs the
  steps and sums the luma at the start of that one (what follows it there is discarded),
  a second runs all four with ``m`` and writes;
* the grayscale coin replaces every channel by the luma of the result.

Values agree with the torch path to float32 rounding (sums in another order, contracted
multiply-adds). Inputs are float32 ``[B, 3, H, W]`` images in [0, 1], contiguous.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl
from torch import Tensor

from .colour import _TINY, LUMA

LUMA_R: tl.constexpr = tl.constexpr(LUMA[0])
LUMA_G: tl.constexpr = tl.constexpr(LUMA[1])
LUMA_B: tl.constexpr = tl.constexpr(LUMA[2])
TINY: tl.constexpr = tl.constexpr(_TINY)


@triton.jit
def _gray(r, g, b):
    return r * LUMA_R + g * LUMA_G + b * LUMA_B


@triton.jit
def _channel(n_plus_shift, hue, v, chroma):
    """One channel of the hue-shifted pixel: ``v - C·clamp(min(k, 4 - k), 0, 1)`` with
    ``k = (hue + (n + shift)) mod 6`` (torch's remainder: the result has the divisor's
    sign)."""
    k = hue + n_plus_shift
    k = k - 6.0 * tl.floor(k / 6.0)
    ramp = tl.minimum(tl.maximum(tl.minimum(k, 4.0 - k), 0.0), 1.0)
    return tl.minimum(tl.maximum(v - chroma * ramp, 0.0), 1.0)


@triton.jit
def _step(r, g, b, a, c, s, mean, shift, hue_on):
    """Step of the jitter on a block of pixels: the blend, then the hue shift if
    ``hue_on``."""
    lum = _gray(r, g, b)
    base = c * mean
    r = tl.minimum(tl.maximum(base + a * r + s * lum, 0.0), 1.0)
    g = tl.minimum(tl.maximum(base + a * g + s * lum, 0.0), 1.0)
    b = tl.minimum(tl.maximum(base + a * b + s * lum, 0.0), 1.0)
    v = tl.maximum(tl.maximum(r, g), b)
    chroma = v - tl.minimum(tl.minimum(r, g), b)
    # the first channel holding the maximum, as torch.max reports it
    first = (r >= g) & (r >= b)
    second = (~first) & (g >= b)
    diff = tl.where(first, g - b, tl.where(second, b - r, r - g))
    offset = tl.where(first, 0.0, tl.where(second, 2.0, 4.0))
    hue = diff / tl.maximum(chroma, TINY) + offset
    r2 = _channel(5.0 + shift, hue, v, chroma)
    g2 = _channel(3.0 + shift, hue, v, chroma)
    b2 = _channel(1.0 + shift, hue, v, chroma)
    return tl.where(hue_on, r2, r), tl.where(hue_on, g2, g), tl.where(hue_on, b2, b)


@triton.jit
def _load(x_ptr, base, hw, idx, mask):
    """The three channels of the pixels ``idx`` of one image."""
    r = tl.load(x_ptr + base + idx, mask=mask, other=0.0)
    g = tl.load(x_ptr + base + hw + idx, mask=mask, other=0.0)
    b = tl.load(x_ptr + base + 2 * hw + idx, mask=mask, other=0.0)
    return r, g, b


@triton.jit
def _steps(r, g, b, cp, hp, mean, t_star):
    """The four steps of one image's jitter (coefficients at ``cp``, hue flags at ``hp``)
    on a block of pixels, and the luma where step ``t_star`` starts."""
    lum_star = tl.zeros_like(r)
    for t in tl.static_range(4):
        lum_star = tl.where(t == t_star, _gray(r, g, b), lum_star)
        a, c, s = tl.load(cp + 4 * t), tl.load(cp + 4 * t + 1), tl.load(cp + 4 * t + 2)
        shift, on = tl.load(cp + 4 * t + 3), tl.load(hp + t) != 0
        r, g, b = _step(r, g, b, a, c, s, mean, shift, on)
    return r, g, b, lum_star


@triton.jit
def _colour_kernel(
    x_ptr, out_ptr, coef_ptr, hue_ptr, gray_ptr, hw, HAS_GRAY: tl.constexpr, BLOCK: tl.constexpr
):
    i = tl.program_id(0).to(tl.int64)
    base = i * 3 * hw
    cp, hp = coef_ptr + i * 16, hue_ptr + i * 4  # [4 steps, (a, c, s, shift)], [4 steps]
    # the contrast step: the first (and only) one with c != 0; 4 when there is none
    t_star = 4
    for t in tl.static_range(3, -1, -1):
        t_star = tl.where(tl.load(cp + 4 * t + 1) != 0, t, t_star)
    offs = tl.arange(0, BLOCK)
    total = tl.zeros([BLOCK], dtype=tl.float32)
    if t_star < 4:
        for start in range(0, hw, BLOCK):
            mask = start + offs < hw
            r, g, b = _load(x_ptr, base, hw, start + offs, mask)
            total += tl.where(mask, _steps(r, g, b, cp, hp, 0.0, t_star)[3], 0.0)
    mean = tl.sum(total, axis=0) / hw
    for start in range(0, hw, BLOCK):
        idx = start + offs
        mask = idx < hw
        r, g, b = _load(x_ptr, base, hw, idx, mask)
        r, g, b, _ = _steps(r, g, b, cp, hp, mean, t_star)
        if HAS_GRAY:
            to_gray = tl.load(gray_ptr + i) != 0
            lum = _gray(r, g, b)
            r = tl.where(to_gray, lum, r)
            g = tl.where(to_gray, lum, g)
            b = tl.where(to_gray, lum, b)
        tl.store(out_ptr + base + idx, r, mask=mask)
        tl.store(out_ptr + base + hw + idx, g, mask=mask)
        tl.store(out_ptr + base + 2 * hw + idx, b, mask=mask)


def jitter_and_gray(x: Tensor, coef: Tensor, hue: Tensor, gray: Tensor | None) -> Tensor:
    """The colour jitter of ``x [B, 3, H, W]`` (float32) by ``coef [B, 4, 4]`` and ``hue
    [B, 4]`` (see :class:`~.colour.JitterPlan`), then luma on every channel where ``gray
    [B]`` (bool; ``None``: no grayscale), in one kernel."""
    x = x.contiguous()
    out = torch.empty_like(x)
    hw = x.shape[2] * x.shape[3]
    block = min(1024, triton.next_power_of_2(hw))
    _colour_kernel[(x.shape[0],)](
        x, out, coef.contiguous(), hue.contiguous(), hue if gray is None else gray, hw,
        HAS_GRAY=gray is not None, BLOCK=block,
    )  # fmt: skip
    return out
