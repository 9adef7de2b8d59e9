"""``diabetes``: scikit-learn's bundled diabetes data as a tabular regression task.

442 patients, 10 raw features, label = disease progression after one year (25-346, float32
in its natural units), split 80/20 with seed :data:`DIABETES_SPLIT_SEED` (353 / 89);
features standardised with the training split's mean and standard deviation. Shape
``[N, 10]``, kind ``"tabular"``.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor

from .._optional import require
from ..data import Split

DIABETES_TEST_FRACTION = 0.2
DIABETES_SPLIT_SEED = 0


def load_diabetes() -> Split:
    """scikit-learn's diabetes regression data, standardised with training statistics."""
    require("sklearn", "train", "the diabetes dataset")
    from sklearn.datasets import load_diabetes as sk_load_diabetes
    from sklearn.model_selection import train_test_split

    x, y = sk_load_diabetes(return_X_y=True, scaled=False)
    x_tr, x_te, y_tr, y_te = train_test_split(
        x, y, test_size=DIABETES_TEST_FRACTION, random_state=DIABETES_SPLIT_SEED
    )
    mean, std = x_tr.mean(axis=0), x_tr.std(axis=0)
    x_tr, x_te = (x_tr - mean) / std, (x_te - mean) / std

    def t(a: np.ndarray) -> Tensor:
        return torch.as_tensor(np.ascontiguousarray(a), dtype=torch.float32)

    return Split("diabetes", "tabular", t(x_tr), t(y_tr), t(x_te), t(y_te))
