"""Regression tasks: rotated digits labelled by their angle, diabetes, binarisation,
tabular views."""

from __future__ import annotations

import pytest
import torch

from contrastkit.data import is_regression, load_dataset
from contrastkit.images import load_digits
from contrastkit.images.rotation import rotate
from contrastkit.tabular import TabularAugment
from contrastkit.training.label_aware import binarize

REGRESSION_DATASETS = ("digits_rotation", "diabetes")


def test_rotate_matches_exact_quarter_turns_and_identity() -> None:
    x = torch.rand(3, 1, 8, 8)
    quarter = torch.full((3,), 90.0)
    assert torch.allclose(rotate(x, quarter), torch.rot90(x, -1, (2, 3)), atol=1e-5)
    assert torch.allclose(rotate(x, -quarter), torch.rot90(x, 1, (2, 3)), atol=1e-5)
    assert torch.allclose(rotate(x, torch.zeros(3)), x, atol=1e-6)


def test_digits_rotation_label_is_the_applied_angle() -> None:
    d, base = load_dataset("digits_rotation"), load_digits()
    assert d.kind == "2d" and d.x_train.shape == base.x_train.shape
    assert d.y_train.dtype == torch.float32 and d.y_train.shape == (base.x_train.shape[0],)
    for y in (d.y_train, d.y_test):
        assert float(y.min()) >= -45.0 and float(y.max()) <= 45.0
        assert float(y.std()) > 20.0  # spread over the range, not a constant
    # each image is the base digit rotated by exactly its label
    assert torch.allclose(d.x_train[:50], rotate(base.x_train[:50], d.y_train[:50]), atol=1e-6)
    assert torch.allclose(d.x_test[-50:], rotate(base.x_test[-50:], d.y_test[-50:]), atol=1e-6)
    again = load_dataset("digits_rotation")
    assert torch.equal(again.y_test, d.y_test) and torch.equal(again.x_train, d.x_train)


def test_diabetes_split_standardised_with_training_statistics() -> None:
    d = load_dataset("diabetes")
    assert d.kind == "tabular" and d.x_train.shape == (353, 10) and d.x_test.shape == (89, 10)
    x = d.x_train.double()
    assert float(x.mean(0).abs().max()) < 1e-5
    assert float((x.std(0, unbiased=False) - 1.0).abs().max()) < 1e-4
    # raw disease-progression labels, not standardised
    labels = torch.cat([d.y_train, d.y_test])
    assert float(labels.min()) == 25.0 and float(labels.max()) == 346.0
    assert labels.shape == (442,) and labels.dtype == torch.float32
    assert torch.equal(load_dataset("diabetes").x_test, d.x_test)


def test_registry_names() -> None:
    assert all(is_regression(n) for n in REGRESSION_DATASETS)
    assert not is_regression("digits")
    with pytest.raises(ValueError, match="'diabetes' does not take num_samples"):
        load_dataset("diabetes", 10)


def test_binarize_threshold_is_inclusive() -> None:
    y = torch.tensor([-1.0, 0.0, 0.5, 139.0, 138.9])
    assert binarize(y, 0.0).tolist() == [0, 1, 1, 1, 1]
    assert binarize(y, 139.0).tolist() == [0, 0, 0, 1, 0]
    assert binarize(y, 0.0).dtype == torch.int64
    with pytest.raises(ValueError, match=r"labels must be a tensor of shape \[N\]"):
        binarize(y[:, None], 0.0)
    with pytest.raises(ValueError, match="threshold must be a finite number"):
        binarize(y, float("nan"))


def test_tabular_augment_noise_and_mask_magnitudes() -> None:
    x = torch.zeros(4000, 10)
    noisy = TabularAugment(noise=0.1, mask=0.0)(x, torch.Generator().manual_seed(0))
    assert abs(float(noisy.std()) - 0.1) < 0.005
    ones = torch.ones(4000, 10)
    masked = TabularAugment(noise=0.0, mask=0.1)(ones, torch.Generator().manual_seed(0))
    assert set(masked.unique().tolist()) == {0.0, 1.0}
    assert abs(float((masked == 0).double().mean()) - 0.1) < 0.01
    aug = TabularAugment()
    a = aug(ones, torch.Generator().manual_seed(3))
    assert torch.equal(a, aug(ones, torch.Generator().manual_seed(3)))
    assert not torch.equal(a, aug(ones, torch.Generator().manual_seed(4)))


@pytest.mark.parametrize(
    ("kwargs", "x", "match"),
    [
        ({"noise": -1.0}, torch.zeros(2, 3), "noise must be"),
        ({"mask": 1.0}, torch.zeros(2, 3), "mask must be"),
        ({}, torch.zeros(2, 3, 4), r"x must have shape \[B, F\]"),
    ],
)
def test_tabular_augment_errors(kwargs: dict, x: torch.Tensor, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        TabularAugment(**kwargs)(x, torch.Generator())
