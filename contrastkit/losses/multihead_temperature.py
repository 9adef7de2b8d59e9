"""Multi-head NT-Xent with the two temperature schemes AMCL Table 4 compares against.

Both own ``C`` projection heads like :class:`~contrastkit.losses.AMCL` (registry input
kind ``"features"``: built with ``in_dim``, called on encoder features) and compute, per
head, SimCLR's 2N-view NT-Xent; the loss is the sum over heads of the mean over the 2N
anchors, as AMCL's multi-head objective. Only the temperature differs:

* ``tau_uncertainty`` (TaU, Zhang et al., 2021, "Temperature as Uncertainty"): every head
  outputs one extra channel ``u``; anchor ``i`` gets its own temperature
  ``τ_i = lower + (upper - lower)·sigmoid(u_i)``, used for all of its pairs:
  ``ℓ_i = -s_{i,p(i)}/τ_i + log Σ_{j≠i} exp(s_ij/τ_i)``. A feature-dependent, not
  pair-dependent, temperature (AMCL §5.2's distinction). The bounds are our choice
  (TaU squashes with a sigmoid; the range is not given in AMCL).
* ``cosine_temperature`` (TS, Kukleva et al., ICLR 2023): one global temperature on a
  cosine schedule over training steps ``t``:
  ``τ_t = τ_min + ½(τ_max - τ_min)(1 + cos(2π t / period))`` with Kukleva et al.'s
  ``τ_min = 0.1``, ``τ_max = 1``. The step counter is a buffer (saved in checkpoints) that
  advances once per training-mode call.

With ``gather_distributed`` both compute the loss of the global batch on every rank, as
:class:`~contrastkit.losses.AMCL` does: every rank's encoder features are gathered with
gradient before the heads (:mod:`contrastkit.distributed`).

Example:
    >>> import torch
    >>> from contrastkit import losses
    >>> loss = losses.get("tau_uncertainty", in_dim=16, heads=3)
    >>> loss(torch.randn(8, 16), torch.randn(8, 16)).shape
    torch.Size([])
"""

from __future__ import annotations

import math
from typing import ClassVar

import torch
from torch import Tensor, nn

from .. import distributed
from ..models.multihead import MultiHeadProjector
from ._diagnostics import DeviceDiagnostics
from .functional._common import check_views
from .hparams import FLAG, POSITIVE, Param
from .registry import register
from .views import normalize


def multihead_ntxent(z1: Tensor, z2: Tensor, tau: Tensor | float) -> Tensor:
    """``Σ_c mean_i ℓ_i^c`` for per-head projections ``z1, z2: [C, N, d]``; ``tau`` a
    float or ``[C, 2N]`` per-anchor temperatures (anchors ordered ``cat(z1, z2)``)."""
    n = z1.shape[1]
    z = normalize(torch.cat([z1, z2], dim=1))  # [C, 2N, d]
    sim = z @ z.transpose(1, 2)
    logits = sim / tau.unsqueeze(-1) if isinstance(tau, Tensor) else sim / tau
    own = torch.eye(2 * n, dtype=torch.bool, device=z.device)
    logits = logits.masked_fill(own, float("-inf"))
    partner = (torch.arange(2 * n, device=z.device) + n) % (2 * n)
    positive = logits[:, torch.arange(2 * n, device=z.device), partner]
    return (torch.logsumexp(logits, dim=2) - positive).mean(dim=1).sum()


class _LastTemperature(DeviceDiagnostics):
    """The temperature of the last call as the diagnostic ``temperature``, a 0-d device
    tensor (TaU: τ_i averaged over anchors and heads; the cosine schedule: τ_t)."""

    @property
    def last_temperature(self) -> float | None:
        """The last call's temperature (``None`` before it)."""
        return self.last_float("temperature")


# the multi-head projector's sizes and the gather, shared by both baselines
_HEAD_RANGES: dict[str, Param] = {
    **dict.fromkeys(("in_dim", "heads", "out_dim"), Param.integer(1)),
    "hidden": Param.integer(1, optional=True),
    "gather_distributed": FLAG,
}


