"""Dataset loaders: fixed, stratified digits split; locally generated MNIST-1D."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from contrastkit.data import load_dataset
from contrastkit.images import load_digits, load_mnist1d


def test_digits_split_is_fixed_stratified_and_scaled() -> None:
    a, b = load_digits(), load_digits()
    assert a.x_train.shape == (1437, 1, 8, 8) and a.x_test.shape == (360, 1, 8, 8)
    assert torch.equal(a.x_train, b.x_train) and torch.equal(a.y_test, b.y_test)
    assert float(a.x_train.min()) >= 0.0 and float(a.x_train.max()) <= 1.0
    train_frac = np.bincount(a.y_train.numpy()) / len(a.y_train)
    test_frac = np.bincount(a.y_test.numpy()) / len(a.y_test)
    assert np.abs(train_frac - test_frac).max() < 0.01  # stratified
    assert a.num_classes == 10 and a.kind == "2d"


def test_mnist1d_sizes_follow_num_samples_and_package_split() -> None:
    d = load_mnist1d(200)
    assert d.x_train.shape == (160, 1, 40) and d.x_test.shape == (40, 1, 40)
    assert d.kind == "1d" and d.x_train.dtype == torch.float32
    assert torch.equal(load_dataset("mnist1d", 200).x_test, d.x_test)  # fixed generator seed


@pytest.mark.parametrize(
    ("name", "n", "match"),
    [
        ("imagenet", None, "unknown dataset 'imagenet'"),
        ("cifar10", None, "cifar10 needs data_root"),
        ("digits", 100, "'digits' does not take num_samples"),
        ("mnist1d", 5, "num_samples must be >= 10"),
    ],
)
def test_bad_dataset_arguments(name: str, n: int | None, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        load_dataset(name, n)
