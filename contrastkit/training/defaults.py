"""Defaults that depend on the run's backbone or optimiser, each with its source.

:class:`~contrastkit.training.TrainConfig` declares these fields ``None``; :func:`resolve`
fills in the ones a config leaves unset (in ``TrainConfig.__post_init__``, so a built config
never holds ``None`` for them and ``final.json`` records the values the run used):

* ``loss`` by framework: the framework's own (:attr:`Framework.default_loss`: SimCLR,
  NNCLR NT-Xent; MoCo and SimCSE InfoNCE; SimSiam, Barlow Twins their losses; the
  multi-view framework CACR; the supervised one SupCon);
* ``width`` by backbone: ``conv`` 32 (this project's small CNN, sized for CPU data);
  ``resnet18/34/50`` 64, the first-stage width of He et al. (2016), Table 1, which makes
  ResNet-18 the 11.2M-parameter network with 512-d features (2048-d for ResNet-50).
* ``lr``, ``lr_scaling``, ``weight_decay``, ``schedule`` by optimiser:

  - ``adam``: 1e-3, × batch/256 above 256, 1e-6, constant (MACL App. B.3: Adam replaces
    SimCLR's LARS on CIFAR-10; no schedule named);
  - ``adamw``: Adam's values, reused (no source names an AdamW recipe for these runs;
    decoupled decay at 1e-6 is nearly none, torch's AdamW default being 1e-2);
  - ``sgd``: 0.12 × batch/256, 1e-4 (CACR App. B.1: a rate of 0.12 for every 256 samples
    of batch, momentum 0.9, weight decay 1e-4), constant (CACR's decays at epochs
    155/170/185 of 200 are set per run with ``schedule=step``);
  - ``lars``: 0.3 × batch/256, 1e-6, warm-up + cosine (SimCLR, Chen et al. 2020, App. B.1:
    LARS at 0.3 times batch/256, weight decay 1e-6, 10 epochs of linear warm-up, then
    cosine decay; the same recipe in MACL App. B.1); under ``lr_scaling: sqrt``, 1.2 ×
    sqrt(batch/256), SimCLR's 0.075·sqrt(batch) (MACL App. B.1.1: "1.2 under the square
    schedule while 0.3 under the linear schedule").

* ``warmup_epochs``: under ``lars`` with ``warmup_cosine``, 10 epochs (SimCLR App. B.1),
  at most a tenth of the run (SimCLR's shortest runs, 100 epochs, warm up for 10%), so
  short runs keep a cosine phase; otherwise 0 (no warm-up).

These are the values the settings had for every config before they depended on the
backbone and optimiser (width 32, Adam's values, no warm-up), except where a config names
a ResNet without ``width`` or a non-Adam optimiser without the field: there the recipe
above applies (``docs/defaults.md``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..frameworks import FRAMEWORKS
from ..models import BACKBONES

# the fields resolve() fills, in the order they are reported
RESOLVED = ("loss", "width", "lr", "lr_scaling", "weight_decay", "schedule", "warmup_epochs")


@dataclass(frozen=True)
class Default:
    """A default ``value`` and ``source``, the paper (section) or reason it comes from."""

    value: Any
    source: str


LOSS: dict[str, Default] = {
    name: Default(cls.default_loss, f"{name}'s loss") for name, cls in FRAMEWORKS.items()
}
_HE = "He et al. 2016, Table 1"
# conv: the small CNN's channels; on graphs GIN's hidden width, on tabular data the MLP's
_SMALL = "this project's CPU-sized encoders"
WIDTH: dict[str, Default] = {
    name: Default(32, _SMALL) if name == "conv" else Default(64, _HE) for name in BACKBONES
}

_MACL = "MACL App. B.3"
_ADAM = {
    "lr": Default(1e-3, _MACL),
    "lr_scaling": Default("linear_above_256", _MACL),
    "weight_decay": Default(1e-6, _MACL),
    "schedule": Default("constant", _MACL),
}
_CACR = "CACR App. B.1"
_SIMCLR = "SimCLR App. B.1"
OPTIMIZER: dict[str, dict[str, Default]] = {
    "adam": _ADAM,
    "adamw": {
        name: Default(d.value, "Adam's values: no AdamW recipe") for name, d in _ADAM.items()
    },
    "sgd": {
        "lr": Default(0.12, _CACR),
        "lr_scaling": Default("linear", _CACR),
        "weight_decay": Default(1e-4, _CACR),
        "schedule": Default("constant", "no decay: CACR's steps are set per run"),
    },
    "lars": {
        "lr": Default(0.3, _SIMCLR),
        "lr_scaling": Default("linear", _SIMCLR),
        "weight_decay": Default(1e-6, _SIMCLR),
        "schedule": Default("warmup_cosine", _SIMCLR),
    },
}
LARS_WARMUP_EPOCHS = 10.0  # SimCLR App. B.1, capped at a tenth of the run (warmup_default)
# LARS's rate at batch 256 under the square-root rule: SimCLR's 0.075·sqrt(B) (MACL B.1.1)
LARS_SQRT_LR = Default(1.2, "SimCLR App. B.1, square-root rule (MACL App. B.1.1)")


def by_optimizer(key: str) -> str:
    """``key``'s defaults by optimiser for ``--help``: ``"adam/adamw 0.001, sgd 0.12, ..."``."""
    return _grouped((name, table[key].value) for name, table in OPTIMIZER.items())


