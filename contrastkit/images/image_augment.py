"""SimCLR's image augmentations (Chen et al., 2020, App. A), batched on the data's device.

Every sample of a batch gets its own random parameters, drawn (float32) from an explicit CPU
``torch.Generator`` and then moved to the images' device, so the parameters are the same
on every device and a resumed run replays its views bit for bit. kornia 0.9's batched
augmentations sample through ``torch.distributions`` from torch's global RNG and take no
generator, hence these plain-torch ops. Input is a
uint8 or float ``[B, C, H, W]`` batch (uint8 is divided by 255); output is float32 in
[0, 1]. Normalisation by the dataset's mean/std is the encoder's input layer
(:class:`contrastkit.models.ImageInput`), so frozen-feature evaluation of raw images sees
it too.

Operations (defaults from SimCLR App. A unless noted):

* ``crop``: random resized crop to the input size: area fraction ``s ~ U(scale_min, 1)``
  (0.08 for ImageNet-size images, 0.2 for CIFAR-size, the common CIFAR setting), log
  aspect ratio ``~ U(log 3/4, log 4/3)``; each side is capped at the image (instead of
  torchvision's rejection sampling); bilinear resampling with border replication;
* ``flip``: horizontal flip with p = 0.5;
* ``jitter``: with p = 0.8, brightness, contrast, saturation (0.4 each) and hue (0.1; CACR
  App. B.1 uses 0.4, set by a run's ``jitter``) in a per-sample random order
  (torchvision's ``ColorJitter`` definitions: brightness ``b·x``; contrast
  ``c·x + (1-c)·mean(gray(x))``; saturation ``s·x + (1-s)·gray(x)``; hue a shift of the
  HSV hue by ``h`` turns; each clamped to [0, 1]);
* ``grayscale``: with p = 0.2, ``0.299 R + 0.587 G + 0.114 B`` (ITU-R 601-2) on every channel;
* ``blur``: with p = 0.5, Gaussian blur with ``σ ~ U(0.1, 2)`` px and a kernel of 10 % of
  the image side (odd), reflect padding; by default only for images of ≥ 64 px
  (SimCLR drops it on CIFAR);
* ``solarize``: with probability ``solarize_p`` (0: off; BYOL uses 0.2 on its second
  view), ``x ↦ 1 - x`` where ``x ≥ 0.5``.

Recipes (:func:`view_augments`, ``aug_recipe`` of a run): ``simclr``, one
:class:`ImageAugment` for every view; ``byol``, the asymmetric pair of BYOL (Grill et al.
2020, App. B, Table 6): both views crop, flip, jitter (0.4, 0.4, 0.2, 0.1) with p = 0.8,
grayscale p = 0.2 and Gaussian blur; blur p = 1.0 on view 1 and 0.1 on view 2,
solarisation p = 0 on view 1 and 0.2 on view 2.

``n_types = k`` keeps the first ``k`` of AMCL Table 5's order (crop, blur, grayscale,
jitter, flip); the default applies the SimCLR recipe: crop, flip, jitter, grayscale, and
blur from 64 px (MACL App. B.3 uses the first four on CIFAR-10). Colour operations are
skipped for one-channel images.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch
import torch.nn.functional as tf
from torch import Tensor

TYPES_IMAGE = ("crop", "blur", "grayscale", "jitter", "flip", "solarize")
AUG_RECIPES = ("simclr", "byol")
AMCL_ORDER = TYPES_IMAGE[:5]
LUMA = (0.299, 0.587, 0.114)


def _u(n: int, low: float, high: float, g: torch.Generator) -> Tensor:
    return torch.rand(n, generator=g) * (high - low) + low


def gray(x: Tensor) -> Tensor:
    """Luma ``[B, 1, H, W]`` of RGB ``x [B, 3, H, W]``."""
    w = torch.tensor(LUMA, dtype=x.dtype, device=x.device).view(1, 3, 1, 1)
    return (x * w).sum(1, keepdim=True)


def resized_crop(x: Tensor, boxes: Tensor, flip: Tensor | None = None) -> Tensor:
    """Crops ``boxes [B, 4]`` = (left, top, width, height) as fractions of the image,
    resampled bilinearly to the input size (border replication); ``flip [B]`` bool
    mirrors the crop horizontally in the same resampling."""
    left, top, w, h = boxes.to(x.dtype).unbind(1)
    sx = w if flip is None else torch.where(flip.to(x.device), -w, w)
    zero = torch.zeros_like(w)
    theta = torch.stack(
        [torch.stack([sx, zero, 2 * left + w - 1], 1), torch.stack([zero, h, 2 * top + h - 1], 1)],
        1,
    )
    grid = tf.affine_grid(theta, list(x.shape), align_corners=False)
    return tf.grid_sample(x, grid, mode="bilinear", padding_mode="border", align_corners=False)


def rgb_to_hsv(x: Tensor) -> Tensor:
    """``[B, 3, H, W]`` RGB in [0, 1] → HSV with hue in turns [0, 1) (as ``colorsys``)."""
    r, g, b = x.unbind(1)
    maxc, minc = x.amax(1), x.amin(1)
    delta = maxc - minc
    inv = 1.0 / torch.where(delta > 0, delta, 1.0)
    s = delta / torch.where(maxc > 0, maxc, 1.0)
    h = torch.where(
        maxc == r, (g - b) * inv, torch.where(maxc == g, 2.0 + (b - r) * inv, 4.0 + (r - g) * inv)
    )
    h = torch.where(delta > 0, (h / 6.0) % 1.0, 0.0)
    return torch.stack([h, s, maxc], 1)


def hsv_to_rgb(x: Tensor) -> Tensor:
    """Inverse of :func:`rgb_to_hsv`: channel ``n ∈ (5, 3, 1)`` (R, G, B) is
    ``v - v·s·clamp(min(k, 4 - k), 0, 1)`` with ``k = (n + 6h) mod 6``."""
    h, s, v = x[:, :1], x[:, 1:2], x[:, 2:]
    n = torch.tensor([5.0, 3.0, 1.0], dtype=x.dtype, device=x.device).view(1, 3, 1, 1)
    k = (n + 6.0 * h) % 6.0
    return v - v * s * torch.minimum(k, 4.0 - k).clamp(0.0, 1.0)


def adjust(x: Tensor, op: int, factor: Tensor) -> Tensor:
    """One colour-jitter operation with per-sample ``factor [B]``: 0 brightness, 1
    contrast, 2 saturation (blend factors), 3 hue (shift in turns)."""
    f = factor.to(x.dtype).view(-1, 1, 1, 1)
    if op == 0:
        out = x * f
    elif op == 1:
        m = gray(x).mean((1, 2, 3), keepdim=True)
        out = f * x + (1 - f) * m
    elif op == 2:
        out = f * x + (1 - f) * gray(x)
    else:
        hsv = rgb_to_hsv(x)
        hue = (hsv[:, :1] + f) % 1.0
        out = hsv_to_rgb(torch.cat([hue, hsv[:, 1:]], 1))
    return out.clamp(0.0, 1.0)


def solarize(x: Tensor, apply: Tensor) -> Tensor:
    """BYOL's solarisation ``x ↦ x·1[x < 0.5] + (1 - x)·1[x ≥ 0.5]`` on the samples where
    ``apply [B]`` (bool), for ``x [B, C, H, W]`` in [0, 1]."""
    return torch.where(apply.view(-1, 1, 1, 1) & (x >= 0.5), 1.0 - x, x)


def gaussian_blur(x: Tensor, sigma: Tensor, kernel_size: int) -> Tensor:
    """Separable Gaussian blur of each image with its own ``sigma [B]`` (px), odd
    ``kernel_size``, reflect padding; one grouped convolution per axis."""
    b, c, hgt, wid = x.shape
    half = kernel_size // 2
    pos = torch.arange(-half, half + 1, dtype=x.dtype, device=x.device)
    k = torch.exp(-0.5 * (pos[None] / sigma.to(x.dtype).to(x.device)[:, None]) ** 2)
    k = (k / k.sum(1, keepdim=True)).repeat_interleave(c, 0)  # [B·C, K]
    y = tf.pad(x.reshape(1, b * c, hgt, wid), (half, half, half, half), mode="reflect")
    y = tf.conv2d(y, k[:, None, None, :], groups=b * c)
    y = tf.conv2d(y, k[:, None, :, None], groups=b * c)
    return y.reshape(b, c, hgt, wid)


class ImageAugment:
    """SimCLR-style random views of image batches (see the module docstring).

    Args:
        image_size: the side of the (square or not) images; decides the defaults.
        n_types: apply the first ``n_types`` (1-5) of AMCL Table 5's order.
        types: explicit type names instead (from :data:`TYPES_IMAGE`).
        crop_scale: minimum crop area fraction (default 0.08 from 64 px, else 0.2).
        jitter: (brightness, contrast, saturation, hue) strengths (0.4, 0.4, 0.4, 0.1);
            see :func:`check_jitter`.
        p_jitter, p_gray, p_blur, solarize_p: probabilities (0.8, 0.2, 0.5, 0.2 when
            ``solarize`` is among the types).

    Call as ``augment(x, generator)``.
    """

    kind = "image"

    def __init__(
        self,
        image_size: int,
        n_types: int | None = None,
        types: Sequence[str] | None = None,
        crop_scale: float | None = None,
        jitter: tuple[float, float, float, float] = (0.4, 0.4, 0.4, 0.1),
        p_jitter: float = 0.8,
        p_gray: float = 0.2,
        p_blur: float = 0.5,
        solarize_p: float = 0.2,
    ) -> None:
        if n_types is not None and types is not None:
            raise ValueError("give n_types or types, not both")
        if types is not None:
            bad = [t for t in types if t not in TYPES_IMAGE]
            if bad or not types:
                raise ValueError(f"types must be a non-empty subset of {TYPES_IMAGE}, got {types}")
            chosen = tuple(types)
        elif n_types is not None:
            if not isinstance(n_types, int) or not 1 <= n_types <= len(AMCL_ORDER):
                raise ValueError(f"n_types must be an int in [1, 5] for images, got {n_types!r}")
            chosen = AMCL_ORDER[:n_types]
        else:
            chosen = ("crop", "flip", "jitter", "grayscale") + (
                ("blur",) if image_size >= 64 else ()
            )
        self.types = tuple(t for t in TYPES_IMAGE if t in chosen)
        self.crop_scale = (
            crop_scale if crop_scale is not None else (0.08 if image_size >= 64 else 0.2)
        )
        if not 0 < self.crop_scale <= 1:
            raise ValueError(f"crop_scale must be in (0, 1], got {self.crop_scale}")
        for name, p in (("p_jitter", p_jitter), ("p_gray", p_gray), ("p_blur", p_blur),
                        ("solarize_p", solarize_p)):  # fmt: skip
            if not 0 <= p <= 1:
                raise ValueError(f"{name} must be in [0, 1], got {p}")
        self.jitter, self.p_jitter, self.p_gray = check_jitter(jitter), p_jitter, p_gray
        self.p_blur, self.solarize_p = p_blur, solarize_p
        self.kernel_size = max(3, int(0.1 * image_size) // 2 * 2 + 1)

    def __repr__(self) -> str:
        return f"ImageAugment(types={self.types}, crop_scale={self.crop_scale})"

    def __call__(self, x: Tensor, generator: torch.Generator) -> Tensor:
        return self.views(x, generator, 1)[0]

    def views(self, x: Tensor, generator: torch.Generator, n: int) -> list[Tensor]:
        """``n`` views of every sample of ``x``: bit for bit the ``n`` results of ``n``
        calls (the parameters are drawn view after view, every op acts per sample), made
        in one pass over the ``n·B`` samples, so a GPU launches each kernel once for all
        views instead of once per view."""
        if not isinstance(x, Tensor) or x.dim() != 4:
            got = tuple(x.shape) if isinstance(x, Tensor) else type(x).__name__
            raise ValueError(f"x must have shape [B, C, H, W] for image augmentations, got {got}")
        x = x.float().div(255.0) if x.dtype == torch.uint8 else x.float()
        b, color = x.shape[0], x.shape[1] == 3
        drawn = [self._draw_cpu(b, generator, color) for _ in range(n)]
        p = _to_device(*_stack(drawn, b), x.device)
        x = x.repeat(n, 1, 1, 1) if n > 1 else x
        t, flip = self.types, p.get("flip")
        if "crop" in t:
            x = resized_crop(x, p["box"], flip)
        elif flip is not None:
            x = torch.where(flip.view(-1, 1, 1, 1), x.flip(-1), x)
        if "jitter" in p:
            x = jitter(x, p["factors"], p["jitter"])
        if "grayscale" in t and color:
            x = torch.where(p["gray"].view(-1, 1, 1, 1), gray(x).expand_as(x), x)
        if "blur" in t:
            blurred = gaussian_blur(x, p["sigma"], self.kernel_size)
            x = torch.where(p["blur"].view(-1, 1, 1, 1), blurred, x)
        if "solarize" in t:
            x = solarize(x, p["solarize"])
        return list(x.split(b))

    def draw(
        self, b: int, g: torch.Generator, device: torch.device, color: bool = True
    ) -> dict[str, Any]:
        """The random parameters of ``b`` views (see :meth:`_draw_cpu`) on ``device``, moved
        in two non-blocking copies (one of floats, one of indices): ``flip``/``gray``/
        ``blur``/``solarize`` ``[B]`` bool, ``box [B, 4]`` (left, top, width, height),
        ``factors [B, 4]``, ``sigma [B]``, and ``jitter``: the colour jitter's ``(op,
        rows)`` in the order they apply (see :func:`jitter`). A copy per parameter would be
        a blocking transfer each, which on CUDA waits for all the queued work."""
        return _to_device(*self._draw_cpu(b, g, color), device)

    def _draw_cpu(
        self, b: int, g: torch.Generator, color: bool
    ) -> tuple[dict[str, Tensor], list[tuple[int, Tensor]]]:
        """The parameters of ``b`` views drawn on the CPU from ``g`` in a fixed order (flip,
        crop, jitter, grayscale, blur, solarize; nothing for jitter and grayscale unless
        ``color``): the ``[B]`` / ``[B, k]`` columns and the jitter's 16 ``(op, rows)``
        (step by step, op by op). The row sets are found here, where the coins lie, so
        their sizes are known without reading the device."""
        t, cols, groups = self.types, {}, []

        def coin(name: str, p: float) -> Tensor:
            cols[name] = (torch.rand(b, generator=g) < p).float()
            return cols[name]

        if "flip" in t:
            coin("flip", 0.5)
        if "crop" in t:
            area = _u(b, self.crop_scale, 1.0, g)
            ratio = torch.exp(_u(b, math.log(3 / 4), math.log(4 / 3), g))
            w, h = (area * ratio).sqrt().clamp(max=1.0), (area / ratio).sqrt().clamp(max=1.0)
            left = torch.rand(b, generator=g) * (1 - w)
            cols["box"] = torch.stack([left, torch.rand(b, generator=g) * (1 - h), w, h], 1)
        if "jitter" in t and color:
            apply = coin("jitter", self.p_jitter).bool()
            bri, con, sat, hue = self.jitter
            cols["factors"] = torch.stack(
                [_u(b, 1 - bri, 1 + bri, g), _u(b, 1 - con, 1 + con, g),
                 _u(b, 1 - sat, 1 + sat, g), _u(b, -hue, hue, g)], 1
            )  # fmt: skip
            order = torch.rand(b, 4, generator=g).argsort(1)  # [B, 4] the op of each step
            groups = [
                (op, torch.nonzero(apply & (order[:, step] == op)).flatten())
                for step in range(4)
                for op in range(4)
            ]
        if "grayscale" in t and color:
            coin("gray", self.p_gray)
        if "blur" in t:
            cols["sigma"] = _u(b, 0.1, 2.0, g)
            coin("blur", self.p_blur)
        if "solarize" in t:
            coin("solarize", self.solarize_p)
        return cols, groups


def _stack(
    drawn: Sequence[tuple[dict[str, Tensor], list[tuple[int, Tensor]]]], b: int
) -> tuple[dict[str, Tensor], list[tuple[int, Tensor]]]:
    """The parameters of several draws of ``b`` views as one draw of ``len(drawn)·b``:
    columns stacked, and each jitter group's rows joined (view ``v``'s rows offset by
    ``v·b``), so the groups still apply step by step to disjoint rows."""
    if len(drawn) == 1:
        return drawn[0]
    cols = {k: torch.cat([d[0][k] for d in drawn]) for k in drawn[0][0]}
    groups = [
        (op, torch.cat([d[1][i][1] + v * b for v, d in enumerate(drawn)]))
        for i, (op, _) in enumerate(drawn[0][1])
    ]
    return cols, groups


def _to_device(
    cols: dict[str, Tensor], groups: list[tuple[int, Tensor]], device: torch.device
) -> dict[str, Any]:
    """:meth:`ImageAugment.draw`'s dictionary from CPU columns and jitter groups."""
    out: dict[str, Any] = {}
    if cols:
        n = next(iter(cols.values())).shape[0]
        widths = [c.shape[1] if c.dim() == 2 else 1 for c in cols.values()]
        packed = torch.cat([c.view(n, -1) for c in cols.values()], 1)
        parts = packed.to(device, non_blocking=True).split(widths, 1)
        for (name, col), part in zip(cols.items(), parts, strict=True):
            part = part if col.dim() == 2 else part.squeeze(1)
            out[name] = part.bool() if name in _COINS else part
    groups = [(op, rows) for op, rows in groups if rows.numel()]
    if groups:
        sizes = [len(rows) for _, rows in groups]
        rows = torch.cat([r for _, r in groups]).to(device, non_blocking=True).split(sizes)
        out["jitter"] = [(op, r) for (op, _), r in zip(groups, rows, strict=True)]
    return out


