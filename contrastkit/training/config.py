"""Run configuration: defaults, YAML files and ``key=value`` overrides, validated up front.

Defaults follow MACL's CIFAR-10 recipe (Appendix B.3) where it carries over to CPU-sized
data: Adam, learning rate 1e-3 (× batch/256 above 256), weight decay 1e-6, constant rate,
projection width 128; epochs and queue size are sized for small data and a shared CPU.
Width follows the backbone (ResNets: He et al.'s 64) and lr, its scaling, weight decay,
schedule and warm-up the optimiser (LARS: SimCLR App. B.1's 0.3 × batch/256, 10 warm-up
epochs, cosine decay): :mod:`.defaults`, ``docs/defaults.md``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..data import check_modality, dataset_info
from ..engine import scale_lr
from . import defaults
from .config_sections import DataSection, LossSection, ModelSection
from .config_sections_run import (
    EngineSection,
    EvaluationSection,
    OptimisationSection,
    OutputSection,
)
from .settings import SECTIONS, declarations, run_checks

# the modalities' checks of their own settings (Modality.check), run by every config
_CHECKS: list[Callable[[TrainConfig], None]] = []
# modality -> {config key: the value it takes on that modality's data when left None}
# (Modality.unset, added by register_modality)
_UNSET: dict[str, dict[str, Any]] = {}
# checked first: an unknown optimiser leaves the defaults that depend on it unset
_FIRST = ("optimizer", "lr_scaling", "precision", "schedule")


def add_unset(modality: str, values: Mapping[str, Any]) -> None:
    """On ``modality``'s data, a config setting left ``None`` takes its value in
    ``values`` (after the checks); ``register_modality`` adds a modality's."""
    _UNSET[modality] = dict(values)


def add_check(check: Callable[[TrainConfig], None]) -> None:
    """Run ``check(config)`` in every config's :meth:`TrainConfig.validate` (after the
    engine's own checks, in the order added); ``register_modality`` adds a modality's."""
    _CHECKS.append(check)


