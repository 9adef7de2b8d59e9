"""Offline regression tasks with continuous labels, for LASCon-style training.

Each loader returns a :class:`~contrastkit.data.Split` whose labels are **float32 in their
natural units** (not standardised): LASCon's label similarity (Eq. 5) rescales labels by
the batch's ``max |y|`` itself, and the downstream head (:mod:`contrastkit.evaluation.
downstream`) standardises targets internally and reports MAE in these units.

* ``digits_rotation``: the fixed 80/20 digits split of :func:`~contrastkit.data.load_digits`,
  each image rotated once by an angle drawn uniformly in ``[-45°, 45°]`` (generator seed
  :data:`ROTATION_SEED`); the label is the angle in degrees. ±45° is the rotation range of
  LASCon's FreiHAND augmentation (App. D.3); here it is the quantity to predict, so the
  training views must not rotate: :data:`AUGMENT_TYPES` leaves ``rotation`` out.
* ``diabetes``: scikit-learn's bundled diabetes data (442 patients, 10 raw features, label
  = disease progression after one year, 25-346), split 80/20 with seed
  :data:`DIABETES_SPLIT_SEED` (353 / 89); features standardised with the training split's
  mean and standard deviation. Shape ``[N, 10]``, kind ``"tabular"``.

:class:`TabularAugment` makes the views of tabular data (Gaussian feature noise and feature
masking). :func:`binarize` turns continuous labels into the two classes SupCon needs, the
paper's protocol (LASCon Table 1: a threshold per task, e.g. 7 for IMDB ratings).
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as tf
from torch import Tensor

from .._optional import require
from .datasets import load_digits
from .registry import Split, register_dataset
from .registry import is_regression as is_regression

REGRESSION_DATASETS = ("digits_rotation", "diabetes")
ROTATION_RANGE_DEG = 45.0
ROTATION_SEED = 1234
DIABETES_TEST_FRACTION = 0.2
DIABETES_SPLIT_SEED = 0
# the digits augmentations that leave the rotation label unchanged
AUGMENT_TYPES = {"digits_rotation": ("crop", "noise", "dropout", "intensity")}


def rotate(images: Tensor, degrees: Tensor) -> Tensor:
    """``images [B, C, H, W]`` rotated by ``degrees [B]`` about the centre (bilinear
    resampling, zero fill); positive angles turn clockwise as displayed (row index
    downwards): 90° equals ``torch.rot90(images, -1, (2, 3))``."""
    if images.dim() != 4:
        raise ValueError(f"images must have shape [B, C, H, W], got {tuple(images.shape)}")
    if degrees.shape != (images.shape[0],):
        raise ValueError(
            f"degrees must have shape [B] = [{images.shape[0]}], got {tuple(degrees.shape)}"
        )
    rad = degrees.to(images.dtype) * (math.pi / 180.0)
    cos, sin = torch.cos(rad), torch.sin(rad)
    zero = torch.zeros_like(cos)
    # affine_grid maps output pixel coordinates to input ones
    theta = torch.stack([torch.stack([cos, sin, zero], 1), torch.stack([-sin, cos, zero], 1)], 1)
    grid = tf.affine_grid(theta, list(images.shape), align_corners=False)
    return tf.grid_sample(images, grid, padding_mode="zeros", align_corners=False)


def load_digits_rotation() -> Split:
    """Digits rotated by a continuous random angle; label = angle in degrees."""
    base = load_digits()
    g = torch.Generator().manual_seed(ROTATION_SEED)
    n_tr, n_te = base.x_train.shape[0], base.x_test.shape[0]
    angles = (torch.rand(n_tr + n_te, generator=g) * 2.0 - 1.0) * ROTATION_RANGE_DEG
    a_tr, a_te = angles[:n_tr], angles[n_tr:]
    return Split(
        "digits_rotation",
        "2d",
        rotate(base.x_train, a_tr),
        a_tr.clone(),
        rotate(base.x_test, a_te),
        a_te.clone(),
    )


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


def binarize(labels: Tensor, threshold: float) -> Tensor:
    """Class ``1[y >= threshold]`` (int64, ``[N]``) of continuous ``labels [N]``: the
    binarised labels SupCon trains with on a regression task (LASCon Table 1)."""
    if not isinstance(labels, Tensor) or labels.dim() != 1:
        got = tuple(labels.shape) if isinstance(labels, Tensor) else type(labels).__name__
        raise ValueError(f"labels must be a tensor of shape [N], got {got}")
    if not isinstance(threshold, int | float) or not math.isfinite(threshold):
        raise ValueError(f"threshold must be a finite number, got {threshold!r}")
    return (labels >= threshold).long()


class TabularAugment:
    """Views of standardised tabular rows ``[B, F]``: Gaussian noise of standard deviation
    ``noise`` (0.1, in units of the feature's standard deviation), then each feature
    replaced by the training mean (0 after standardisation) with probability ``mask``
    (0.1). Both magnitudes are this project's choices; the paper has no tabular task."""

    kind = "tabular"

    def __init__(self, noise: float = 0.1, mask: float = 0.1) -> None:
        if not (isinstance(noise, int | float) and noise >= 0):
            raise ValueError(f"noise must be a number >= 0, got {noise!r}")
        if not (isinstance(mask, int | float) and 0 <= mask < 1):
            raise ValueError(f"mask must be a number in [0, 1), got {mask!r}")
        self.noise, self.mask = float(noise), float(mask)

    def __repr__(self) -> str:
        return f"TabularAugment(noise={self.noise}, mask={self.mask})"

    def __call__(self, x: Tensor, generator: torch.Generator) -> Tensor:
        if not isinstance(x, Tensor) or x.dim() != 2:
            got = tuple(x.shape) if isinstance(x, Tensor) else type(x).__name__
            raise ValueError(f"x must have shape [B, F] for tabular augmentations, got {got}")
        noisy = x + self.noise * torch.randn(x.shape, generator=generator).to(x.device, x.dtype)
        keep = torch.rand(x.shape, generator=generator) >= self.mask
        return noisy * keep.to(x.device, x.dtype)


register_dataset("digits_rotation", load_digits_rotation, "2d", regression=True)
register_dataset("diabetes", load_diabetes, "tabular", regression=True)
