"""Random views and their gradients, shared by the tests of the fused paths from the views
(``test_pair_terms.py``, ``test_supervised_pair_terms.py``)."""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor


def random_views(n: int, d: int, dtype: torch.dtype, seed: int = 0) -> tuple[Tensor, Tensor]:
    """Two ``[n, d]`` views drawn in float64 from ``seed``, cast to ``dtype``, as leaves."""
    g = torch.Generator().manual_seed(seed)
    z1, z2 = (torch.randn(n, d, generator=g, dtype=torch.float64).to(dtype) for _ in range(2))
    return z1.requires_grad_(), z2.requires_grad_()


def value_and_grads(
    fn: Callable[[Tensor, Tensor], Tensor], z1: Tensor, z2: Tensor
) -> tuple[Tensor, tuple[Tensor, ...]]:
    """``fn(z1, z2)`` and its gradients with respect to both views."""
    value = fn(z1, z2)
    return value, torch.autograd.grad(value, (z1, z2))
