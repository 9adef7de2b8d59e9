"""Optimiser construction by name: ``sgd``, ``adam``, ``adamw``, ``lars``.

Where each comes from (the learning rate and weight decay a run gets when its config names
none are the trainer's, :mod:`contrastkit.training.defaults`; here ``weight_decay`` is 0
unless given):

* ``sgd``: momentum 0.9 (the default of ``momentum`` here) as CACR's SGD (App. B.1, "0.12
  per 256", weight decay 1e-4); Nesterov off unless asked for.
* ``adam``: MACL's CIFAR-10 optimiser (App. B.3: lr 1e-3, weight decay 1e-6), this
  project's default; one parameter group holding every parameter, as before the engine.
* ``adamw``: SimCSE's optimiser (Gao et al., 2021, through the Hugging Face Trainer).
* ``lars``: MACL's ImageNet setting (App. B.1: LARS, lr 0.3 × batch/256, weight decay
  1e-6), see :class:`~contrastkit.engine.lars.LARS`; biases and normalisation parameters
  (1-D tensors) go to a group excluded from weight decay and the trust ratio.

On CUDA, ``sgd``, ``adam`` and ``adamw`` are torch's fused implementations (one kernel
for all parameters, and a step the device can skip without the host reading anything:
:meth:`~contrastkit.engine.Engine.backward_step`); elsewhere torch's default ones, so
CPU runs keep their numbers.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable
from typing import Any

import torch
from torch import Tensor, nn

from .lars import LARS

OPTIMIZERS = ("sgd", "adam", "adamw", "lars")


def param_groups(params: Iterable[Tensor], weight_decay: float) -> list[dict[str, Any]]:
    """Two groups: tensors of 2+ dimensions (weights) with ``weight_decay``, and 1-D tensors
    (biases, batch-norm scales and shifts) with no decay and ``lars_exclude=True``."""
    params = list(params)
    decay = [p for p in params if p.dim() > 1]
    keep = [p for p in params if p.dim() <= 1]
    groups = [{"params": decay, "weight_decay": weight_decay, "lars_exclude": False}]
    if keep:
        groups.append({"params": keep, "weight_decay": 0.0, "lars_exclude": True})
    return groups


def trainable(params_or_model: nn.Module | Iterable[Tensor]) -> list[Tensor]:
    """The parameters in order, without duplicates. Frozen ones (``requires_grad=False``,
    e.g. a momentum encoder's) are kept: they get no gradient, so every optimiser skips
    them, and keeping them leaves optimiser state dicts laid out as before the engine."""
    params = (
        params_or_model.parameters() if isinstance(params_or_model, nn.Module) else params_or_model
    )
    seen: set[int] = set()
    out = []
    for p in params:
        if id(p) not in seen:
            seen.add(id(p))
            out.append(p)
    return out


def build_optimizer(
    name: str,
    params_or_model: nn.Module | Iterable[Tensor],
    lr: float,
    weight_decay: float = 0.0,
    momentum: float = 0.9,
    nesterov: bool = False,
    **options: Any,
) -> torch.optim.Optimizer:
    """Optimiser ``name`` (one of :data:`OPTIMIZERS`) over the trainable parameters.

    ``momentum`` and ``nesterov`` apply to ``sgd`` and ``lars``; ``options`` go to the
    optimiser's constructor (``betas`` for Adam/AdamW, ``trust_coefficient`` for LARS)."""
    params = trainable(params_or_model)
    if not any(p.requires_grad for p in params):
        raise ValueError("build_optimizer: no trainable parameters")
    cls = {"adam": torch.optim.Adam, "adamw": torch.optim.AdamW, "sgd": torch.optim.SGD}
    if name in cls and "fused" not in options and _fusable(cls[name], params):
        options["fused"] = True
    if name == "adam":
        return torch.optim.Adam(params, lr=lr, weight_decay=weight_decay, **options)
    if name == "adamw":
        return torch.optim.AdamW(params, lr=lr, weight_decay=weight_decay, **options)
    if name == "sgd":
        sgd = torch.optim.SGD(
            params,
            lr=lr,
            momentum=momentum,
            nesterov=nesterov,
            weight_decay=weight_decay,
            **options,
        )
        if sgd.defaults.get("fused") and momentum:
            # fused SGD makes its buffers with empty_like at its first step and leaves them
            # unwritten when that step is skipped (found_inf: fp16's overflowing first steps),
            # so the next step would read garbage; zeros give the same first step (0.9·0 + g)
            for p in params:
                if p.requires_grad:
                    sgd.state[p]["momentum_buffer"] = torch.zeros_like(p)
        return sgd
    if name == "lars":
        return LARS(
            param_groups(params, weight_decay),
            lr=lr,
            momentum=momentum,
            nesterov=nesterov,
            weight_decay=weight_decay,
            **options,
        )
    raise ValueError(f"unknown optimizer {name!r}; available: {', '.join(OPTIMIZERS)}")


def _fusable(cls: type, params: list[Tensor]) -> bool:
    """Whether ``cls`` has a fused implementation in this torch and every parameter is a
    floating-point CUDA tensor."""
    on_cuda = all(p.is_cuda and p.is_floating_point() for p in params)
    return on_cuda and "fused" in inspect.signature(cls.__init__).parameters


def skips_on_device(optimizer: torch.optim.Optimizer) -> bool:
    """Whether ``optimizer`` can skip a step on the device (``found_inf``): torch's fused
    Adam, AdamW and SGD, which :func:`~contrastkit.engine.build_optimizer` builds for CUDA
    parameters, and an optimiser that says so (``skips_on_device``, e.g.
    :class:`~contrastkit.engine.LARS`)."""
    if not getattr(optimizer, "_step_supports_amp_scaling", False):
        return False
    said = getattr(optimizer, "skips_on_device", False)
    return said or all(group.get("fused") for group in optimizer.param_groups)
