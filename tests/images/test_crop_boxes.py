"""The random resized crop (``view_draw.crop_boxes``) against a loop written from
torchvision's ``RandomResizedCrop.get_params`` (up to 10 candidates of area ``s·H·W`` and
pixel aspect ratio ``r``; the first that fits; else the centre crop of the image's aspect
ratio clamped to [3/4, 4/3]), in float64 and continuous coordinates, on the same uniform
numbers; and the realized areas, which the former cap-at-the-image rule made larger."""

from __future__ import annotations

import math

import pytest
import torch

from contrastkit.images.image_augment import ImageAugment
from contrastkit.images.view_draw import CROP_TRIES, crop_boxes


def reference(u: torch.Tensor, scale_min: float, height: int, width: int) -> list[list[float]]:
    """Per sample: (left, top, width, height) as fractions of the image."""
    boxes = []
    for col in u.double().T.tolist():
        areas, logs, (u_left, u_top) = col[:10], col[10:20], col[20:]
        for u_area, u_log in zip(areas, logs, strict=True):
            area = (scale_min + u_area * (1 - scale_min)) * height * width
            ratio = math.exp(math.log(3 / 4) + u_log * (math.log(4 / 3) - math.log(3 / 4)))
            w, h = math.sqrt(area * ratio), math.sqrt(area / ratio)
            if w <= width and h <= height:
                boxes.append(
                    [u_left * (1 - w / width), u_top * (1 - h / height), w / width, h / height]
                )
                break
        else:
            in_ratio = width / height
            w, h = float(width), float(height)
            if in_ratio < 3 / 4:
                h = w / (3 / 4)
            elif in_ratio > 4 / 3:
                w = h * (4 / 3)
            boxes.append([(1 - w / width) / 2, (1 - h / height) / 2, w / width, h / height])
    return boxes


@pytest.mark.parametrize(
    "scale_min,height,width", [(0.08, 32, 32), (0.2, 32, 32), (1.0, 32, 32), (0.08, 160, 320),
                               (0.5, 300, 100), (1.0, 90, 40), (1.0, 40, 90)]
)  # fmt: skip
def test_crops_are_torchvision_get_params_on_the_same_numbers(
    scale_min: float, height: int, width: int
) -> None:
    u = torch.rand(2 * CROP_TRIES + 2, 4000, generator=torch.Generator().manual_seed(0))
    got = crop_boxes(u, scale_min, height / width)
    want = torch.tensor(reference(u, scale_min, height, width), dtype=torch.float64)
    torch.testing.assert_close(got.double(), want, rtol=2e-6, atol=2e-6)
    assert (got[:, 2:] <= 1).all() and (got[:, :2] >= 0).all()
    assert (got[:, :2] + got[:, 2:] <= 1 + 1e-6).all()


def test_a_crop_of_the_whole_area_is_the_whole_square_image() -> None:
    """``crop_scale`` 1: every candidate whose ratio is not 1 sticks out, so the crop is
    the fallback, all of a square image (the cap made it a full side and a cut one)."""
    u = torch.rand(2 * CROP_TRIES + 2, 1000, generator=torch.Generator().manual_seed(1))
    box = crop_boxes(u, 1.0, 1.0)
    assert torch.equal(box, torch.tensor([[0.0, 0.0, 1.0, 1.0]]).expand(1000, 4))


def test_realized_areas_follow_rejection_sampling() -> None:
    """Mean crop area at scale (0.08, 1) on square images: rejection keeps candidates
    that fit, about 0.48 of the image (measured with torchvision's rule, 10,000 crops);
    capping the sides made it 0.53. The pixel aspect ratio stays in [3/4, 4/3]."""
    aug = ImageAugment(224, types=("crop",))
    drawn = aug._draw(20_000, torch.Generator().manual_seed(2), True)
    theta = drawn.cols["theta"]
    w, h = theta[:, 0, 0].abs(), theta[:, 1, 1]
    assert abs((w * h).mean().item() - 0.48) < 0.01
    assert ((w / h) >= 3 / 4 - 1e-6).all() and ((w / h) <= 4 / 3 + 1e-6).all()
