"""Non-contrastive baselines as modules: Barlow Twins, VICReg, SimSiam.

Example:
    >>> import torch
    >>> from contrastkit.losses import BarlowTwins
    >>> BarlowTwins()(torch.randn(8, 16), torch.randn(8, 16)).shape
    torch.Size([])
"""

from __future__ import annotations

from typing import ClassVar

from torch import Tensor, nn

from .. import distributed
from . import functional as F
from .hparams import FLAG, NONNEGATIVE, Param
from .registry import register


@register("barlow_twins", "pair", "Zbontar et al., ICML 2021, Eq. (1)")
class BarlowTwins(nn.Module):
    """Barlow Twins on raw projector outputs; λ = 5e-3 (the paper's).

    ``gather_distributed=True`` computes the cross-correlation over every rank's batch
    (each rank then holds the same global loss; see :mod:`contrastkit.distributed`).
    """

    param_ranges: ClassVar[dict[str, Param]] = {"lambd": NONNEGATIVE, "gather_distributed": FLAG}

    def __init__(self, lambd: float = 5e-3, *, gather_distributed: bool = False) -> None:
        super().__init__()
        self.lambd = lambd
        self.gather_distributed = gather_distributed

    def forward(self, z1: Tensor, z2: Tensor) -> Tensor:
        z1, z2 = distributed.gather_all_with_grad(z1, z2, enabled=self.gather_distributed)
        return F.barlow_twins(z1, z2, self.lambd)


@register("vicreg", "pair", "Bardes et al., ICLR 2022, Eq. (6)")
class VICReg(nn.Module):
    """VICReg on raw projector outputs; λ = μ = 25, ν = 1 (the paper's).

    ``gather_distributed=True`` takes the variance and covariance over every rank's batch.
    """

    param_ranges: ClassVar[dict[str, Param]] = {
        "sim_coeff": NONNEGATIVE,
        "std_coeff": NONNEGATIVE,
        "cov_coeff": NONNEGATIVE,
        "gather_distributed": FLAG,
    }

    def __init__(
        self,
        sim_coeff: float = 25.0,
        std_coeff: float = 25.0,
        cov_coeff: float = 1.0,
        *,
        gather_distributed: bool = False,
    ) -> None:
        super().__init__()
        self.gather_distributed = gather_distributed
        self.sim_coeff = sim_coeff
        self.std_coeff = std_coeff
        self.cov_coeff = cov_coeff

    def forward(self, z1: Tensor, z2: Tensor) -> Tensor:
        z1, z2 = distributed.gather_all_with_grad(z1, z2, enabled=self.gather_distributed)
        return F.vicreg(z1, z2, self.sim_coeff, self.std_coeff, self.cov_coeff)


@register("simsiam", "predictor", "Chen & He, CVPR 2021, Eq. (2)")
class SimSiamLoss(nn.Module):
    """Symmetrised negative cosine ``(D(p1, z2) + D(p2, z1)) / 2`` with stop-gradient on z."""

    def forward(self, p1: Tensor, p2: Tensor, z1: Tensor, z2: Tensor) -> Tensor:
        return (F.negative_cosine(p1, z2) + F.negative_cosine(p2, z1)) / 2.0