def by_framework() -> str:
    """``loss``'s defaults by framework for ``--help``: ``"simclr/nnclr ntxent, ..."``."""
    return _grouped((name, default.value) for name, default in LOSS.items())


def by_backbone() -> str:
    """``width``'s defaults by backbone for ``--help``: ``"conv 32, resnet18/... 64"``."""
    return _grouped((name, default.value) for name, default in WIDTH.items())


def _grouped(pairs: Iterable[tuple[str, Any]]) -> str:
    """``name value`` pairs, the names of one value joined by ``/``."""
    groups: dict[Any, list[str]] = {}
    for name, value in pairs:
        groups.setdefault(value, []).append(name)
    return ", ".join(f"{'/'.join(names)} {value}" for value, names in groups.items())


# warmup_default's rule in words, for --help
WARMUP_RULE = f"lars under warmup_cosine {LARS_WARMUP_EPOCHS:g}, at most epochs/10; else 0"


def warmup_default(optimizer: str, schedule: str | None, epochs: int) -> Default:
    """``warmup_epochs`` when not given: SimCLR's 10 epochs (at most ``epochs / 10``) for
    LARS under ``warmup_cosine``, none otherwise."""
    if optimizer == "lars" and schedule == "warmup_cosine":
        return Default(min(LARS_WARMUP_EPOCHS, epochs / 10), f"{_SIMCLR}, at most epochs/10")
    return Default(0.0, "no warm-up")


def resolve(values: Mapping[str, Any]) -> dict[str, Default]:
    """The defaults of the :data:`RESOLVED` fields that are ``None`` in ``values`` (the
    config's fields), given its ``backbone``, ``optimizer``, ``schedule`` and ``epochs``.

    An unknown backbone or optimiser leaves its fields unset (``TrainConfig.validate``
    names it), as does a non-integer ``epochs`` for ``warmup_epochs``."""
    schedule = values["schedule"]
    if schedule is None and values["optimizer"] in OPTIMIZER:  # the warm-up follows it
        schedule = OPTIMIZER[values["optimizer"]]["schedule"].value
    return {
        name: default
        for name, default in _defaults(values, schedule).items()
        if values[name] is None
    }


def in_effect(values: Mapping[str, Any]) -> dict[str, str]:
    """``{field: source}`` of the :data:`RESOLVED` fields of a built config whose value is
    its backbone's or optimiser's default: what ``final.json`` records as
    ``defaults_applied`` and a run prints when it starts.

    A value given explicitly that equals the default is listed too: a run cannot tell the
    two apart, since study and compare seeds rebuild their configs from the resolved
    values. ``warmup_epochs`` is listed only under ``warmup_cosine``, where it applies."""
    return {
        name: default.source
        for name, default in _defaults(values, values["schedule"]).items()
        if values[name] == default.value
        and (name != "warmup_epochs" or values["schedule"] == "warmup_cosine")
    }


def _defaults(values: Mapping[str, Any], schedule: str | None) -> dict[str, Default]:
    """Every :data:`RESOLVED` field's default for ``values`` under ``schedule``."""
    out: dict[str, Default] = {}
    if values["framework"] in LOSS:
        out["loss"] = LOSS[values["framework"]]
    if values["backbone"] in WIDTH:
        out["width"] = WIDTH[values["backbone"]]
    out.update(OPTIMIZER.get(values["optimizer"], {}))
    if values["optimizer"] == "lars" and values["lr_scaling"] == "sqrt":
        out["lr"] = LARS_SQRT_LR
    epochs = values["epochs"]
    if isinstance(epochs, int) and not isinstance(epochs, bool):
        out["warmup_epochs"] = warmup_default(values["optimizer"], schedule, epochs)
    return out


def describe(values: Mapping[str, Any]) -> str:
    """One line naming the defaults in effect (:func:`in_effect`) and their sources,
    grouped by source: ``defaults: width=32 (this project's CPU-sized encoders); lr=0.001, ...``."""
    groups: dict[str, list[str]] = {}
    for name, source in in_effect(values).items():
        groups.setdefault(source, []).append(f"{name}={values[name]}")
    if not groups:
        return "defaults: none (every backbone/optimiser-dependent setting given)"
    return "defaults: " + "; ".join(f"{', '.join(v)} ({k})" for k, v in groups.items())
