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

A step can be skipped on the device, as torch's fused optimisers do: when ``found_inf`` (a
device tensor, > 0 for a step with a non-finite gradient) is set on the optimiser, which
the engine and ``torch.amp.GradScaler`` do for optimisers with
``_step_supports_amp_scaling``, the update is computed from ``d`` with its non-finite
entries zeroed and then multiplied by ``1 - [found_inf > 0]``, and ``μ`` becomes 1 for that
step: a skipped step leaves parameters and momentum exactly as they were, a taken one is
the update above bit for bit, and neither reads the device from the host (a read waits for
the queued work, which stops the host from preparing the next step; measured on an H200,
LARS ran a bf16 SimCLR step at 0.76x Adam's samples/s with that read). ``grad_scale``, set
by a ``GradScaler`` whose gradients were not unscaled, divides the gradients first.
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
        self._step_supports_amp_scaling = True  # honours found_inf / grad_scale (docstring)
        self.skips_on_device = True  # what the engine asks (engine.optim.skips_on_device)
        # per group, device and dtype: the parameters' ids, one buffer and a view of it
        # for each tensor (_finite_times)
        self._scratch: dict[tuple[Any, ...], tuple[tuple[int, ...], Tensor, list[Tensor]]] = {}

    @torch.no_grad()
    def step(self, closure: Callable[[], float] | None = None) -> float | None:  # type: ignore[override]
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        found_inf = getattr(self, "found_inf", None)
        grad_scale = getattr(self, "grad_scale", None)
        for group in self.param_groups:
            by_kind: dict[tuple[torch.device, torch.dtype], list[Tensor]] = {}
            for p in group["params"]:
                if p.grad is not None:
                    by_kind.setdefault((p.device, p.dtype), []).append(p)
            for (device, dtype), params in by_kind.items():
                d = [p.grad for p in params]
                if grad_scale is not None:
                    d = torch._foreach_div(d, grad_scale.to(device, dtype))
                keep = None if found_inf is None else (found_inf.to(device) <= 0).to(dtype)
                self._update(group, params, d, keep)
        return loss

    def _update(
        self, group: dict[str, Any], params: list[Tensor], d: list[Tensor], keep: Tensor | None
    ) -> None:
        """The module docstring's update for ``params`` (one device and dtype) with
        gradients ``d``, in multi-tensor operations (``torch._foreach_*``): on a GPU a few
        kernels for the whole group, where a loop over the tensors launched about a dozen
        per tensor; the trust ratios stay on the device (no host read). ``keep``: 1 to take
        the step, 0 to skip it (a 0-dim tensor of the parameters' dtype; see the module
        docstring), ``None``: take it."""
        mu, lr = group["momentum"], group["lr"]
        if not group["lars_exclude"] and group["weight_decay"]:
            d = torch._foreach_add(d, params, alpha=group["weight_decay"])
        if keep is not None:  # a skipped step's d is 0, its momentum factor 1
            d = self._finite_times(id(group), params, d, keep)
            mu = torch.where(keep > 0, mu, torch.ones_like(keep))
        if not group["lars_exclude"]:
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
        update = bufs
        if group["nesterov"]:
            update = torch._foreach_mul(bufs, mu)
            torch._foreach_add_(update, d, alpha=lr)
        if keep is not None:
            update = torch._foreach_mul(update, keep)
        torch._foreach_sub_(params, update)

    def _finite_times(
        self, group: int, params: list[Tensor], d: list[Tensor], keep: Tensor
    ) -> list[Tensor]:
        """``d`` with its non-finite entries set to 0, times ``keep``: copied into one
        buffer (``nan_to_num`` has no multi-tensor form) whose views, one per tensor in
        its parameter's memory layout (channels_last weights too, so the multi-tensor
        operations after it stay single kernels), are made once per parameter list of
        ``group`` and kept, so a step adds three operators whatever the number of
        tensors."""
        slot, ids = (group, params[0].device, params[0].dtype), tuple(map(id, params))
        kept = self._scratch.get(slot)
        if kept is None or kept[0] != ids:  # first step, or another list of gradients
            flat = params[0].new_empty(sum(p.numel() for p in params))
            views, offset = [], 0
            for p in params:
                stride = p.stride() if _dense(p) else p.contiguous().stride()
                views.append(flat.as_strided(p.shape, stride, offset))
                offset += p.numel()
            kept = self._scratch[slot] = (ids, flat, views)
        _, flat, views = kept
        torch._foreach_copy_(views, d)
        flat.nan_to_num_(0.0, 0.0, 0.0).mul_(keep)
        return views


def _dense(t: Tensor) -> bool:
    """Whether ``t``'s elements fill one block of memory (read in memory order by
    ``as_strided``): contiguous, or channels_last."""
    return t.is_contiguous() or (
        t.dim() == 4 and t.is_contiguous(memory_format=torch.channels_last)
    )
