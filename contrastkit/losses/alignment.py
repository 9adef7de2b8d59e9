"""The alignment + uniformity objective of Wang & Isola (ICML 2020) as a module.

Example:
    >>> import torch
    >>> from contrastkit.losses import AlignUniform
    >>> AlignUniform()(torch.randn(8, 16), torch.randn(8, 16)).shape
    torch.Size([])
"""

from __future__ import annotations

from torch import Tensor, nn

from . import functional as F
from .registry import register
from .views import normalize


@register("align_uniform", "pair", "Wang & Isola, ICML 2020, Eq. (4)-(5)")
class AlignUniform(nn.Module):
    """``alignment(z1, z2; α) + weight·(uniformity(z1; t) + uniformity(z2; t)) / 2``.

    Defaults α = 2, t = 2, weight = 1 are the paper's recommended ones.
    """

    def __init__(self, alpha: float = 2.0, t: float = 2.0, weight: float = 1.0) -> None:
        super().__init__()
        self.alpha = alpha
        self.t = t
        self.weight = weight

    def forward(self, z1: Tensor, z2: Tensor) -> Tensor:
        a, b = normalize(z1), normalize(z2)
        uniform = (F.uniformity(a, self.t) + F.uniformity(b, self.t)) / 2.0
        return F.alignment(a, b, self.alpha) + self.weight * uniform
