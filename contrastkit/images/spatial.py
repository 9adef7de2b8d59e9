"""The spatial ops of the image recipes, batched with per-sample parameters: the random
resized crop and flip as one affine resampling, and the separable Gaussian blur."""

from __future__ import annotations

import torch
import torch.nn.functional as tf
from torch import Tensor


def crop_theta(boxes: Tensor, flip: Tensor | None = None) -> Tensor:
    """The ``[B, 2, 3]`` affine maps (``affine_grid``'s ``theta``) that resample the crops
    ``boxes [B, 4]`` = (left, top, width, height), fractions of the image, to the full
    image; ``flip [B]`` bool mirrors a crop horizontally."""
    left, top, w, h = boxes.unbind(1)
    sx = w if flip is None else torch.where(flip.to(boxes.device), -w, w)
    zero = torch.zeros_like(w)
    return torch.stack(
        [torch.stack([sx, zero, 2 * left + w - 1], 1), torch.stack([zero, h, 2 * top + h - 1], 1)],
        1,
    )


def warp(x: Tensor, theta: Tensor) -> Tensor:
    """``x [B, C, H, W]`` resampled bilinearly through ``theta [B, 2, 3]`` (border
    replication, ``align_corners=False``)."""
    grid = tf.affine_grid(theta.to(x.dtype), list(x.shape), align_corners=False)
    return tf.grid_sample(x, grid, mode="bilinear", padding_mode="border", align_corners=False)


def resized_crop(x: Tensor, boxes: Tensor, flip: Tensor | None = None) -> Tensor:
    """Crops ``boxes [B, 4]`` (see :func:`crop_theta`) resampled bilinearly to the input size
    (border replication); ``flip [B]`` bool mirrors the crop in the same resampling."""
    return warp(x, crop_theta(boxes.to(x.dtype), flip))


def blur_kernels(sigma: Tensor, kernel_size: int) -> Tensor:
    """Normalised 1-D Gaussian kernels ``[B, K]`` of standard deviations ``sigma [B]`` (px)
    over ``K = kernel_size`` (odd) taps."""
    half = kernel_size // 2
    pos = torch.arange(-half, half + 1, dtype=sigma.dtype, device=sigma.device)
    k = torch.exp(-0.5 * (pos[None] / sigma[:, None]) ** 2)
    return k / k.sum(1, keepdim=True)


def separable_blur(x: Tensor, kernels: Tensor) -> Tensor:
    """Each image of ``x [B, C, H, W]`` convolved with its own ``kernels [B, K]`` along both
    axes, reflect padding; one grouped convolution per axis."""
    b, c, hgt, wid = x.shape
    half = kernels.shape[1] // 2
    k = kernels.to(x.dtype).repeat_interleave(c, 0)  # [B·C, K]
    y = tf.pad(x.reshape(1, b * c, hgt, wid), (half, half, half, half), mode="reflect")
    y = tf.conv2d(y, k[:, None, None, :], groups=b * c)
    y = tf.conv2d(y, k[:, None, :, None], groups=b * c)
    return y.reshape(b, c, hgt, wid)


def gaussian_blur(x: Tensor, sigma: Tensor, kernel_size: int) -> Tensor:
    """Separable Gaussian blur of each image with its own ``sigma [B]`` (px), odd
    ``kernel_size``, reflect padding."""
    return separable_blur(x, blur_kernels(sigma.to(x.device, x.dtype), kernel_size))
