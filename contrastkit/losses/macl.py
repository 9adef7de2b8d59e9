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

from torch import Tensor

from .. import distributed
from . import functional as F
from .functional import Negatives
from .functional._backend import DEFAULT_BACKEND
from .hparams import FINITE, FLAG, NONNEGATIVE, Param
from .infonce import TwoViewContrastive
from .registry import register


@register(
    "macl",
    "pair",
    "Huang et al., ICML 2023, Eq. (7) and (11), Algorithm 1",
    diagnostics=True,
    fused_backends=True,
)
class MACL(TwoViewContrastive):
    """MACL over SimCLR's 2N views (or any ``(pos, neg)`` via :meth:`similarity_loss`).

    Args:
        temperature: τ0 (Table 8's best, 0.1).
        alpha: α (Table 8's best, 0.5).
        a0: A0 (Table 8: 0 by default; 0.2 scored marginally higher).
        reweight: apply Eq. (11)'s ``sg[1/(1-P)]``.
        adaptive: use Eq. (7)'s alignment-adaptive temperature.
        min_temperature: floor of τ_a; ``None`` means ``0.1·τ0``.
        block_size, gather_distributed, backend: see :class:`TwoViewContrastive`; when
            gathering, A is the mean alignment over every rank's pairs.

    After each call, :attr:`last_temperature` and :attr:`last_alignment` hold τ_a and
    the alignment magnitude A of that batch (floats, for logging).
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
        # τ_a and A of the last call, in a plain dict: storing tensors as module attributes
        # goes through nn.Module.__setattr__ (parameter/buffer/submodule checks), at every call
        self._last: dict[str, Tensor] = {}

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
        self._last["tau"], self._last["alignment"] = tau, alignment
        return loss

    @property
    def last_temperature(self) -> float | None:
        """τ_a of the last call (``None`` before the first)."""
        return float(self._last["tau"]) if self._last else None

    @property
    def last_alignment(self) -> float | None:
        """Alignment magnitude A (MACL Eq. 6) of the last call."""
        return float(self._last["alignment"]) if self._last else None

    def diagnostics(self) -> dict[str, float]:
        """``{"temperature": τ_a, "alignment_A": A}`` of the last call (empty before it)."""
        if not self._last:
            return {}
        return {
            "temperature": float(self._last["tau"]),
            "alignment_A": float(self._last["alignment"]),
        }
