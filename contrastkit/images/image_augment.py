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

* ``crop``: random resized crop to the input size, torchvision's ``RandomResizedCrop``
  (:func:`~.view_draw.crop_boxes`): area fraction ``s ~ U(scale_min, 1)`` (0.08 for
  ImageNet-size images, 0.2 for CIFAR-size, the common CIFAR setting), pixel aspect ratio
  ``exp(U(log 3/4, log 4/3))``, up to 10 candidates until one fits in the image, else the
  centre crop; sides and offsets in fractions of a pixel (torchvision rounds them);
  bilinear resampling with border replication;
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
grayscale p = 0.2 and, from 64 px, Gaussian blur (p = 1.0 on view 1 and 0.1 on view 2;
below 64 px none, as solo-learn's CIFAR views); solarisation p = 0 on view 1 and 0.2 on
view 2.

``n_types = k`` keeps the first ``k`` of AMCL Table 5's order (crop, blur, grayscale,
jitter, flip); the default applies the SimCLR recipe: crop, flip, jitter, grayscale, and
blur from 64 px (MACL App. B.3 uses the first four on CIFAR-10). Colour operations are
skipped for one-channel images.

Where things are: the ops in :mod:`.spatial` (crop and flip as one affine resampling,
blur) and :mod:`.colour` (the jitter as four batched steps); the views of a training
step, all in one pass over the batch, in :mod:`.view_batch`, their random parameters
from one draw in :mod:`.view_draw`. On a GPU the step waits
for no transfer and launches about 125 kernels for SimCLR's two views of a batch (316
before issue #38's pass; 136 for BYOL's pair, which was 661). Compiled
(:meth:`ImageAugment.compile`, what a run with ``compile`` does) the pass is one graph:
Inductor generated 19 kernels (SimCLR) and 30 (BYOL) for it on the CPU.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import torch
from torch import Tensor

from .._optional import KERNEL_BACKENDS, installed, require
from ..engine.device import cuda_capability
from ..models.backbones import LARGE_IMAGE
from .view_batch import (
    Drawn,
    apply,
    check_triton_device,
    compiled_apply,
    stack,
    stackable,
    to_device,
)
from .view_draw import draw_views

TYPES_IMAGE = ("crop", "blur", "grayscale", "jitter", "flip", "solarize")
AUG_RECIPES = ("simclr", "byol")
AMCL_ORDER = TYPES_IMAGE[:5]
# the crop's minimum area below / from LARGE_IMAGE px: the common CIFAR setting, SimCLR's
# Inception crop (App. A)
CROP_SCALE, CROP_SCALE_LARGE = 0.2, 0.08
# colour jitter below / from LARGE_IMAGE px: SimCLR App. A's (0.8 s, 0.8 s, 0.8 s, 0.2 s) at
# strength s = 0.5 (its CIFAR-10 setting, B.9) and s = 1 (its ImageNet default)
JITTER, JITTER_LARGE = (0.4, 0.4, 0.4, 0.1), (0.8, 0.8, 0.8, 0.2)
P_JITTER = 0.8  # SimCLR App. A


