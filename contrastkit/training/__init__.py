"""Training loop, run configuration and run files."""

from .checkpoint import CHECKPOINT, METRICS, TIMING_KEYS, extendable, length_note
from .config import ENVIRONMENT_KEYS, TrainConfig
from .config_io import load_yaml, parse_assignments, parse_value
from .trainer import FINAL, TRACE_SUFFIX, Trainer, epoch_generator

__all__ = [
    "CHECKPOINT",
    "ENVIRONMENT_KEYS",
    "FINAL",
    "METRICS",
    "TIMING_KEYS",
    "TRACE_SUFFIX",
    "TrainConfig",
    "Trainer",
    "epoch_generator",
    "extendable",
    "length_note",
    "load_yaml",
    "parse_assignments",
    "parse_value",
]
