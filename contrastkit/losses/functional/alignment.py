"""Alignment and uniformity (Wang & Isola, ICML 2020), as losses and as diagnostics.

Both expect L2-normalised embeddings. Neither takes a square root: alignment squares the
differences directly (and clamps before a power α ≠ 2), uniformity forms its pairwise
squared distances as ``2 - 2·xᵀy``, so no infinite gradient appears at zero distance.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from ._common import check_positive, check_tensor, check_views, compute_dtype, float32_compute


@float32_compute
def alignment(x: Tensor, y: Tensor, alpha: float = 2.0) -> Tensor:
    """``mean_i ‖x_i - y_i‖^α`` over positive pairs (Wang & Isola Eq. 4; α = 2 default)."""
    x, y = check_views(x, y, min_rows=1, names=("x", "y"))
    alpha = check_positive(alpha, "alpha")
    dtype = compute_dtype(x, y)
    sq = (x.to(dtype) - y.to(dtype)).pow(2).sum(dim=1)
    if alpha != 2.0:
        # the clamp keeps d/dsq of sq^(α/2) finite at sq = 0 for α < 2
        sq = sq.clamp(min=torch.finfo(dtype).tiny).pow(alpha / 2.0)
    return sq.mean()


@float32_compute
def uniformity(x: Tensor, t: float = 2.0) -> Tensor:
    """``log mean_{i≠j} exp(-t‖x_i - x_j‖²)`` (Wang & Isola Eq. 5; t = 2 default).

    The mean over ordered pairs ``i ≠ j`` equals the paper's mean over ``i < j``.
    """
    x = check_tensor(x, "x", 2, "[N, d]")
    n = x.shape[0]
    if n < 2:
        raise ValueError(
            f"x must have shape [N, d] with N >= 2 for uniformity, got {tuple(x.shape)}"
        )
    t = check_positive(t, "t")
    xd = x.to(compute_dtype(x))
    sq = (2.0 - 2.0 * xd @ xd.T).clamp(min=0.0)
    eye = torch.eye(n, dtype=torch.bool, device=x.device)
    log_kernel = (-t * sq).masked_fill(eye, float("-inf"))
    return torch.logsumexp(log_kernel.flatten(), dim=0) - math.log(n * (n - 1))
