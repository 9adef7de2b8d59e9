"""Offline datasets: scikit-learn's 8×8 digits and generated MNIST-1D.

Both return a :class:`Split` of float32 tensors with a fixed train/test partition, so
every run (and every seed) evaluates on the same held-out samples:

* ``digits``: the 1,797 ``8×8`` images of ``sklearn.datasets.load_digits``, scaled to
  ``[0, 1]``, shape ``[N, 1, 8, 8]``; a stratified 80/20 split with a fixed seed (0).
* ``mnist1d``: ``mnist1d.data.make_dataset`` (Greydanus, 2020) with the package's default
  generator arguments except ``num_samples`` (20,000 by default; the package's own
  ``train_split`` = 0.8 gives 16,000 train / 4,000 test), shape ``[N, 1, 40]``. The
  package's fixed generator seed (42) makes the data identical across runs.
"""

from __future__ import annotations

import functools

import numpy as np
import torch
from torch import Tensor

from .._optional import require
from ..data import Split

DIGITS_TEST_FRACTION = 0.2
DIGITS_SPLIT_SEED = 0
MNIST1D_DEFAULT_SAMPLES = 20_000


def load_digits() -> Split:
    """The 8×8 digits with a fixed stratified 80/20 split."""
    require("sklearn", "train", "the digits dataset")
    from sklearn.datasets import load_digits as sk_load_digits
    from sklearn.model_selection import train_test_split

    data = sk_load_digits()
    x = (data.images / 16.0).astype(np.float32)[:, None]
    x_tr, x_te, y_tr, y_te = train_test_split(
        x,
        data.target,
        test_size=DIGITS_TEST_FRACTION,
        stratify=data.target,
        random_state=DIGITS_SPLIT_SEED,
    )
    return Split("digits", "2d", *_tensors(x_tr, y_tr, x_te, y_te))


@functools.lru_cache(maxsize=4)
def load_mnist1d(num_samples: int = MNIST1D_DEFAULT_SAMPLES) -> Split:
    """MNIST-1D generated locally (no download) with ``num_samples`` samples in total."""
    if num_samples < 10:
        raise ValueError(f"num_samples must be >= 10 for mnist1d, got {num_samples}")
    require("mnist1d", "train", "the mnist1d dataset")
    from mnist1d.data import get_dataset_args, make_dataset

    args = get_dataset_args()
    args.num_samples = num_samples
    data = make_dataset(args)
    x_tr, x_te = data["x"][:, None], data["x_test"][:, None]
    return Split("mnist1d", "1d", *_tensors(x_tr, data["y"], x_te, data["y_test"]))


def _tensors(
    x_tr: np.ndarray, y_tr: np.ndarray, x_te: np.ndarray, y_te: np.ndarray
) -> tuple[Tensor, ...]:
    return (
        torch.as_tensor(np.ascontiguousarray(x_tr), dtype=torch.float32),
        torch.as_tensor(y_tr, dtype=torch.int64),
        torch.as_tensor(np.ascontiguousarray(x_te), dtype=torch.float32),
        torch.as_tensor(y_te, dtype=torch.int64),
    )
