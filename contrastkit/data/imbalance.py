"""Class-imbalanced training subsets (CACR §5.2, following Kim et al., 2020).

CACR §5.2 samples each class ``l ∈ {1, ..., C}`` of CIFAR-10/100 "with proportion
⌊l/C⌋" (linear rule) or "exp(⌊l/C⌋)" (exponential rule); the extracted text of the
formula is garbled (⌊l/C⌋ would be 0 for every class but the last). Our reading, which
matches Kim et al. (2020)'s long-tailed CIFAR construction and gives the paper's linear
rule exactly at the default ratio, with imbalance ratio ``ρ = n_max / n_min``:

* linear:      ``f_l = 1/ρ + (1 - 1/ρ)·(l - 1)/(C - 1)``; the default ``ρ = C`` gives
  ``f_l = l / C`` (class 1 keeps 1/C of its samples, class C all of them);
* exponential: ``f_l = ρ^{-(C - l)/(C - 1)}``, a geometric decay from 1 (class C) to
  ``1/ρ`` (class 1); default ``ρ = 100``, Kim et al.'s (and Cao et al. 2019's) CIFAR-LT
  setting.

Class ``l`` keeps ``max(1, round(f_l · n_l))`` of its ``n_l`` training samples, chosen
by a permutation seeded with ``seed``; the subset is fixed once drawn. The test split is
unchanged (balanced), so train and test differ by a label shift, as in the paper.
"""

from __future__ import annotations

import dataclasses

import torch

from .sources import take
from .split import Split

RULES = ("linear", "exponential")
DEFAULT_RATIO = {"exponential": 100.0}


def class_fractions(rule: str, num_classes: int, ratio: float | None = None) -> torch.Tensor:
    """``f_l`` for ``l = 1..C`` (float64 ``[C]``) under ``rule``; see the module docstring."""
    if rule not in RULES:
        raise ValueError(f"imbalance must be one of {RULES}, got {rule!r}")
    if num_classes < 2:
        raise ValueError(f"imbalance needs >= 2 classes, got {num_classes}")
    rho = float(DEFAULT_RATIO.get(rule, num_classes) if ratio is None else ratio)
    if not rho >= 1.0:
        raise ValueError(f"imbalance_ratio must be a number >= 1, got {ratio!r}")
    pos = torch.arange(num_classes, dtype=torch.float64) / (num_classes - 1)  # (l-1)/(C-1)
    if rule == "linear":
        return 1.0 / rho + (1.0 - 1.0 / rho) * pos
    return rho ** (pos - 1.0)


def imbalance_split(split: Split, rule: str, ratio: float | None = None, seed: int = 0) -> Split:
    """``split`` with its training set subsampled per class by :func:`class_fractions`."""
    y = split.y_train
    if y.is_floating_point():
        raise ValueError(f"imbalance needs class labels; {split.name} has continuous labels")
    fractions = class_fractions(rule, split.num_classes, ratio)
    order = torch.randperm(y.shape[0], generator=torch.Generator().manual_seed(seed))
    keep = []
    for c, f in enumerate(fractions.tolist()):
        members = order[y[order] == c]
        keep.append(members[: max(1, round(f * members.numel()))] if members.numel() else members)
    idx = torch.cat(keep).sort().values
    return dataclasses.replace(
        split, name=f"{split.name}-{rule}", x_train=take(split.x_train, idx), y_train=y[idx]
    )