_COINS = ("flip", "jitter", "gray", "blur", "solarize")


def jitter(x: Tensor, factors: Tensor, groups: Sequence[tuple[int, Tensor]]) -> Tensor:
    """Colour jitter of ``x [B, 3, H, W]``: for each ``(op, rows)`` of ``groups`` in turn,
    :func:`adjust` with op ``op`` and ``factors[rows, op]`` on the samples ``rows``. From
    :meth:`ImageAugment.draw`: four steps, each of the four ops in one step on the samples
    whose random order puts it there (disjoint rows), so every jittered sample undergoes
    each op once, in its own order."""
    out = x.clone()
    for op, rows in groups:
        out[rows] = adjust(out[rows], op, factors[rows, op])
    return out


def check_jitter(values: Sequence[float]) -> tuple[float, float, float, float]:
    """``values`` as a (brightness, contrast, saturation, hue) tuple, or ``ValueError``:
    four numbers, each >= 0, the first three factors' spread below 1 (a factor is drawn
    from ``U(1 - v, 1 + v)`` and must stay >= 0) and the hue shift at most 0.5 turn
    (torchvision's ``ColorJitter`` bounds)."""
    vals = tuple(values) if isinstance(values, list | tuple) else ()
    ok = len(vals) == 4 and all(
        isinstance(v, int | float) and not isinstance(v, bool) and v >= 0 for v in vals
    )
    if not ok or max(vals[:3]) > 1 or vals[3] > 0.5:
        raise ValueError(
            "jitter must be four numbers (brightness, contrast, saturation in [0, 1], hue "
            f"in [0, 0.5]), got {values!r}"
        )
    return tuple(float(v) for v in vals)  # type: ignore[return-value]


