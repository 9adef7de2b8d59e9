"""One draw for the views of different augments (``view_draw.draw_views``): the parameters
of one call per view, bit for bit, from one ``torch.rand`` call; or ``None`` where the
augments cannot share the arithmetic."""

from __future__ import annotations

import pytest
import torch

from contrastkit.images.image_augment import ImageAugment, view_augments
from contrastkit.images.view_batch import stack
from contrastkit.images.view_draw import draw_views

SHARING = {
    "byol": lambda: view_augments("byol", 64),  # blur p 1.0 / 0.1, solarize on one only
    "gray on one, blur and solarize on the other": lambda: [
        ImageAugment(32, types=("crop", "flip", "jitter", "grayscale"), p_gray=0.7),
        ImageAugment(32, types=("crop", "flip", "jitter", "blur", "solarize"), p_blur=0.3),
    ],
    "jitter probabilities": lambda: [ImageAugment(32, p_jitter=0.1), ImageAugment(32)],
}


@pytest.mark.parametrize("pair", list(SHARING))
@pytest.mark.parametrize("color", [True, False])
def test_different_augments_draw_as_one_call_per_view(pair: str, color: bool) -> None:
    """Three views cycling through two augments: every column equals the stacked per-view
    draws (a view without a type gets its neutral value), the jitter's row sets and blend
    flags too, and the generator ends where the per-view draws leave it."""
    augs = SHARING[pair]()
    views = [augs[v % 2] for v in range(3)]
    g1, g2 = torch.Generator().manual_seed(4), torch.Generator().manual_seed(4)
    each = stack([view._draw(5, g1, color) for view in views])
    joint = draw_views(views, 5, g2, color)
    assert joint is not None and torch.equal(g1.get_state(), g2.get_state())
    assert joint.cols.keys() == each.cols.keys()
    for name, col in each.cols.items():
        assert torch.equal(joint.cols[name], col), name
    assert len(joint.hue_rows) == len(each.hue_rows) and joint.blends == each.blends
    assert all(torch.equal(a, b) for a, b in zip(joint.hue_rows, each.hue_rows, strict=True))


@pytest.mark.parametrize(
    "first,second",
    [
        (ImageAugment(32), ImageAugment(32, types=("flip", "jitter"))),  # one crops
        (ImageAugment(32), ImageAugment(32, crop_scale=0.5)),
        (ImageAugment(32), ImageAugment(32, jitter=(0.4, 0.4, 0.4, 0.4))),
        (ImageAugment(32, types=("crop", "blur")), ImageAugment(96, types=("crop", "blur"))),
    ],
    ids=["crop and not", "crop scales", "jitter strengths", "blur kernels"],
)
def test_augments_that_cannot_share_the_arithmetic_get_none_and_leave_the_generator(
    first: ImageAugment, second: ImageAugment
) -> None:
    g = torch.Generator().manual_seed(0)
    state = g.get_state()
    assert draw_views([first, second], 4, g, True) is None
    assert torch.equal(g.get_state(), state)
