"""ResNet backbones: torchvision's published parameter counts, stems, the registry."""

from __future__ import annotations

import pytest
import torch

from contrastkit.models import BACKBONES, ImageInput, ResNet, build_encoder


@pytest.mark.parametrize(
    ("depth", "expected"),
    [("resnet18", 11_689_512), ("resnet34", 21_797_672), ("resnet50", 25_557_032)],
)
def test_parameter_count_with_1000_class_head_equals_torchvision(depth: str, expected: int) -> None:
    net = ResNet(depth, stem="imagenet")
    head = net.feature_dim * 1000 + 1000
    assert sum(p.numel() for p in net.parameters()) + head == expected


def test_cifar_stem_keeps_resolution_and_imagenet_stem_quarters_it() -> None:
    cifar, imnet = ResNet("resnet18", "cifar", width=4), ResNet("resnet18", "imagenet", width=4)
    stem_c, stem_i = cifar.net[:3], imnet.net[:4]
    x = torch.randn(2, 3, 32, 32)
    assert stem_c(x).shape == (2, 4, 32, 32) and stem_i(x).shape == (2, 4, 8, 8)
    assert cifar.net[0].kernel_size == (3, 3) and cifar.net[0].stride == (1, 1)
    assert not any(isinstance(m, torch.nn.MaxPool2d) for m in cifar.modules())
    assert cifar(x).shape == (2, 32)  # 8 · width
    assert ResNet("resnet50", "cifar", width=2)(x).shape == (2, 64)  # 32 · width


def test_backbone_registry_and_image_input() -> None:
    assert BACKBONES == ("conv", "resnet18", "resnet34", "resnet50")
    enc = build_encoder("image", (1, 28, 28), backbone="resnet18", width=4, mean=[0.5], std=[0.25])
    x = torch.full((2, 1, 28, 28), 255, dtype=torch.uint8)
    assert enc(x).shape == (2, 32) and enc.feature_dim == 32
    assert torch.allclose(ImageInput([0.5], [0.25])(x), torch.full((2, 1, 28, 28), 2.0))
    small = build_encoder("image", (3, 32, 32), 16, 4, mean=[0.5] * 3, std=[0.2] * 3)
    assert small(torch.zeros(2, 3, 32, 32, dtype=torch.uint8)).shape == (2, 16)  # conv default
    with pytest.raises(ValueError, match="unknown backbone 'vit'"):
        build_encoder("image", (3, 32, 32), backbone="vit", mean=[0] * 3, std=[1] * 3)
    with pytest.raises(ValueError, match="needs image data"):
        build_encoder("1d", (1, 40), backbone="resnet18")