def view_augments(
    recipe: str,
    image_size: int,
    n_types: int | None = None,
    crop_scale: float | None = None,
    jitter: Sequence[float] | None = None,
    p_jitter: float | None = None,
) -> list[ImageAugment]:
    """The view generators of ``recipe`` (:data:`AUG_RECIPES`), one per view position (the
    training loop cycles through them): ``simclr`` → one :class:`ImageAugment`;
    ``byol`` → BYOL Table 6's two views (see the module docstring). ``jitter`` and
    ``p_jitter`` replace the recipe's colour-jitter strengths and probability."""
    if recipe == "simclr":
        extra = {k: v for k, v in (("jitter", jitter), ("p_jitter", p_jitter)) if v is not None}
        return [ImageAugment(image_size, n_types, crop_scale=crop_scale, **extra)]
    if recipe != "byol":
        raise ValueError(f"aug_recipe must be one of {', '.join(AUG_RECIPES)}, got {recipe!r}")
    if n_types is not None:
        raise ValueError(
            "aug_types chooses among the simclr recipe's types; leave it unset for byol"
        )
    common = ("crop", "flip", "jitter", "grayscale", "blur")
    byol = {
        "crop_scale": crop_scale,
        "jitter": (0.4, 0.4, 0.2, 0.1) if jitter is None else jitter,
        "p_jitter": 0.8 if p_jitter is None else p_jitter,
        "p_gray": 0.2,
    }
    return [
        ImageAugment(image_size, types=common, p_blur=1.0, solarize_p=0.0, **byol),
        ImageAugment(image_size, types=(*common, "solarize"), p_blur=0.1, solarize_p=0.2, **byol),
    ]