class ImageAugment:
    """SimCLR-style random views of image batches (see the module docstring).

    Args:
        image_size: the side of the (square or not) images; decides the defaults.
        n_types: apply the first ``n_types`` (1-5) of AMCL Table 5's order.
        types: explicit type names instead (from :data:`TYPES_IMAGE`).
        crop_scale: minimum crop area fraction (default 0.08 from 64 px, else 0.2).
        jitter: (brightness, contrast, saturation, hue) strengths (default 0.4, 0.4, 0.4,
            0.1 below 64 px, SimCLR's CIFAR strength; 0.8, 0.8, 0.8, 0.2 from 64 px, its
            ImageNet one); see :func:`check_jitter`.
        p_jitter, p_gray, p_blur, solarize_p: probabilities (0.8, 0.2, 0.5, 0.2 when
            ``solarize`` is among the types).
        backend: ``"triton"``: the colour jitter and grayscale as one Triton kernel
            (:mod:`._colour_triton`; CUDA images, or the CPU under ``TRITON_INTERPRET=1``),
            about 110 fewer launches a step; ``"torch"``: torch operators; ``"auto"`` (the
            default): Triton for CUDA images when triton is installed, torch otherwise. On
            an H200 the kernel took a bf16 SimCLR step's views from 3.9 to 2.4 ms of
            host time (fourth GPU session, docs/results/gpu/h200-2026-11-28-train.txt,
            the step breakdown). Compiled views
            (:meth:`compile`) ignore it.

    Call as ``augment(x, generator)``.
    """

    kind = "image"
    compiled = False  # see compile()

    def __init__(
        self,
        image_size: int,
        n_types: int | None = None,
        types: Sequence[str] | None = None,
        crop_scale: float | None = None,
        jitter: tuple[float, float, float, float] | None = None,
        p_jitter: float = P_JITTER,
        p_gray: float = 0.2,
        p_blur: float = 0.5,
        solarize_p: float = 0.2,
        backend: str = "auto",
    ) -> None:
        if backend not in KERNEL_BACKENDS:
            raise ValueError(
                f"backend must be one of {', '.join(KERNEL_BACKENDS)}, got {backend!r}"
            )
        if backend == "triton":
            require("triton", "gpu", "backend='triton'")
        self.backend = backend
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
                ("blur",) if image_size >= LARGE_IMAGE else ()
            )
        self.types = tuple(t for t in TYPES_IMAGE if t in chosen)
        self.crop_scale = (
            crop_scale
            if crop_scale is not None
            else (CROP_SCALE_LARGE if image_size >= LARGE_IMAGE else CROP_SCALE)
        )
        if not 0 < self.crop_scale <= 1:
            raise ValueError(f"crop_scale must be in (0, 1], got {self.crop_scale}")
        for name, p in (("p_jitter", p_jitter), ("p_gray", p_gray), ("p_blur", p_blur),
                        ("solarize_p", solarize_p)):  # fmt: skip
            if not 0 <= p <= 1:
                raise ValueError(f"{name} must be in [0, 1], got {p}")
        if jitter is None:
            jitter = JITTER_LARGE if image_size >= LARGE_IMAGE else JITTER
        self.jitter, self.p_jitter, self.p_gray = check_jitter(jitter), p_jitter, p_gray
        self.p_blur, self.solarize_p = p_blur, solarize_p
        self.kernel_size = max(3, int(0.1 * image_size) // 2 * 2 + 1)

    def __repr__(self) -> str:
        return f"ImageAugment(types={self.types}, crop_scale={self.crop_scale})"

    def __call__(self, x: Tensor, generator: torch.Generator) -> Tensor:
        return self.views(x, generator, 1)[0]

    def views(self, x: Tensor, generator: torch.Generator, n: int) -> list[Tensor]:
        """``n`` views of every sample of ``x``: the results of ``n`` calls, made in one
        pass (see :meth:`batched_views`)."""
        return ImageAugment.batched_views([self], x, generator, n)

    def fuses_colour(self, device: torch.device) -> bool:
        """Whether this augment's colour ops take the Triton kernel on ``device``: its
        backend is ``"triton"``, or ``"auto"`` with triton installed and a CUDA device of
        compute capability 7.0 or more (what Triton compiles for)."""
        if self.backend == "auto":
            cuda = device.type == "cuda"
            return cuda and installed("triton") and cuda_capability(device) >= (7, 0)
        return self.backend == "triton"

    def check_device(self, device: torch.device) -> None:
        """``ValueError`` if this augment cannot make views on ``device`` (its Triton
        backend outside CUDA and the interpreter)."""
        if self.backend == "triton":
            check_triton_device(device)

    def compile(self) -> None:
        """From now on make the views through ``torch.compile``
        (:func:`~.view_batch.compiled_apply`: the fixed-shape form of the ops, compiled
        once per batch shape). The engine calls it in runs that compile (``compile``)."""
        self.compiled = True

    @staticmethod
    def batched_views(
        augments: Sequence[ImageAugment], x: Tensor, generator: torch.Generator, n: int
    ) -> list[Tensor]:
        """``n`` views of every sample of ``x``, view ``v`` by ``augments[v % len]``: the
        results of one call per view (the parameters are drawn view after view, every op
        acts per sample; bit for bit on the CPU, where it is tested; on a GPU a per-image
        mean may be summed in another order for another batch size), made in one pass
        over the ``n·B`` samples (:mod:`.view_batch`), so a GPU launches each kernel once
        for all views. All views' parameters come from one draw
        (:func:`~.view_draw.draw_views`), BYOL's two augments included; augments whose
        parameters cannot share its arithmetic draw one view at a time, and those that
        cannot share a pass (one crops, another does not) get one pass per view. Compiled
        augments (:meth:`compile`) run the ops through ``torch.compile``."""
        if not isinstance(x, Tensor) or x.dim() != 4:
            got = tuple(x.shape) if isinstance(x, Tensor) else type(x).__name__
            raise ValueError(f"x must have shape [B, C, H, W] for image augmentations, got {got}")
        x = x.float().div(255.0) if x.dtype == torch.uint8 else x.float()
        b, color = x.shape[0], x.shape[1] == 3
        compiled = all(a.compiled for a in augments)
        fused = not compiled and all(a.fuses_colour(x.device) for a in augments)
        if compiled:
            run = compiled_apply()
        elif fused:
            run = functools.partial(apply, fused=True)
        else:
            run = apply
        rows = not (compiled or fused)
        views = [augments[v % len(augments)] for v in range(n)]
        aspect = x.shape[2] / x.shape[3]
        drawn = draw_views(views, b, generator, color, aspect)
        if drawn is None:  # e.g. one crops, another does not: one draw per view
            each = [view._draw(b, generator, color, aspect) for view in views]
            if not stackable(each):
                return [run(x, to_device(d, x.device, rows)) for d in each]
            drawn = stack(each)
        p = to_device(drawn, x.device, rows)
        return list(run(x.repeat(n, 1, 1, 1) if n > 1 else x, p).split(b))

    def _draw(
        self, b: int, g: torch.Generator, color: bool, aspect: float = 1.0, n: int = 1
    ) -> Drawn:
        """The parameters of ``n`` views of ``b`` samples of images of ``aspect`` = height /
        width by this augment (``n·B`` rows, view after view), drawn on the CPU from ``g``
        (:func:`~.view_draw.draw_views`)."""
        drawn = draw_views([self] * n, b, g, color, aspect)
        assert drawn is not None  # one augment always shares its arithmetic
        return drawn


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
    backend: str = "auto",
) -> list[ImageAugment]:
    """The view generators of ``recipe`` (:data:`AUG_RECIPES`), one per view position (the
    training loop cycles through them): ``simclr`` → one :class:`ImageAugment`;
    ``byol`` → BYOL Table 6's two views (see the module docstring). ``jitter`` and
    ``p_jitter`` replace the recipe's colour-jitter strengths and probability; ``backend``
    is :class:`ImageAugment`'s."""
    if recipe == "simclr":
        extra = {k: v for k, v in (("jitter", jitter), ("p_jitter", p_jitter)) if v is not None}
        return [ImageAugment(image_size, n_types, crop_scale=crop_scale, backend=backend, **extra)]
    if recipe != "byol":
        raise ValueError(f"aug_recipe must be one of {', '.join(AUG_RECIPES)}, got {recipe!r}")
    if n_types is not None:
        raise ValueError(
            "aug_types chooses among the simclr recipe's types; leave it unset for byol"
        )
    # Gaussian blur from LARGE_IMAGE px, as the simclr recipe: BYOL's Table 6 is an
    # ImageNet recipe, and solo-learn's CIFAR asymmetric views set blur's p to 0 on both
    common = ("crop", "flip", "jitter", "grayscale") + (
        ("blur",) if image_size >= LARGE_IMAGE else ()
    )
    byol = {
        "crop_scale": crop_scale,
        "jitter": (0.4, 0.4, 0.2, 0.1) if jitter is None else jitter,
        "p_jitter": 0.8 if p_jitter is None else p_jitter,
        "p_gray": 0.2,
        "backend": backend,
    }
    return [
        ImageAugment(image_size, types=common, p_blur=1.0, solarize_p=0.0, **byol),
        ImageAugment(image_size, types=(*common, "solarize"), p_blur=0.1, solarize_p=0.2, **byol),
    ]
