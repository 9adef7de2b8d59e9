"""``digits_rotation``: an image regression task with continuous labels, for LASCon-style
training.

The labels are **float32 in their natural units** (degrees, not standardised): LASCon's
label similarity (Eq. 5) rescales labels by the batch's ``max |y|`` itself, and the
downstream head (:mod:`contrastkit.evaluation.downstream`) standardises targets internally
and reports MAE in these units.

* ``digits_rotation``: the fixed 80/20 digits split of :func:`~.datasets.load_digits`,
  each image rotated once by an angle drawn uniformly in ``[-45°, 45°]`` (generator seed
  :data:`ROTATION_SEED`); the label is the angle in degrees. ±45° is the rotation range of
  LASCon's FreiHAND augmentation (App. D.3); here it is the quantity to predict, so the
  training views must not rotate: :data:`LABEL_KEEPING_TYPES` leaves ``rotation`` out.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as tf
from torch import Tensor

from ..data import Split
from .datasets import load_digits

ROTATION_RANGE_DEG = 45.0
ROTATION_SEED = 1234
# the digits augmentations that leave the rotation label unchanged
LABEL_KEEPING_TYPES = {"digits_rotation": ("crop", "noise", "dropout", "intensity")}


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
