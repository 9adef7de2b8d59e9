"""Offline datasets and plain-torch augmentations for self-supervised training."""

from .augment import TYPES, TYPES_1D, TYPES_2D, Augment
from .datasets import DATASETS, Split, load_dataset, load_digits, load_mnist1d

__all__ = [
    "DATASETS",
    "TYPES",
    "TYPES_1D",
    "TYPES_2D",
    "Augment",
    "Split",
    "load_dataset",
    "load_digits",
    "load_mnist1d",
]
