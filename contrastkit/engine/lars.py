"""LARS: layer-wise adaptive rate scaling (You, Gitman & Ginsburg, 2017).

For every parameter tensor ``w`` with gradient ``g`` that takes part in the adaptation:

    d = g + λ·w                                  (weight decay λ)
    r = η·‖w‖ / ‖d‖   if ‖w‖ > 0 and ‖d‖ > 0, else 1   (trust ratio, η = ``trust_coefficient``)
    v ← μ·v + lr·r·d                             (momentum μ)
    w ← w - v            (Nesterov: w ← w - (μ·v + lr·r·d))

The learning rate sits inside the momentum buffer, as in SimCLR's LARS. Parameter
groups with ``lars_exclude=True`` skip both the weight decay and the trust ratio
(``d = g``, ``r = 1``): the biases and normalisation parameters (every 1-D tensor), as
SimCLR, BYOL and solo-learn do (:func:`contrastkit.engine.optim.param_groups` builds them).
Defaults: η = 0.001 (You et al., 2017; SimCLR), μ = 0.9.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import torch
from torch import Tensor


class LARS(torch.optim.Optimizer):
    """LARS over ``params`` (tensors or parameter groups; see the module docstring)."""

    def __init__(
        self,
        params: Iterable[Tensor] | Iterable[dict[str, Any]],
        lr: float,
        momentum: float = 0.9,
        weight_decay: float = 0.0,
        trust_coefficient: float = 0.001,
        nesterov: bool = False,
        eps: float = 0.0,
    ) -> None:
        if lr <= 0:
            raise ValueError(f"lr must be > 0, got {lr}")
        if not 0.0 <= momentum < 1.0:
            raise ValueError(f"momentum must be in [0, 1), got {momentum}")
        if weight_decay < 0 or trust_coefficient <= 0:
            raise ValueError(
                f"weight_decay must be >= 0 and trust_coefficient > 0, got {weight_decay}, "
                f"{trust_coefficient}"
            )
        defaults = dict(
            lr=lr,
            momentum=momentum,
            weight_decay=weight_decay,
            trust_coefficient=trust_coefficient,
            nesterov=nesterov,
            eps=eps,
            lars_exclude=False,
        )
        super().__init__(params, defaults)

    @torch.no_grad()
    def step(self, closure: Callable[[], float] | None = None) -> float | None:  # type: ignore[override]
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            by_kind: dict[tuple[torch.device, torch.dtype], list[Tensor]] = {}
            for p in group["params"]:
                if p.grad is not None:
                    by_kind.setdefault((p.device, p.dtype), []).append(p)
            for params in by_kind.values():
                self._update(group, params)
        return loss

    def _update(self, group: dict[str, Any], params: list[Tensor]) -> None:
        """The module docstring's update for ``params`` (one device and dtype) in
        multi-tensor operations (``torch._foreach_*``): on a GPU a few kernels for the
        whole group, where a loop over the tensors launched about a dozen per tensor; the
        trust ratios stay on the device (no host read)."""
        mu, lr = group["momentum"], group["lr"]
        d = [p.grad for p in params]
        if not group["lars_exclude"]:
            if group["weight_decay"]:
                d = torch._foreach_add(d, params, alpha=group["weight_decay"])
            w_norm = torch.stack(torch._foreach_norm(params))
            d_norm = torch.stack(torch._foreach_norm(d))
            trust = torch.where(
                (w_norm > 0) & (d_norm > 0),
                group["trust_coefficient"] * w_norm / (d_norm + group["eps"]),
                torch.ones_like(w_norm),
            )
            d = torch._foreach_mul(d, list(trust.unbind()))
        bufs = []
        for p in params:
            state = self.state[p]
            if "momentum_buffer" not in state:
                state["momentum_buffer"] = torch.zeros_like(p)
            bufs.append(state["momentum_buffer"])
        torch._foreach_mul_(bufs, mu)
        torch._foreach_add_(bufs, d, alpha=lr)
        if group["nesterov"]:
            update = torch._foreach_mul(bufs, mu)
            torch._foreach_add_(update, d, alpha=lr)
            torch._foreach_sub_(params, update)
        else:
            torch._foreach_sub_(params, bufs)