@register(
    "tau_uncertainty",
    "features",
    "Zhang et al., 2021 (TaU); AMCL Table 4 baseline",
    diagnostics=True,
)
class TemperatureAsUncertainty(_LastTemperature, nn.Module):
    """Multi-head NT-Xent with a per-anchor learned temperature (see the module docstring).

    Args:
        in_dim: encoder feature width.
        heads: ``C``; 3 as AMCL Table 4 ("the rest methods 3 heads").
        out_dim: ``d'`` of the compared projections (each head outputs ``d' + 1``).
        hidden: hidden width of the heads; ``None`` = ``in_dim``.
        lower, upper: temperature range; 0.05 and 1 (our choice, see above).
        gather_distributed: compute the loss of the global batch on every rank (see the
            module docstring).
    """

    param_ranges: ClassVar[dict[str, Param]] = {
        **_HEAD_RANGES, "lower": POSITIVE, "upper": POSITIVE,
    }  # fmt: skip

    def __init__(
        self,
        in_dim: int,
        heads: int = 3,
        out_dim: int = 128,
        hidden: int | None = None,
        lower: float = 0.05,
        upper: float = 1.0,
        *,
        gather_distributed: bool = False,
    ) -> None:
        super().__init__()  # the ranges of param_ranges are checked by the registry
        self.gather_distributed = gather_distributed
        if not lower < upper:
            raise ValueError(f"need lower < upper, got {lower}, {upper}")
        self.lower, self.upper = float(lower), float(upper)
        self.projector = MultiHeadProjector(in_dim, out_dim + 1, heads, hidden)
        self._last: dict[str, Tensor | None] = {"temperature": None}

    def forward(self, h1: Tensor, h2: Tensor) -> Tensor:
        h1, h2 = check_views(h1, h2, names=("h1", "h2"))
        h1, h2 = distributed.gather_all_with_grad(h1, h2, enabled=self.gather_distributed)
        p1, p2 = self.projector(h1), self.projector(h2)  # [C, N, d' + 1]
        u = torch.cat([p1[..., -1], p2[..., -1]], dim=1)  # [C, 2N]
        tau = self.lower + (self.upper - self.lower) * torch.sigmoid(u)
        self._last["temperature"] = tau.detach().mean()
        # the embeddings' dtype, whatever the heads' (a module cast to bf16), as AMCL
        return multihead_ntxent(p1[..., :-1], p2[..., :-1], tau).to(h1.dtype)


@register(
    "cosine_temperature",
    "features",
    "Kukleva et al., ICLR 2023; AMCL Table 4 (TS)",
    diagnostics=True,
)
class CosineTemperature(_LastTemperature, nn.Module):
    """Multi-head NT-Xent with a cosine temperature schedule (see the module docstring).

    Args:
        in_dim, heads, out_dim, hidden, gather_distributed: as
            :class:`TemperatureAsUncertainty`.
        tau_min, tau_max: 0.1 and 1.0 (Kukleva et al.).
        period: schedule period in training steps (Kukleva et al. use 400 epochs; set it
            to the run's steps per epoch × the epochs of one cycle).
    """

    param_ranges: ClassVar[dict[str, Param]] = {
        **_HEAD_RANGES, "tau_min": POSITIVE, "tau_max": POSITIVE, "period": Param.integer(1),
    }  # fmt: skip

    def __init__(
        self,
        in_dim: int,
        heads: int = 3,
        out_dim: int = 128,
        hidden: int | None = None,
        tau_min: float = 0.1,
        tau_max: float = 1.0,
        period: int = 1000,
        *,
        gather_distributed: bool = False,
    ) -> None:
        super().__init__()  # the ranges of param_ranges are checked by the registry
        self.gather_distributed = gather_distributed
        if not tau_min <= tau_max:
            raise ValueError(f"need tau_min <= tau_max, got {tau_min}, {tau_max}")
        self.tau_min, self.tau_max = float(tau_min), float(tau_max)
        self.period = period
        self.projector = MultiHeadProjector(in_dim, out_dim, heads, hidden)
        self.register_buffer("step", torch.zeros((), dtype=torch.long))
        self._last: dict[str, Tensor | None] = {"temperature": None}

    def temperature(self, step: int) -> float:
        """``τ_t`` at training step ``step``."""
        phase = 2.0 * math.pi * step / self.period
        return self.tau_min + 0.5 * (self.tau_max - self.tau_min) * (1.0 + math.cos(phase))

    def forward(self, h1: Tensor, h2: Tensor) -> Tensor:
        h1, h2 = check_views(h1, h2, names=("h1", "h2"))
        h1, h2 = distributed.gather_all_with_grad(h1, h2, enabled=self.gather_distributed)
        # τ_t from the step buffer on the device: no host read, and no host counter that
        # torch.compile would take for a constant (one recompilation per step)
        t = torch.remainder(self.step, self.period).to(h1.dtype)  # exact; cos has period
        cosine = torch.cos(t * (2.0 * math.pi / self.period))
        tau = self.tau_min + 0.5 * (self.tau_max - self.tau_min) * (1.0 + cosine)
        if self.training:
            self.step += 1
        self._last["temperature"] = tau.detach()
        return multihead_ntxent(self.projector(h1), self.projector(h2), tau).to(h1.dtype)