@dataclass
class TrainConfig(
    OutputSection,
    EvaluationSection,
    EngineSection,
    OptimisationSection,
    LossSection,
    ModelSection,
    DataSection,
):
    """Everything that determines a training run (saved into checkpoints and final.json):
    the fields of every section (:mod:`.config_sections`, :mod:`.config_sections_run`),
    data's first, each declared once with its type, default, help, source and check."""

    def __post_init__(self) -> None:
        if isinstance(self.lr_scaling, bool):  # configs written before lr_scaling was a rule
            self.lr_scaling = "linear_above_256" if self.lr_scaling else "none"
        for name in ("lr_milestones", "jitter", "final_eval_at"):
            if isinstance(getattr(self, name), tuple):
                setattr(self, name, list(getattr(self, name)))
        for name, default in defaults.resolve(self.to_dict()).items():
            setattr(self, name, default.value)
        self.validate()
        for name, value in _UNSET.get(dataset_info(self.dataset).modality, {}).items():
            if getattr(self, name) is None:
                setattr(self, name, value)

    def validate(self) -> None:
        """Raise ``ValueError`` naming the first bad field: the dataset's modality, the
        declared checks (the optimiser's choices first), then what relates fields."""
        check_modality(self.dataset, self.modality)  # ValueError naming the datasets
        decls = declarations(TrainConfig)
        run_checks(self, [d for d in decls if d.key in _FIRST])
        run_checks(self, [d for d in decls if d.key not in _FIRST])
        if self.batch_size < 2:
            raise ValueError(
                "batch_size must be >= 2 (contrastive losses need negatives), "
                f"got {self.batch_size}"
            )
        for check in _CHECKS:  # each modality's settings (images, text, graphs...)
            check(self)
        self.final_eval_epochs()
        warm, marks = self.warmup_epochs, self.lr_milestones
        if (
            not isinstance(warm, int | float)
            or isinstance(warm, bool)
            or not 0 <= warm < self.epochs
        ):
            raise ValueError(
                f"warmup_epochs must be a number in [0, epochs = {self.epochs}), got {warm!r}"
            )
        if warm and self.schedule != "warmup_cosine":
            raise ValueError(
                f"warmup_epochs applies to schedule 'warmup_cosine', not {self.schedule!r}"
            )
        if self.compile_mode != "default" and not self.compile:
            raise ValueError(
                f"compile_mode {self.compile_mode!r} applies with compile: true (--compile)"
            )
        if self.schedule == "step" and not marks:
            raise ValueError("schedule 'step' needs lr_milestones (e.g. [155, 170, 185])")

    def final_eval_epochs(self) -> list[int]:
        """The epochs before the last at which the final evaluation also runs
        (``final_eval_at``); ``ValueError`` for a fraction outside (0, 1)."""
        at = self.final_eval_at
        if not isinstance(at, list | tuple) or not all(
            isinstance(f, int | float) and not isinstance(f, bool) and 0 < f < 1 for f in at
        ):
            raise ValueError(f"final_eval_at must be a list of fractions in (0, 1), got {at!r}")
        if at and self.framework == "simcse":
            raise ValueError("final_eval_at does not apply to framework simcse (see eval_steps)")
        return sorted({max(1, round(f * self.epochs)) for f in at} - {self.epochs})

    def steps_per_epoch(self, n_train: int, world: int = 1) -> int:
        """Full batches of ``n_train`` samples, or ``epoch_steps`` of them; ``ValueError``
        when the batch exceeds the data or does not split evenly over ``world`` processes."""
        if self.batch_size > n_train:
            raise ValueError(
                f"batch_size {self.batch_size} exceeds the {n_train} training samples "
                f"of {self.dataset}"
            )
        if self.batch_size % world:
            raise ValueError(
                f"batch_size {self.batch_size} must divide evenly over {world} processes"
            )
        full = n_train // self.batch_size
        if self.epoch_steps is not None and self.epoch_steps > full:
            raise ValueError(
                f"epoch_steps {self.epoch_steps} exceeds the {full} full batches "
                f"of {n_train} samples"
            )
        return full if self.epoch_steps is None else self.epoch_steps

    @property
    def effective_lr(self) -> float:
        """``lr`` scaled for the batch of one optimiser step (``batch_size × grad_accum``)
        by the ``lr_scaling`` rule (:func:`contrastkit.engine.scale_lr`)."""
        return scale_lr(self.lr, self.batch_size * self.grad_accum, self.lr_scaling)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def differences(self, saved: object, ignore: Iterable[str] = ()) -> list[str]:
        """Sorted keys whose values differ between ``saved`` (the config mapping an earlier
        run wrote) and this config, ``ignore`` aside.

        ``saved`` goes through :meth:`from_dict` first, so keys added since it was written
        take their defaults and older spellings are normalised (a run written before a
        key existed equals a run with that key's default); a ``saved`` that is not a
        valid config differs in every key."""
        current = self.to_dict()
        skip = set(ignore)
        try:
            filled = TrainConfig.from_dict(dict(saved)).to_dict()  # type: ignore[call-overload]
        except (TypeError, ValueError):
            return sorted(k for k in current if k not in skip)
        return sorted(k for k in current if k not in skip and filled[k] != current[k])

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> TrainConfig:
        """Build from a mapping, flat or grouped in sections (:func:`flatten`); unknown keys
        raise ``ValueError`` listing the known ones."""
        values = flatten(values)
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(
                f"unknown config key(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}"
            )
        return cls(**values)


def flatten(values: dict[str, Any]) -> dict[str, Any]:
    """A config mapping with its sections opened: ``{"engine": {"precision": "bf16"}}`` is
    ``{"precision": "bf16"}``. A section is a :data:`~.settings.SECTIONS` name whose value
    is a mapping (so ``loss: ntxent`` stays the loss's name); a key in the wrong section
    or given twice is a ``ValueError`` naming it. Flat keys, as every config before
    sections and every ``final.json``, pass unchanged."""
    where = {d.key: d.section for d in declarations(TrainConfig)}
    flat: dict[str, Any] = {}
    for key, value in values.items():
        section = key in SECTIONS and isinstance(value, dict)
        for name, v in value.items() if section else [(key, value)]:
            if section and where.get(name) != key:
                home = f" (it belongs in {where[name]!r})" if name in where else ""
                raise ValueError(f"config section {key!r} has no setting {name!r}{home}")
            if name in flat:
                raise ValueError(f"config key {name!r} is given twice")
            flat[name] = v
    return flat


# the settings whose value is a mapping (loss_args, modality_args): a config given over
# another (a command line over a YAML file, an arm over a study's base) merges them key by key
MAPPING_KEYS = tuple(d.key for d in declarations(TrainConfig) if d.kind is dict)


def merge_config(base: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    """``base`` updated by ``overrides`` (flat config values); the mappings
    (:data:`MAPPING_KEYS`) are merged key by key."""
    merged = {**base, **overrides}
    for key in MAPPING_KEYS:
        if key in base and key in overrides:
            merged[key] = {**base[key], **overrides[key]}
    return merged


# where a run's data is and how it executes: set per machine (``contrastkit study --set``),
# never part of a protocol, and free to change when a run resumes; every other field is
ENVIRONMENT_KEYS = tuple(d.key for d in declarations(TrainConfig) if d.environment)
