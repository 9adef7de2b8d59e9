"""Augmentations: each type does what its docstring says, per sample, reproducibly."""

from __future__ import annotations

import pytest
import torch

from contrastkit.images import TYPES_1D, TYPES_2D, Augment


def gen(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


@pytest.mark.parametrize(("kind", "shape"), [("2d", (16, 1, 8, 8)), ("1d", (16, 1, 40))])
def test_shape_dtype_and_reproducibility(kind: str, shape: tuple[int, ...]) -> None:
    x = torch.rand(shape)
    aug = Augment(kind)
    a, b, c = aug(x, gen(0)), aug(x, gen(0)), aug(x, gen(1))
    assert a.shape == x.shape and a.dtype == x.dtype
    assert torch.equal(a, b) and not torch.equal(a, c)
    assert torch.isfinite(a).all()


def test_n_types_keeps_the_first_types_in_order() -> None:
    assert Augment("2d", 2).types == TYPES_2D[:2] == ("crop", "rotation")
    assert Augment("1d", 5).types == TYPES_1D
    assert Augment("1d", types=["noise", "shift"]).types == ("shift", "noise")
    for bad in (0, 6, 2.0):
        with pytest.raises(ValueError, match="n_types"):
            Augment("1d", bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="subset"):
        Augment("2d", types=["flip"])
    with pytest.raises(ValueError, match=r"\[B, C, L\]"):
        Augment("1d")(torch.rand(4, 40), gen())


def test_1d_mask_zeroes_one_contiguous_fifth_per_sample() -> None:
    out = Augment("1d", types=["mask"])(torch.ones(64, 1, 40), gen())
    zeros = out[:, 0] == 0
    assert (zeros.sum(1) == 8).all()
    first = zeros.float().argmax(1)
    for row, start in zip(zeros, first, strict=True):  # contiguous span
        assert row[start : start + 8].all()
    assert len(set(first.tolist())) > 1  # different position per sample


def test_1d_scale_multiplies_each_sample_by_one_factor_in_range() -> None:
    x = torch.rand(64, 1, 40) + 0.5
    ratio = Augment("1d", types=["scale"])(x, gen()) / x
    per_sample = ratio[:, 0, 0]
    assert torch.allclose(ratio, per_sample[:, None, None].expand_as(ratio), atol=1e-6)
    assert float(per_sample.min()) >= 0.7 and float(per_sample.max()) <= 1.3
    assert float(per_sample.std()) > 0.05


def test_1d_shift_translates_with_zero_fill_and_keeps_shape_of_a_ramp() -> None:
    ones = Augment("1d", types=["shift"])(torch.ones(64, 1, 40), gen())
    middle = ones[:, 0, 8:32]
    assert torch.allclose(middle, torch.ones_like(middle))  # shift ≤ 10 %: the middle is intact
    assert (ones[:, 0, 0] < 1).any() and (ones[:, 0, -1] < 1).any()  # both directions occur
    assert (ones >= 0).all() and (ones <= 1 + 1e-6).all()


def test_2d_noise_and_dropout_statistics() -> None:
    x = torch.ones(256, 1, 8, 8)
    noisy = Augment("2d", types=["noise"])(x, gen()) - x
    assert abs(float(noisy.std()) - 0.1) < 0.01 and abs(float(noisy.mean())) < 0.01
    dropped = Augment("2d", types=["dropout"])(x, gen())
    assert set(dropped.unique().tolist()) == {0.0, 1.0}
    assert abs(float((dropped == 0).float().mean()) - 0.1) < 0.02


def test_2d_rotation_keeps_the_centre_and_crop_zooms_in() -> None:
    # a constant image stays constant near the centre under rotation by ≤ 15°
    rot = Augment("2d", types=["rotation"])(torch.ones(32, 1, 8, 8), gen())
    assert torch.allclose(rot[:, :, 3:5, 3:5], torch.ones(32, 1, 2, 2), atol=1e-5)
    # a centred bright square grows (or stays) under a zooming crop: mass never drops
    img = torch.zeros(32, 1, 8, 8)
    img[:, :, 2:6, 2:6] = 1.0
    crop = Augment("2d", types=["crop"])(img, gen())
    assert (crop.sum(dim=(1, 2, 3)) >= 0.9 * 16).all()
    assert not torch.allclose(crop[0], crop[1])
