"""The MACL module (Huang et al., ICML 2023): adaptive temperature plus 1/(1-P) reweighting.

Example:
    >>> import torch
    >>> from contrastkit.losses import MACL
    >>> loss_fn = MACL(temperature=0.1, alpha=0.5, a0=0.0)
    >>> loss = loss_fn(torch.randn(8, 16), torch.randn(8, 16))
    >>> 0.05 <= loss_fn.last_temperature <= 0.15
    True
"""

from __future__ import annotations

from typing import ClassVar

import torch
from torch import Tensor

from .. import distributed
from . import functional as F
from ._diagnostics import DeviceDiagnostics
from .functional import Negatives
from .functional._backend import DEFAULT_BACKEND
from .functional.macl import reweighted
from .hparams import FINITE, FLAG, NONNEGATIVE, Param
from .infonce import TwoViewContrastive
from .registry import register
from .views import ntxent_terms


@register(
    "macl",
    "pair",
    "Huang et al., ICML 2023, Eq. (7) and (11), Algorithm 1",
    diagnostics=True,
    fused_backends=True,
)
class MACL(DeviceDiagnostics, TwoViewContrastive):
    """MACL over SimCLR's 2N views (or any ``(pos, neg)`` via :meth:`similarity_loss`).

    Args:
        temperature: τ0 (Table 8's best, 0.1).
        alpha: α (Table 8's best, 0.5).
        a0: A0 (Table 8: 0 by default; 0.2 scored marginally higher).
        reweight: apply Eq. (11)'s ``sg[1/(1-P)]``.
        adaptive: use Eq. (7)'s alignment-adaptive temperature.
        min_temperature: floor of τ_a; ``None`` means ``0.1·τ0``.
        block_size, gather_distributed, backend: see :class:`FusedSettings`; when
            gathering, A is the mean alignment over every rank's pairs.

    After each call, :attr:`last_temperature` and :attr:`last_alignment` hold τ_a and
    the alignment magnitude A of that batch (floats, for logging); :meth:`diagnostics`
    reports them as ``temperature`` and ``alignment_A``.
    """

    param_ranges: ClassVar[dict[str, Param]] = {
        "alpha": NONNEGATIVE,
        "a0": FINITE,
        "reweight": FLAG,
        "adaptive": FLAG,
        "min_temperature": Param.real(0.0, low_open=True, optional=True),
    }

    def __init__(
        self,
        temperature: float = 0.1,
        alpha: float = 0.5,
        a0: float = 0.0,
        reweight: bool = True,
        adaptive: bool = True,
        min_temperature: float | None = None,
        *,
        block_size: int | None = None,
        gather_distributed: bool = False,
        backend: str = DEFAULT_BACKEND,
    ) -> None:
        super().__init__(block_size, gather_distributed, backend)
        self.temperature = temperature
        self.alpha = alpha
        self.a0 = a0
        self.reweight = reweight
        self.adaptive = adaptive
        self.min_temperature = min_temperature
        # τ_a and A of the last call (DeviceDiagnostics)
        self._last: dict[str, Tensor | None] = {"temperature": None, "alignment_A": None}

    def forward(self, z1: Tensor, z2: Tensor, queue: Tensor | None = None) -> Tensor:
        """As :meth:`TwoViewContrastive.forward`; without a queue, where
        :func:`views.fused_pair_terms` allows at the lowest τ_a this module can reach
        (:meth:`_lowest_temperature`), in one fused ``autograd.Function`` (same values and
        gradients to float32 rounding, about a third less host time per call)."""
        if self._fusable(MACL, z1, queue, self._lowest_temperature()):
            nll, log_w, tau, alignment = ntxent_terms(z1, z2, self._temperature_of)
            self._last["temperature"], self._last["alignment_A"] = tau, alignment
            return (reweighted(nll, log_w) if self.reweight else nll).mean()
        return super().forward(z1, z2, queue)

    def _lowest_temperature(self) -> float:
        """The least τ_a of Eq. (7) over every alignment ``A >= -1`` (unit rows), floored
        as :func:`~contrastkit.losses.functional.macl_temperature` floors it: with α >= 0,
        ``max(floor, τ0·(1 - α·(1 + A0)))``; τ0 when not adaptive."""
        if not self.adaptive:
            return self.temperature
        floor = 0.1 * self.temperature if self.min_temperature is None else self.min_temperature
        return max(floor, self.temperature * (1.0 - self.alpha * (1.0 + self.a0)))

    def _temperature_of(self, alignment: Tensor) -> Tensor:
        """τ_a (0-d) for the batch's alignment ``A`` (0-d): Eq. (7), or τ0 when not adaptive
        (filled on the device: a host tensor would be a blocking copy on CUDA)."""
        if not self.adaptive:
            return torch.full_like(alignment, self.temperature)
        return F.macl_temperature(
            alignment, self.temperature, self.alpha, self.a0, self.min_temperature, alignment
        )

    def similarity_loss(self, pos: Tensor, neg: Tensor | Negatives) -> Tensor:
        alignment = distributed.global_mean(pos) if self.gather_distributed else pos.detach().mean()
        loss, tau = F.macl(
            pos,
            neg,
            self.temperature,
            self.alpha,
            self.a0,
            reweight=self.reweight,
            adaptive=self.adaptive,
            return_temperature=True,
            min_temperature=self.min_temperature,
            alignment=alignment,
        )
        self._last["temperature"], self._last["alignment_A"] = tau, alignment
        return loss

    @property
    def last_temperature(self) -> float | None:
        """τ_a of the last call (``None`` before the first)."""
        return self.last_float("temperature")

    @property
    def last_alignment(self) -> float | None:
        """Alignment magnitude A (MACL Eq. 6) of the last call."""
        return self.last_float("alignment_A")
