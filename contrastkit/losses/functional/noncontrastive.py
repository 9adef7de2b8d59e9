"""Non-contrastive baselines: Barlow Twins, VICReg and SimSiam's negative cosine.

These act on raw (unnormalised) projector outputs ``z1, z2: [N, d]``, as in their papers.
"""

from __future__ import annotations

import torch
import torch.nn.functional as tf
from torch import Tensor

from ._common import check_views, compute_dtype, float32_compute
from ._unit_rows import unit_rows


def off_diagonal(m: Tensor) -> Tensor:
    """The off-diagonal entries of a square matrix, flattened."""
    n = m.shape[0]
    return m.flatten()[:-1].view(n - 1, n + 1)[:, 1:].flatten()


@float32_compute
def barlow_twins(z1: Tensor, z2: Tensor, lambd: float = 5e-3, eps: float = 1e-5) -> Tensor:
    """Barlow Twins (Zbontar et al., ICML 2021, Eq. 1).

    ``Σ_i (1 - C_ii)² + λ Σ_{i≠j} C_ij²`` with ``C`` the cross-correlation of the batch-
    standardised views; λ = 5e-3 is the paper's value.
    """
    a, b = check_views(z1, z2)
    dtype = compute_dtype(a, b)
    a, b = a.to(dtype), b.to(dtype)
    a = (a - a.mean(0)) / (a.std(0, unbiased=False) + eps)
    b = (b - b.mean(0)) / (b.std(0, unbiased=False) + eps)
    c = a.T @ b / a.shape[0]
    on = (torch.diagonal(c) - 1.0).pow(2).sum()
    off = off_diagonal(c).pow(2).sum()
    return on + lambd * off


@float32_compute
def vicreg(
    z1: Tensor,
    z2: Tensor,
    sim_coeff: float = 25.0,
    std_coeff: float = 25.0,
    cov_coeff: float = 1.0,
    eps: float = 1e-4,
) -> Tensor:
    """VICReg (Bardes et al., ICLR 2022, Eq. 6) with the paper's coefficients 25/25/1.

    invariance ``mean ‖z1 - z2‖²/d``; variance ``mean_j relu(1 - sqrt(Var z_j + ε))`` per
    view; covariance ``Σ_{i≠j} C_ij² / d`` per view.
    """
    a, b = check_views(z1, z2)
    dtype = compute_dtype(a, b)
    a, b = a.to(dtype), b.to(dtype)
    n, d = a.shape
    invariance = tf.mse_loss(a, b)
    a = a - a.mean(0)
    b = b - b.mean(0)
    std_a = torch.sqrt(a.var(0) + eps)
    std_b = torch.sqrt(b.var(0) + eps)
    variance = (tf.relu(1.0 - std_a).mean() + tf.relu(1.0 - std_b).mean()) / 2.0
    cov_a = a.T @ a / (n - 1)
    cov_b = b.T @ b / (n - 1)
    covariance = (off_diagonal(cov_a).pow(2).sum() + off_diagonal(cov_b).pow(2).sum()) / d
    return sim_coeff * invariance + std_coeff * variance + cov_coeff * covariance


@float32_compute
def negative_cosine(p: Tensor, z: Tensor) -> Tensor:
    """SimSiam's ``D(p, z) = -mean cos(p, sg(z))`` (Chen & He, CVPR 2021, Eq. 1–2)."""
    a, b = check_views(p, z, min_rows=1, names=("p", "z"))
    # unit rows, not tf.cosine_similarity: a zero row of p gets a zero gradient, not ~1e6
    return -(unit_rows(a) * unit_rows(b.detach())).sum(dim=-1).mean()
