"""Stochastic augmentations in plain torch (no torchvision), vectorised over the batch.

Every transform draws its random parameters from an explicit ``torch.Generator`` so a run
is reproducible and a resumed run replays the same views. The number of augmentation
types is configurable (AMCL Table 5 varies it): ``n_types = k`` keeps the first ``k``
types of the kind's ordered list.

2-D (images ``[B, C, H, W]``), in order:

1. ``crop``: random resized crop: zoom on a random square covering 50-100 % of the area,
   plus a shift of up to one pixel (one affine resampling, zero padding);
2. ``rotation``: uniform angle in ±15°;
3. ``noise``: additive Gaussian noise, σ = 0.1;
4. ``dropout``: each pixel zeroed with probability 0.1;
5. ``intensity``: multiply by a factor uniform in [0.7, 1.3].

1-D (signals ``[B, C, L]``), in order:

1. ``shift``: translation by up to ±10 % of the length (zero fill);
2. ``stretch``: time scaling by a factor uniform in [0.85, 1.15] about the centre;
3. ``scale``: amplitude factor uniform in [0.7, 1.3];
4. ``noise``: additive Gaussian noise, σ = 0.1;
5. ``mask``: one random contiguous span of 20 % of the length set to zero.

The magnitudes are this project's choices for 8×8 digits and 40-sample MNIST-1D signals.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
import torch.nn.functional as tf
from torch import Tensor

TYPES_2D = ("crop", "rotation", "noise", "dropout", "intensity")
TYPES_1D = ("shift", "stretch", "scale", "noise", "mask")
TYPES = {"2d": TYPES_2D, "1d": TYPES_1D}


def _uniform(n: int, low: float, high: float, g: torch.Generator) -> Tensor:
    return torch.rand(n, generator=g) * (high - low) + low


class Augment:
    """A random view generator for one data kind.

    Args:
        kind: ``"2d"`` or ``"1d"``.
        n_types: how many augmentation types to apply (1-5, the first ``n_types`` of the
            kind's list); ``None`` applies all five.
        types: an explicit subset of the kind's type names instead of ``n_types``.

    Call as ``augment(x, generator)``; returns a new tensor of the same shape and dtype.
    """

    def __init__(
        self, kind: str, n_types: int | None = None, types: Sequence[str] | None = None
    ) -> None:
        if kind not in TYPES:
            raise ValueError(f"kind must be one of {tuple(TYPES)}, got {kind!r}")
        names = TYPES[kind]
        if types is not None:
            if n_types is not None:
                raise ValueError("give n_types or types, not both")
            unknown = [t for t in types if t not in names]
            if unknown or not types:
                raise ValueError(f"types must be a non-empty subset of {names}, got {tuple(types)}")
            self.kind, self.types = kind, tuple(t for t in names if t in types)
            return
        n = len(names) if n_types is None else n_types
        if not isinstance(n, int) or not 1 <= n <= len(names):
            raise ValueError(
                f"n_types must be an int in [1, {len(names)}] for {kind}, got {n_types!r}"
            )
        self.kind = kind
        self.types = names[:n]

    def __repr__(self) -> str:
        return f"Augment(kind={self.kind!r}, types={self.types})"

    def __call__(self, x: Tensor, generator: torch.Generator) -> Tensor:
        expected = 4 if self.kind == "2d" else 3
        if not isinstance(x, Tensor) or x.dim() != expected:
            shape = "[B, C, H, W]" if self.kind == "2d" else "[B, C, L]"
            got = tuple(x.shape) if isinstance(x, Tensor) else type(x).__name__
            raise ValueError(f"x must have shape {shape} for {self.kind} augmentations, got {got}")
        return self._two_d(x, generator) if self.kind == "2d" else self._one_d(x, generator)

    def _two_d(self, x: Tensor, g: torch.Generator) -> Tensor:
        b = x.shape[0]
        t = set(self.types)
        if t & {"crop", "rotation"}:
            side = _uniform(b, math.sqrt(0.5), 1.0, g) if "crop" in t else torch.ones(b)
            room = 1.0 - side + (2.0 / x.shape[-1] if "crop" in t else 0.0)
            tx, ty = (_uniform(b, -1.0, 1.0, g) * room for _ in range(2))
            angle = (
                _uniform(b, -math.pi / 12, math.pi / 12, g) if "rotation" in t else torch.zeros(b)
            )
            cos, sin = torch.cos(angle) * side, torch.sin(angle) * side
            theta = torch.stack(
                [torch.stack([cos, -sin, tx], 1), torch.stack([sin, cos, ty], 1)], 1
            )
            grid = tf.affine_grid(theta.to(x.device, x.dtype), list(x.shape), align_corners=False)
            x = tf.grid_sample(x, grid, padding_mode="zeros", align_corners=False)
        return self._pointwise(x, g, t)

    def _one_d(self, x: Tensor, g: torch.Generator) -> Tensor:
        b, _, length = x.shape
        t = set(self.types)
        if t & {"shift", "stretch"}:
            shift = _uniform(b, -0.2, 0.2, g) if "shift" in t else torch.zeros(b)
            stretch = _uniform(b, 0.85, 1.15, g) if "stretch" in t else torch.ones(b)
            pos = (torch.arange(length) + 0.5) * (2.0 / length) - 1.0  # pixel centres in [-1, 1]
            gx = pos[None] / stretch[:, None] - shift[:, None]
            grid = torch.stack([gx, torch.zeros_like(gx)], -1)[:, None].to(x.device, x.dtype)
            x = tf.grid_sample(x[:, :, None], grid, padding_mode="zeros", align_corners=False)[
                :, :, 0
            ]
        if "scale" in t:
            x = x * _uniform(b, 0.7, 1.3, g).to(x.device, x.dtype).view(b, 1, 1)
        if "mask" in t:
            span = max(1, round(0.2 * length))
            start = torch.randint(0, length - span + 1, (b, 1), generator=g)
            idx = torch.arange(length)[None]
            keep = (idx < start) | (idx >= start + span)
            x = x * keep[:, None].to(x.device, x.dtype)
        return self._pointwise(x, g, t)

    @staticmethod
    def _pointwise(x: Tensor, g: torch.Generator, t: set[str]) -> Tensor:
        shape = (x.shape[0],) + (1,) * (x.dim() - 1)
        if "intensity" in t:
            x = x * _uniform(x.shape[0], 0.7, 1.3, g).to(x.device, x.dtype).view(shape)
        if "dropout" in t:
            x = x * (torch.rand(x.shape, generator=g) >= 0.1).to(x.device, x.dtype)
        if "noise" in t:
            x = x + 0.1 * torch.randn(x.shape, generator=g).to(x.device, x.dtype)
        return x
