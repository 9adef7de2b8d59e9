"""What every modality's data share: the dataset registry, :class:`Split`, batch sources
and the readers' error boundary.

The datasets themselves belong to the modality packages (:mod:`contrastkit.images`,
:mod:`contrastkit.tabular`, :mod:`contrastkit.text`, :mod:`contrastkit.graphs`), which
register them here when imported (:mod:`contrastkit.modalities` imports the built-in ones).
"""

from .registry import (
    available_datasets,
    check_modality,
    dataset_from_config,
    dataset_info,
    is_regression,
    load_dataset,
    modalities,
    register_dataset,
    register_kind,
)
from .split import Split

__all__ = [
    "Split",
    "available_datasets",
    "check_modality",
    "dataset_from_config",
    "dataset_info",
    "is_regression",
    "load_dataset",
    "modalities",
    "register_dataset",
    "register_kind",
]
