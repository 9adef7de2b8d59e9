"""The alignment + uniformity objective of Wang & Isola (ICML 2020) as a module.

Example:
    >>> import torch
    >>> from contrastkit.losses import AlignUniform
    >>> AlignUniform()(torch.randn(8, 16), torch.randn(8, 16)).shape
    torch.Size([])
"""

from __future__ import annotations

from typing import ClassVar

from torch import Tensor, nn

from .. import distributed
from . import functional as F
from .functional._common import check_views
from .hparams import FLAG, NONNEGATIVE, POSITIVE, Param
from .registry import register
from .views import normalize


@register("align_uniform", "pair", "Wang & Isola, ICML 2020, Eq. (4)-(5)")
class AlignUniform(nn.Module):
    """``alignment(z1, z2; α) + weight·(uniformity(z1; t) + uniformity(z2; t)) / 2``.

    Defaults α = 2, t = 2, weight = 1 are the paper's recommended ones.
    ``gather_distributed=True`` computes the loss of the global batch on every rank
    (uniformity runs over every pair of the global batch; :mod:`contrastkit.distributed`).
    """

    param_ranges: ClassVar[dict[str, Param]] = {
        "alpha": POSITIVE,
        "t": POSITIVE,
        "weight": NONNEGATIVE,
        "gather_distributed": FLAG,
    }

    def __init__(
        self,
        alpha: float = 2.0,
        t: float = 2.0,
        weight: float = 1.0,
        *,
        gather_distributed: bool = False,
    ) -> None:
        super().__init__()
        self.alpha = alpha
        self.t = t
        self.weight = weight
        self.gather_distributed = gather_distributed

    def forward(self, z1: Tensor, z2: Tensor) -> Tensor:
        z1, z2 = check_views(z1, z2)  # before the normalisation reads them
        z1, z2 = distributed.gather_all_with_grad(z1, z2, enabled=self.gather_distributed)
        a, b = normalize(z1), normalize(z2)
        uniform = (F.uniformity(a, self.t) + F.uniformity(b, self.t)) / 2.0
        return F.alignment(a, b, self.alpha) + self.weight * uniform
