"""Learning-rate schedules (stepped once per optimiser step) and batch-size scaling.

Each schedule is a multiplier ``m(s)`` of the base rate at optimiser step ``s`` (0-based;
``T`` = total steps, ``W`` = warm-up steps, ``E`` = steps per epoch):

* ``constant``: ``m = 1`` (MACL App. B.3, Adam on CIFAR-10);
* ``warmup_cosine``: ``m = (s + 1) / W`` for ``s < W``, then
  ``m = ½(1 + cos(π (s - W) / (T - W)))`` (MACL App. B.1: 10 warm-up epochs, cosine decay);
* ``step``: ``m = γ^k`` with ``k`` the number of milestones ``≤ ⌊s / E⌋`` (epochs, 0-based
  epoch counter reaching the milestone); CACR App. B.1: γ = 0.1 at epochs 155, 170, 185 of 200;
* ``linear``: ``m = max(0, 1 - s / T)`` (SimCSE: linear decay to 0 without warm-up, the
  Hugging Face Trainer's default).

Learning-rate scaling with the batch size ``B`` (:func:`scale_lr`):

* ``linear``: ``lr · B / 256`` (Goyal et al., 2017; MACL App. B.1, CACR App. B.1);
* ``sqrt``: ``lr · sqrt(B / 256)`` (SimCLR's square-root rule, MACL App. B.1.1: with
  LARS the rate at batch 256 is 1.2 under it, 0.3 under the linear rule, SimCLR's
  0.075·sqrt(B); ``lars`` takes 1.2 when ``lr`` is unset);
* ``none``: ``lr``;
* ``linear_above_256`` (the default): ``lr · max(1, B / 256)``, MACL App. B.3's Adam rule
  ("for batch sizes larger than 256").
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import torch

SCHEDULES = ("constant", "warmup_cosine", "step", "linear")
# schedules whose multiplier at step s depends on the total T: a run stopped at E epochs
# and continued to E' != E follows neither length's schedule, so it cannot be extended
LENGTH_DEPENDENT = ("warmup_cosine", "linear")
LR_SCALINGS = ("linear_above_256", "linear", "sqrt", "none")


def scale_lr(lr: float, batch_size: int, rule: str = "linear_above_256") -> float:
    """``lr`` scaled for ``batch_size`` by ``rule`` (one of :data:`LR_SCALINGS`)."""
    ratio = batch_size / 256
    if rule == "linear_above_256":
        return lr * max(1.0, ratio)
    if rule == "linear":
        return lr * ratio
    if rule == "sqrt":
        return lr * math.sqrt(ratio)
    if rule == "none":
        return lr
    raise ValueError(f"unknown lr_scaling {rule!r}; available: {', '.join(LR_SCALINGS)}")


def multiplier(
    name: str,
    steps_per_epoch: int,
    epochs: int,
    warmup_epochs: float = 0.0,
    milestones: Sequence[int] = (),
    gamma: float = 0.1,
) -> Callable[[int], float]:
    """The schedule ``m(s)`` of the module docstring as a function of the step ``s``."""
    if steps_per_epoch < 1 or epochs < 1:
        raise ValueError(
            f"steps_per_epoch and epochs must be >= 1, got {steps_per_epoch}, {epochs}"
        )
    total = steps_per_epoch * epochs
    if name == "constant":
        return lambda s: 1.0
    if name == "linear":
        return lambda s: max(0.0, 1.0 - s / total)
    if name == "step":
        marks = sorted(int(m) for m in milestones)
        return lambda s: gamma ** sum(1 for m in marks if s // steps_per_epoch >= m)
    if name == "warmup_cosine":
        warm = round(warmup_epochs * steps_per_epoch)
        if warm >= total:
            raise ValueError(
                f"warmup_epochs {warmup_epochs} leaves no steps for the cosine decay "
                f"({epochs} epochs)"
            )

        def cosine(s: int) -> float:
            if s < warm:
                return (s + 1) / warm
            return 0.5 * (1.0 + math.cos(math.pi * min(s - warm, total - warm) / (total - warm)))

        return cosine
    raise ValueError(f"unknown schedule {name!r}; available: {', '.join(SCHEDULES)}")


def build_schedule(
    name: str,
    optimizer: torch.optim.Optimizer,
    steps_per_epoch: int,
    epochs: int,
    warmup_epochs: float = 0.0,
    milestones: Sequence[int] = (),
    gamma: float = 0.1,
) -> torch.optim.lr_scheduler.LambdaLR:
    """A ``LambdaLR`` applying :func:`multiplier` to every parameter group's rate; call
    ``.step()`` after each optimiser step."""
    fn = multiplier(name, steps_per_epoch, epochs, warmup_epochs, milestones, gamma)
    return torch.optim.lr_scheduler.LambdaLR(optimizer, fn)
