"""ResNet-18/34/50 (He et al., 2016) in plain torch, with a CIFAR or an ImageNet stem.

The layout follows the paper's Table 1 and torchvision's reference (which cannot be a
dependency here: its wheels are CUDA builds): BasicBlock ×[2,2,2,2] (18), ×[3,4,6,3] (34),
Bottleneck ×[3,4,6,3] (50, expansion 4, stride on the 3×3 convolution as in "ResNet
v1.5"), batch norm after every convolution, a 1×1 convolution + BN on the shortcut when
shape changes, He-normal (fan-out) initialisation of the convolutions. With a 1000-class
head the parameter counts equal torchvision's: 11,689,512 (18), 21,797,672 (34),
25,557,032 (50) (tested).

Stems:

* ``imagenet``: 7×7 convolution stride 2, batch norm, ReLU, 3×3 max-pool stride 2;
* ``cifar``: 3×3 convolution stride 1, batch norm, ReLU, no max-pool (MACL App. B.3,
  the usual SimCLR CIFAR variant), so 32×32 inputs reach the last stage at 4×4.

``width`` is the channel count of the first stage (64 in the paper); the stages have
``width·(1, 2, 4, 8)`` channels (× 4 for Bottleneck outputs). The encoder returns the
global-average-pooled features ``h [B, feature_dim]`` with ``feature_dim = 8·width``
(BasicBlock) or ``32·width`` (Bottleneck), 512 / 2048 at the standard width.

Example:
    >>> import torch
    >>> net = ResNet("resnet18", stem="cifar", width=8)
    >>> net(torch.randn(2, 3, 32, 32)).shape
    torch.Size([2, 64])
"""

from __future__ import annotations

from torch import Tensor, nn

LAYOUTS: dict[str, tuple[str, tuple[int, ...]]] = {
    "resnet18": ("basic", (2, 2, 2, 2)),
    "resnet34": ("basic", (3, 4, 6, 3)),
    "resnet50": ("bottleneck", (3, 4, 6, 3)),
}
STEMS = ("cifar", "imagenet")


def _conv_bn(c_in: int, c_out: int, k: int, stride: int = 1) -> list[nn.Module]:
    return [nn.Conv2d(c_in, c_out, k, stride, k // 2, bias=False), nn.BatchNorm2d(c_out)]


class BasicBlock(nn.Module):
    """``ReLU(BN(conv3(ReLU(BN(conv3(x))))) + shortcut(x))``."""

    expansion = 1

    def __init__(self, c_in: int, width: int, stride: int) -> None:
        super().__init__()
        self.body = nn.Sequential(
            *_conv_bn(c_in, width, 3, stride), nn.ReLU(inplace=True), *_conv_bn(width, width, 3)
        )
        self.shortcut = _shortcut(c_in, width, stride)

    def forward(self, x: Tensor) -> Tensor:
        return (self.body(x) + self.shortcut(x)).relu_()


class Bottleneck(nn.Module):
    """1×1 reduce, 3×3 (strided), 1×1 expand to ``4·width``, plus the shortcut."""

    expansion = 4

    def __init__(self, c_in: int, width: int, stride: int) -> None:
        super().__init__()
        out = width * self.expansion
        self.body = nn.Sequential(
            *_conv_bn(c_in, width, 1),
            nn.ReLU(inplace=True),
            *_conv_bn(width, width, 3, stride),
            nn.ReLU(inplace=True),
            *_conv_bn(width, out, 1),
        )
        self.shortcut = _shortcut(c_in, out, stride)

    def forward(self, x: Tensor) -> Tensor:
        return (self.body(x) + self.shortcut(x)).relu_()


def _shortcut(c_in: int, c_out: int, stride: int) -> nn.Module:
    if stride == 1 and c_in == c_out:
        return nn.Identity()
    return nn.Sequential(nn.Conv2d(c_in, c_out, 1, stride, bias=False), nn.BatchNorm2d(c_out))


class ResNet(nn.Module):
    """A ResNet trunk (no classifier): ``x [B, C, H, W]`` → ``h [B, feature_dim]``.

    Args:
        depth: ``"resnet18"``, ``"resnet34"`` or ``"resnet50"``.
        stem: ``"cifar"`` or ``"imagenet"`` (see the module docstring).
        width: first-stage channels (64 in He et al.).
        in_channels: input channels (3 for RGB, 1 for MNIST).
        zero_init_residual: zero the last BN scale of each block (Goyal et al., 2017);
            off by default, as in torchvision.
    """

    def __init__(
        self,
        depth: str = "resnet18",
        stem: str = "cifar",
        width: int = 64,
        in_channels: int = 3,
        zero_init_residual: bool = False,
    ) -> None:
        super().__init__()
        if depth not in LAYOUTS:
            raise ValueError(f"depth must be one of {tuple(LAYOUTS)}, got {depth!r}")
        if stem not in STEMS:
            raise ValueError(f"stem must be one of {STEMS}, got {stem!r}")
        if not isinstance(width, int) or width < 1 or in_channels < 1:
            raise ValueError(f"width and in_channels must be >= 1, got {width}, {in_channels}")
        kind, counts = LAYOUTS[depth]
        block = BasicBlock if kind == "basic" else Bottleneck
        if stem == "cifar":
            layers: list[nn.Module] = [*_conv_bn(in_channels, width, 3), nn.ReLU(inplace=True)]
        else:
            layers = [
                *_conv_bn(in_channels, width, 7, 2),
                nn.ReLU(inplace=True),
                nn.MaxPool2d(3, 2, 1),
            ]
        c_in = width
        for stage, count in enumerate(counts):
            planes = width * 2**stage
            for i in range(count):
                layers.append(block(c_in, planes, 2 if stage > 0 and i == 0 else 1))
                c_in = planes * block.expansion
        layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten()]
        self.net = nn.Sequential(*layers)
        self.depth, self.stem, self.in_channels = depth, stem, in_channels
        self.feature_dim = c_in
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
        if zero_init_residual:
            for m in self.modules():
                if isinstance(m, BasicBlock | Bottleneck):
                    nn.init.zeros_(m.body[-1].weight)

    def forward(self, x: Tensor) -> Tensor:
        if x.dim() != 4 or x.shape[1] != self.in_channels:
            raise ValueError(
                f"x must have shape [B, {self.in_channels}, H, W], got {tuple(x.shape)}"
            )
        return self.net(x)
