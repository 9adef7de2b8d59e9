"""Modalities as plug-ins: what a kind of data brings to the shared training loop.

A :class:`Modality` declares, once, everything the loop needs to know about one kind of
data: the data kinds its datasets name (:class:`~contrastkit.data.Split` ``kind``), how to
build its encoder and its views (a :class:`ViewAugment`), which trainer runs it (its
evaluation protocol and analyses are that trainer's hooks), its config checks, its own
settings (:class:`ModalitySetting`, given in a config's ``modality_args``), the numbers
its trainer adds to ``final.json`` and the encoder architectures that ``contrastkit
export`` writes. :func:`register_modality` records it and declares its kinds to the
dataset registry; the modality's package then registers its datasets with
:func:`contrastkit.data.register_dataset`.

The built-in modalities are packages above this layer (:mod:`contrastkit.images`: images
and signals, :mod:`contrastkit.tabular`, :mod:`contrastkit.text`, :mod:`contrastkit.graphs`)
that register themselves when imported; :mod:`contrastkit.modalities` imports them. A
modality defined anywhere else registers the same way (``docs/guides/adding-a-modality.md``).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import torch
from torch import nn

from ..data import Split, dataset_info, register_kind
from ..models import register_architecture
from ..models.export import Architecture
from .config import TrainConfig, add_check, add_unset
from .metrics import Metric, register_curve_points, register_metrics
from .settings import Check


class ViewAugment(Protocol):
    """A random view generator: ``augment(batch, generator)`` returns a new view of every
    sample of ``batch`` (the same container type: a tensor, a list of sentences, a graph
    batch), drawing its randomness from ``generator`` only, so that a run replays."""

    def __call__(self, batch: Any, generator: torch.Generator) -> Any: ...


def make_views(
    augments: Sequence[ViewAugment], batch: Any, generator: torch.Generator, model: Any
) -> list[Any]:
    """``model.num_views`` views of ``batch``, view ``v`` by ``augments[v % len]``. Augments
    of one class that offers ``batched_views(augments, batch, generator, n)`` (the same
    results as one call per view, in one pass:
    :meth:`contrastkit.images.ImageAugment.batched_views`) make them all at once."""
    n = model.num_views
    batched = getattr(type(augments[0]), "batched_views", None)
    if batched is not None and all(type(a) is type(augments[0]) for a in augments):
        return batched(augments, batch, generator, n)
    return [augments[v % len(augments)](batch, generator) for v in range(n)]


@dataclass(frozen=True)
class ModalitySetting:
    """A setting that a modality declares for itself: a config gives it in
    ``modality_args`` (``--modality-arg NAME=VALUE``, or ``modality_args: {NAME: VALUE}``
    in the YAML file's ``data`` section), and the modality's builders read it with
    :func:`modality_settings`.

    Attributes:
        name: its key in ``modality_args``.
        default: its value when the config does not give it.
        help: one line for ``contrastkit`` users.
        check: ``(name, value) -> None``, raising ``ValueError`` for a value it refuses
            (the checks of :mod:`.settings`, e.g. ``positive_int``).
    """

    name: str
    default: Any
    help: str
    check: Check | None = None


EncoderBuilder = Callable[[Split, TrainConfig], nn.Module]
AugmentBuilder = Callable[[Split, TrainConfig], ViewAugment]
# (config, label_aware) -> the trainer class; label_aware: the run is compared with
# label-aware runs (contrastkit compare / study), so it is evaluated like them
TrainerChoice = Callable[[TrainConfig, bool], type]


@dataclass(frozen=True)
class Modality:
    """One kind of data the loop trains on (see the module docstring).

    Attributes:
        name: what ``--modality`` names (``image``, ``text``...).
        kinds: the :class:`~contrastkit.data.Split` kinds of its datasets.
        encoder: ``(split, config) -> encoder`` of the base trainer's
            :meth:`~contrastkit.training.Trainer.build_encoder`; ``None`` when the
            modality's trainer builds its own.
        augment: ``(split, config) -> view generator`` of the base trainer's
            :meth:`~contrastkit.training.Trainer.build_augment`; ``None`` likewise.
        trainer: ``(config, label_aware) -> Trainer subclass``; ``None``: the shared rule
            (:func:`contrastkit.training.trainer_class`).
        check: ``config -> None``, raising ``ValueError`` for a setting that this
            modality refuses; run by every config, whatever its dataset, so a modality
            also refuses its own settings on other data.
        architectures: the encoder classes it exports (``contrastkit export``).
        settings: its own settings (:class:`ModalitySetting`).
        metrics: the numbers its trainer adds to ``final.json`` (:class:`.metrics.Metric`:
            what ``contrastkit study`` may judge and ``contrastkit compare`` tabulates).
        curve_points: ``(key, evaluations)`` of the per-epoch curves it writes to
            ``metrics.jsonl`` whose convergence window (``contrastkit study``) must hold
            more than the general 2 evaluations (:func:`.metrics.min_points`).
        unset: ``(key, value)``: the value a :class:`~.config.TrainConfig` setting left
            ``None`` takes on its data (text: ``joint_views`` false, its sentence lists
            are encoded view by view); ``--help`` notes it as ``"text: default false"``.
        notes: ``(key, words)``: what it adds to the ``--help`` of a
            :class:`~.config.TrainConfig` setting it reads (the names it accepts, the
            value it takes when the setting is unset), from the constants that hold them,
            so that the core's help never quotes a modality's values (:func:`setting_notes`).
        description: one line for listings.
    """

    name: str
    kinds: tuple[str, ...]
    encoder: EncoderBuilder | None = None
    augment: AugmentBuilder | None = None
    trainer: TrainerChoice | None = None
    check: Callable[[TrainConfig], None] | None = None
    architectures: tuple[Architecture, ...] = field(default=())
    settings: tuple[ModalitySetting, ...] = field(default=())
    metrics: tuple[Metric, ...] = field(default=())
    curve_points: tuple[tuple[str, int], ...] = field(default=())
    unset: tuple[tuple[str, Any], ...] = field(default=())
    notes: tuple[tuple[str, str], ...] = field(default=())
    description: str = ""

    def build_encoder(self, split: Split, config: TrainConfig) -> nn.Module:
        """:attr:`encoder` of ``split`` (``ValueError`` if the modality declares none)."""
        if self.encoder is None:
            raise ValueError(f"modality {self.name!r} declares no encoder: its trainer builds it")
        return self.encoder(split, config)

    def build_augment(self, split: Split, config: TrainConfig) -> ViewAugment:
        """:attr:`augment` of ``split`` (``ValueError`` if the modality declares none)."""
        if self.augment is None:
            raise ValueError(f"modality {self.name!r} declares no views: its trainer builds them")
        return self.augment(split, config)


_MODALITIES: dict[str, Modality] = {}


def register_modality(modality: Modality) -> Modality:
    """Record ``modality``, declare its kinds to the dataset registry, its metrics and
    curves (:func:`.metrics.register_metrics`, :func:`.metrics.register_curve_points`),
    register its export architectures and add its config check
    (:func:`~.config.add_check`); returns it. A second modality of the same name, a kind
    that another modality declared or a metric or curve declared already raises
    ``ValueError``."""
    if modality.name in _MODALITIES:
        raise ValueError(f"a modality named {modality.name!r} is registered already")
    if not modality.kinds:
        raise ValueError(f"modality {modality.name!r} declares no data kind")
    fields = {f.name: f.default for f in dataclasses.fields(TrainConfig)}
    for key, _ in modality.notes:
        if key not in fields:
            raise ValueError(f"modality {modality.name!r} has a note on {key!r}, no config setting")
    for key, _ in modality.unset:
        if fields.get(key, 0) is not None:
            raise ValueError(
                f"modality {modality.name!r} sets {key!r} when unset: no config setting "
                "whose default is None"
            )
    register_metrics(modality.metrics)
    register_curve_points(dict(modality.curve_points))
    for kind in modality.kinds:
        register_kind(kind, modality.name)
    for arch in modality.architectures:
        register_architecture(arch.name, arch.target, arch.describe, arch.build)
    if modality.check is not None:
        add_check(modality.check)
    if modality.unset:
        add_unset(modality.name, dict(modality.unset))
    _MODALITIES[modality.name] = modality
    return modality


def setting_notes(key: str) -> str:
    """The registered modalities' notes on the config setting ``key`` (:attr:`Modality.unset`
    as ``"text: default false"``, then :attr:`Modality.notes` as ``"image: default 0.8"``),
    joined by ``"; "``; ``""`` if none."""
    said = [
        (m.name, f"default {json.dumps(value)}")
        for m in _MODALITIES.values()
        for k, value in m.unset
        if k == key
    ]
    said += [(m.name, words) for m in _MODALITIES.values() for k, words in m.notes if k == key]
    return "; ".join(f"{name}: {words}" for name, words in said)


def modality_settings(config: TrainConfig) -> dict[str, Any]:
    """The settings of ``config``'s modality (:attr:`Modality.settings`): each default,
    replaced by what ``config.modality_args`` gives."""
    declared = modality_of(config.dataset).settings
    return {s.name: config.modality_args.get(s.name, s.default) for s in declared}


def check_modality_args(config: TrainConfig) -> None:
    """``ValueError`` for a key of ``config.modality_args`` that the dataset's modality does
    not declare, or a value its setting's check refuses (a check of every config)."""
    if not config.modality_args:
        return
    modality = modality_of(config.dataset)
    declared = {s.name: s for s in modality.settings}
    for key, value in config.modality_args.items():
        if key not in declared:
            known = ", ".join(declared) or "none"
            raise ValueError(
                f"modality_args: {key!r} is no setting of modality {modality.name!r} "
                f"(its settings: {known})"
            )
        if declared[key].check is not None:
            declared[key].check(f"modality_args {key}", value)


add_check(check_modality_args)


def available_modalities() -> list[str]:
    """Sorted names of the registered modalities."""
    return sorted(_MODALITIES)


def modality_of(dataset: str) -> Modality:
    """The modality of dataset ``dataset`` (``ValueError`` for an unknown dataset)."""
    return _MODALITIES[dataset_info(dataset).modality]
