"""Small CNN encoders for 8×8 images and 1-D signals, plus projection/prediction MLPs.

Sized for CPU training: a few convolutions, then a flatten and a linear layer to
``feature_dim`` (the representation evaluated by kNN / linear probes), so the position
information of 40-sample MNIST-1D signals is not averaged away.

Example:
    >>> import torch
    >>> enc = build_encoder("1d", input_shape=(1, 40), feature_dim=64)
    >>> enc(torch.randn(4, 1, 40)).shape
    torch.Size([4, 64])
"""

from __future__ import annotations

import math

from torch import Tensor, nn


class ConvEncoder(nn.Module):
    """Conv-BN-ReLU ×3 (one 2× max-pool after the second), flatten, linear, BN, ReLU.

    Args:
        kind: ``"2d"`` for ``[B, C, H, W]`` images, ``"1d"`` for ``[B, C, L]`` signals.
        input_shape: ``(C, H, W)`` or ``(C, L)``; used to size the final linear layer.
        feature_dim: output width (the representation ``h``).
        width: channels of the first convolution (doubled by the second, before the pool).
    """

    def __init__(
        self, kind: str, input_shape: tuple[int, ...], feature_dim: int = 128, width: int = 32
    ) -> None:
        super().__init__()
        if kind not in ("1d", "2d"):
            raise ValueError(f"kind must be '1d' or '2d', got {kind!r}")
        spatial = 2 if kind == "2d" else 1
        if len(input_shape) != spatial + 1:
            raise ValueError(
                f"input_shape must be (C, *{spatial} spatial dims) for {kind}, got {input_shape}"
            )
        if feature_dim < 1 or width < 1:
            raise ValueError(f"feature_dim and width must be >= 1, got {feature_dim}, {width}")
        conv, bn, pool = (
            (nn.Conv2d, nn.BatchNorm2d, nn.MaxPool2d)
            if kind == "2d"
            else (nn.Conv1d, nn.BatchNorm1d, nn.MaxPool1d)
        )
        channels = input_shape[0]
        self.kind = kind
        self.input_shape = tuple(input_shape)
        self.feature_dim = feature_dim
        self.features = nn.Sequential(
            conv(channels, width, 3, padding=1, bias=False),
            bn(width),
            nn.ReLU(inplace=True),
            conv(width, 2 * width, 3, padding=1, bias=False),
            bn(2 * width),
            nn.ReLU(inplace=True),
            pool(2),
            conv(2 * width, 2 * width, 3, padding=1, bias=False),
            bn(2 * width),
            nn.ReLU(inplace=True),
            nn.Flatten(),
        )
        flat = 2 * width * math.prod(s // 2 for s in input_shape[1:])
        self.head = nn.Sequential(
            nn.Linear(flat, feature_dim, bias=False),
            nn.BatchNorm1d(feature_dim),
            nn.ReLU(inplace=True),
        )

    def forward(self, x: Tensor) -> Tensor:
        """``x [B, *input_shape]`` → features ``[B, feature_dim]``."""
        if x.dim() != len(self.input_shape) + 1 or tuple(x.shape[1:]) != self.input_shape:
            raise ValueError(
                f"x must have shape [B, {', '.join(map(str, self.input_shape))}], "
                f"got {tuple(x.shape)}"
            )
        return self.head(self.features(x))


def build_encoder(
    kind: str, input_shape: tuple[int, ...], feature_dim: int = 128, width: int = 32
) -> ConvEncoder:
    """A :class:`ConvEncoder` for ``kind`` data of ``input_shape``."""
    return ConvEncoder(kind, input_shape, feature_dim, width)


def mlp(
    in_dim: int, hidden_dim: int, out_dim: int, layers: int = 2, last_bn: bool = False
) -> nn.Sequential:
    """Projection / prediction MLP: ``layers - 1`` × (Linear-BN-ReLU), then Linear.

    SimCLR's projector is 2 layers; Barlow Twins' is 3, ending in a Linear; SimSiam's is 3
    with a final BN (``last_bn=True``); SimSiam's predictor is 2 layers with a bottleneck
    ``hidden_dim``.
    """
    if layers < 1:
        raise ValueError(f"layers must be >= 1, got {layers}")
    blocks: list[nn.Module] = []
    dim = in_dim
    for _ in range(layers - 1):
        blocks += [
            nn.Linear(dim, hidden_dim, bias=False),
            nn.BatchNorm1d(hidden_dim),
            nn.ReLU(inplace=True),
        ]
        dim = hidden_dim
    blocks.append(nn.Linear(dim, out_dim, bias=not last_bn))
    if last_bn:
        blocks.append(nn.BatchNorm1d(out_dim, affine=False))
    return nn.Sequential(*blocks)
