"""The image modality's notes on core settings (``--help``'s "image: default ...") are
built from the constants its views and linear evaluation use, so they cannot drift."""

from __future__ import annotations

import inspect

from contrastkit.evaluation import linear_eval
from contrastkit.images.image_augment import (
    CROP_SCALE,
    CROP_SCALE_LARGE,
    JITTER,
    JITTER_LARGE,
    P_JITTER,
    ImageAugment,
)
from contrastkit.images.imagefolder import CACHE_ENV, default_cache_dir
from contrastkit.images.trainer import ImageTrainer
from contrastkit.models.backbones import LARGE_IMAGE
from contrastkit.training import setting_notes


def test_the_view_defaults_are_the_noted_ones() -> None:
    small, large = ImageAugment(LARGE_IMAGE - 1), ImageAugment(LARGE_IMAGE)
    assert (small.crop_scale, large.crop_scale) == (CROP_SCALE, CROP_SCALE_LARGE)
    assert "blur" not in small.types and "blur" in large.types
    assert (small.jitter, small.p_jitter) == (JITTER, P_JITTER)
    # SimCLR App. A: strength s = 0.5 (its CIFAR setting) below, s = 1 (ImageNet) from 64 px
    assert JITTER == (0.4, 0.4, 0.4, 0.1) and large.jitter == JITTER_LARGE == (0.8, 0.8, 0.8, 0.2)
    assert setting_notes("crop_scale") == (
        f"image: default {CROP_SCALE}, {CROP_SCALE_LARGE} from {LARGE_IMAGE} px"
    )
    assert setting_notes("jitter") == (
        "image: default "
        + ",".join(f"{v:g}" for v in JITTER)
        + ", "
        + ",".join(f"{v:g}" for v in JITTER_LARGE)
        + f" from {LARGE_IMAGE} px"
    )
    assert setting_notes("p_jitter") == f"image: default {P_JITTER}"


def test_the_linear_evaluation_defaults_are_the_noted_ones() -> None:
    params = inspect.signature(linear_eval).parameters
    assert ImageTrainer.linear_epochs == params["epochs"].default
    assert setting_notes("linear_epochs") == f"image: default {params['epochs'].default}"
    assert setting_notes("linear_lr") == f"image: default {params['lr'].default}"
    assert setting_notes("linear_optimizer").endswith(f"default {params['optimizer'].default}")


def test_the_cache_folder_is_the_noted_one(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv(CACHE_ENV, str(tmp_path))
    assert default_cache_dir() == tmp_path
    monkeypatch.delenv(CACHE_ENV)
    assert str(default_cache_dir()).endswith(".cache/contrastkit")
    assert f"${CACHE_ENV}" in setting_notes("cache_dir")
