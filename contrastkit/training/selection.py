"""Which trainer runs a configuration: its modality's choice, else the shared rule."""

from __future__ import annotations

from .config import TrainConfig
from .label_aware import shared_trainer
from .modality import modality_of
from .trainer import Trainer


def trainer_class(config: TrainConfig, label_aware: bool = False) -> type[Trainer]:
    """The trainer of ``config``: its dataset's modality's :attr:`~.modality.Modality.trainer`
    (``(config, label_aware) -> class``), or, for a modality that declares none,
    :func:`~.label_aware.shared_trainer` (:class:`~.label_aware.LabelAwareTrainer` for
    label-aware runs, else :class:`~.trainer.Trainer`). ``label_aware`` marks a run
    compared with label-aware runs (a SimCLR baseline beside SupCon), evaluated like them."""
    choose = modality_of(config.dataset).trainer or shared_trainer
    return choose(config, label_aware)
