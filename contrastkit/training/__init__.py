"""Training loop, run configuration, run files and the modality registry."""

from .checkpoint import (
    CHECKPOINT,
    FINAL,
    METRICS,
    RUN_IGNORED,
    TIMING_KEYS,
    extendable,
    length_note,
    read_final,
    resumes,
    run_state,
)
from .config import ENVIRONMENT_KEYS, MAPPING_KEYS, TrainConfig, flatten, merge_config
from .config_io import load_yaml, parse_assignments, parse_value
from .label_aware import LabelAwareTrainer
from .metrics import Metric, UndeclaredMetricWarning
from .modality import (
    Modality,
    ModalitySetting,
    ViewAugment,
    available_modalities,
    make_views,
    modality_of,
    modality_settings,
    register_modality,
    setting_notes,
)
from .selection import trainer_class
from .trainer import TRACE_SUFFIX, Trainer, epoch_generator

__all__ = [
    "CHECKPOINT",
    "ENVIRONMENT_KEYS",
    "FINAL",
    "MAPPING_KEYS",
    "METRICS",
    "RUN_IGNORED",
    "TIMING_KEYS",
    "TRACE_SUFFIX",
    "LabelAwareTrainer",
    "Metric",
    "Modality",
    "ModalitySetting",
    "TrainConfig",
    "Trainer",
    "UndeclaredMetricWarning",
    "ViewAugment",
    "available_modalities",
    "epoch_generator",
    "extendable",
    "flatten",
    "length_note",
    "load_yaml",
    "make_views",
    "merge_config",
    "modality_of",
    "modality_settings",
    "parse_assignments",
    "parse_value",
    "read_final",
    "register_modality",
    "resumes",
    "run_state",
    "setting_notes",
    "trainer_class",
]
