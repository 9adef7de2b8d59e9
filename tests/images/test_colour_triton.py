"""The colour jitter and grayscale as one Triton kernel (``ImageAugment(backend="triton")``,
issue #38) against the torch path: per-step blends and hue shifts in each sample's order,
the contrast step's image mean, grey pixels and ties, images larger than a block.

Without a GPU the kernel runs in Triton's CPU interpreter (``TRITON_INTERPRET=1``, set by
``tests/conftest.py``)."""

from __future__ import annotations

import pytest
import torch

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
pytest.importorskip("triton", reason="backend='triton' needs the gpu extra (triton)")

from contrastkit.images._colour_triton import jitter_and_gray  # noqa: E402
from contrastkit.images.colour import JitterPlan, gray, jitter, plan_jitter  # noqa: E402
from contrastkit.images.image_augment import ImageAugment, view_augments  # noqa: E402


def _plan(b: int, g: torch.Generator, p: float = 0.8) -> JitterPlan:
    factors = torch.stack(
        [torch.rand(b, generator=g) * 0.8 + 0.6 for _ in range(3)]
        + [torch.rand(b, generator=g) * 0.8 - 0.4],
        1,
    )
    order = torch.rand(b, 4, generator=g).argsort(1)
    return plan_jitter(torch.rand(b, generator=g) < p, factors, order)


@pytest.mark.parametrize("side", [5, 33])  # 33² = 1,089 pixels: two blocks of 1,024
@pytest.mark.parametrize("with_gray", [False, True])
def test_kernel_is_the_torch_jitter_then_grayscale(side: int, with_gray: bool) -> None:
    g = torch.Generator().manual_seed(side)
    b = 10
    x = torch.rand(b, 3, side, side, generator=g)
    x[0] = torch.tensor([0.5, 0.5, 0.2]).view(3, 1, 1)  # ties for the maximum (r = g)
    x[1] = 0.25  # grey: no chroma, hue left at 0
    x[2, :, ::2] = (x[2, :, ::2] * 4).round() / 4  # quantised: many ties
    plan = _plan(b, g)
    mask = torch.rand(b, generator=g) < 0.4 if with_gray else None
    want = jitter(x, plan)
    if mask is not None:
        want = torch.where(mask.view(-1, 1, 1, 1), gray(want).expand_as(want), want)
    got = jitter_and_gray(x.to(DEVICE), plan.coef.to(DEVICE), plan.hue.to(DEVICE),
                          None if mask is None else mask.to(DEVICE)).cpu()  # fmt: skip
    assert (got - want).abs().max() < 2e-6
    untouched = ~plan.hue.any(1) & (plan.coef[:, :, 0] == 1).all(1)
    if mask is not None:
        untouched &= ~mask
    assert torch.equal(got[untouched], x[untouched])


def test_the_contrast_step_takes_the_mean_of_the_image_at_that_step() -> None:
    """Brightness first, then contrast: the contrast blends towards the mean luma of the
    brightened image, not of the input (the kernel's first sweep)."""
    x = torch.rand(2, 3, 6, 6, generator=torch.Generator().manual_seed(1)) * 0.5
    order = torch.tensor([[0, 1, 2, 3], [1, 0, 2, 3]])
    factors = torch.tensor([[1.6, 0.3, 1.0, 0.0], [1.6, 0.3, 1.0, 0.0]])
    plan = plan_jitter(torch.tensor([True, True]), factors, order)
    got = jitter_and_gray(x.to(DEVICE), plan.coef.to(DEVICE), plan.hue.to(DEVICE), None).cpu()
    assert (got - jitter(x, plan)).abs().max() < 2e-6
    assert not torch.allclose(got[0], got[1], atol=1e-3)  # the order matters


@pytest.mark.parametrize("recipe,side", [("simclr", 32), ("byol", 64)])
def test_triton_views_are_the_torch_views(recipe: str, side: int) -> None:
    """Through the augment: the same generator gives the torch views to rounding, and leaves
    the generator where the torch path leaves it."""
    x = torch.randint(0, 256, (4, 3, side, side), dtype=torch.uint8)
    g1, g2 = torch.Generator().manual_seed(3), torch.Generator().manual_seed(3)
    want = ImageAugment.batched_views(view_augments(recipe, side), x, g1, 2)
    triton_augs = view_augments(recipe, side, backend="triton")
    got = ImageAugment.batched_views(triton_augs, x.to(DEVICE), g2, 2)
    assert all((a - b.cpu()).abs().max() < 1e-5 for a, b in zip(want, got, strict=True))
    assert torch.equal(g1.get_state(), g2.get_state())


def test_backend_is_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValueError, match="backend must be one of auto, torch, triton, got 'cuda'"):
        ImageAugment(32, backend="cuda")
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    if DEVICE == "cpu":
        aug = ImageAugment(32, backend="triton")
        x = torch.zeros(2, 3, 8, 8)
        with pytest.raises(ValueError, match="needs a CUDA device, got cpu"):
            aug(x, torch.Generator())
