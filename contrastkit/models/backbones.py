"""The backbone registry: ``--backbone NAME`` picks the encoder of a run.

* ``conv``: the small CNN of :mod:`.encoders` (digits, MNIST-1D; the default, so existing
  runs are unchanged);
* ``resnet18``, ``resnet34``, ``resnet50``: :class:`~.resnet.ResNet` with the ``cifar``
  stem below 64 px and the ``imagenet`` stem from 64 px (override with ``stem``).

For uint8 image data (kind ``"image"``) the encoder starts with :class:`ImageInput`,
which turns ``x ∈ {0..255}`` into ``(x / 255 - mean) / std`` with the dataset's
per-channel training statistics; float inputs (augmented views, already in [0, 1]) are
only standardised. Frozen features of the raw splits (kNN, linear evaluation) and of
augmented views therefore see the same normalisation.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
from torch import Tensor, nn

from .encoders import ConvEncoder
from .resnet import LAYOUTS, ResNet

BACKBONES: tuple[str, ...] = ("conv", *LAYOUTS)
# the smallest image side each backbone takes: conv's 2× max-pool needs 2 px; a ResNet's
# padded strided convolutions and adaptive pooling take any size
MIN_SIDE: dict[str, int] = {"conv": 2, **dict.fromkeys(LAYOUTS, 1)}
LARGE_IMAGE = 64  # px: from this size on, the imagenet stem (and blur) apply


class ImageInput(nn.Module):
    """``(x / 255 - mean) / std`` for uint8 ``x``, ``(x - mean) / std`` for float ``x``,
    per channel; ``x [B, C, H, W]``."""

    def __init__(self, mean: Sequence[float], std: Sequence[float]) -> None:
        super().__init__()
        if len(mean) != len(std) or any(s <= 0 for s in std):
            raise ValueError(f"mean and std need one entry per channel, std > 0: {mean}, {std}")
        self.register_buffer("mean", torch.tensor(mean, dtype=torch.float32).view(1, -1, 1, 1))
        self.register_buffer("std", torch.tensor(std, dtype=torch.float32).view(1, -1, 1, 1))

    def forward(self, x: Tensor) -> Tensor:
        x = x.float().div_(255.0) if x.dtype == torch.uint8 else x.float()
        return (x - self.mean) / self.std


class ImageEncoder(nn.Module):
    """``ImageInput`` followed by a backbone; exposes the backbone's ``feature_dim``."""

    def __init__(self, backbone: nn.Module, mean: Sequence[float], std: Sequence[float]) -> None:
        super().__init__()
        self.input = ImageInput(mean, std)
        self.backbone = backbone
        self.feature_dim = backbone.feature_dim

    def forward(self, x: Tensor) -> Tensor:
        return self.backbone(self.input(x))


def _resnet(depth: str) -> Callable[..., nn.Module]:
    def build(
        kind: str, input_shape: tuple[int, ...], feature_dim: int, width: int, stem: str | None
    ) -> nn.Module:
        if kind not in ("image", "2d"):
            raise ValueError(f"backbone {depth!r} needs image data, got kind {kind!r}")
        side = min(input_shape[1:])
        chosen = stem or ("imagenet" if side >= LARGE_IMAGE else "cifar")
        return ResNet(depth, chosen, width, in_channels=input_shape[0])

    return build


def _conv(
    kind: str, input_shape: tuple[int, ...], feature_dim: int, width: int, stem: str | None
) -> nn.Module:
    if stem is not None:
        raise ValueError("stem applies to the resnet backbones, not to conv")
    return ConvEncoder("2d" if kind == "image" else kind, input_shape, feature_dim, width)


_BUILDERS: dict[str, Callable[..., nn.Module]] = {"conv": _conv, **{d: _resnet(d) for d in LAYOUTS}}


def build_encoder(
    kind: str,
    input_shape: tuple[int, ...],
    feature_dim: int = 128,
    width: int = 32,
    backbone: str = "conv",
    stem: str | None = None,
    mean: Sequence[float] | None = None,
    std: Sequence[float] | None = None,
) -> nn.Module:
    """The encoder of ``kind`` data of ``input_shape`` with backbone ``backbone``.

    ``width`` is the conv encoder's first channel count or the ResNet's first-stage
    width (64 in He et al.); ``feature_dim`` sizes the conv encoder's output (a ResNet
    outputs its pooled width, see :mod:`.resnet`). ``mean``/``std`` (required for kind
    ``"image"``) feed :class:`ImageInput`.
    """
    if backbone not in _BUILDERS:
        raise ValueError(f"unknown backbone {backbone!r}; available: {', '.join(BACKBONES)}")
    net = _BUILDERS[backbone](kind, tuple(input_shape), feature_dim, width, stem)
    if kind != "image":
        return net
    if mean is None or std is None:
        raise ValueError("image data needs the dataset's mean and std for the encoder input")
    return ImageEncoder(net, mean, std)
