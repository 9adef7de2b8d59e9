"""Datasets (through one registry) and augmentations for self-supervised training.

Importing this package registers every built-in dataset: ``digits``, ``mnist1d``
(:mod:`.datasets`), ``digits_rotation``, ``diabetes`` (:mod:`.regression`), ``cifar10``,
``cifar100``, ``stl10``, ``mnist``, ``fashion_mnist`` (:mod:`.images`) and
``imagefolder`` (:mod:`.imagefolder`), and the graph sets ``tu:NAME`` and ``davis``
(:mod:`contrastkit.graphs`).
"""

from . import datasets, imagefolder, images, regression  # noqa: F401  (registration)
from .augment import TYPES, TYPES_1D, TYPES_2D, Augment
from .datasets import load_digits, load_mnist1d
from .image_augment import AUG_RECIPES, TYPES_IMAGE, ImageAugment, view_augments
from .registry import (
    MODALITIES,
    Split,
    available_datasets,
    check_modality,
    dataset_from_config,
    dataset_info,
    is_regression,
    load_dataset,
    register_dataset,
)


def build_augment(
    split: Split, aug_types: int | None = None, crop_scale: float | None = None
) -> Augment | ImageAugment:
    """The view generator for ``split``'s kind: :class:`ImageAugment` (SimCLR's recipe)
    for ``"image"`` data, :class:`Augment` for the small ``"2d"`` / ``"1d"`` data."""
    if split.kind == "image":
        return ImageAugment(min(split.input_shape[1:]), aug_types, crop_scale=crop_scale)
    if crop_scale is not None:
        raise ValueError(f"crop_scale applies to image datasets, not to {split.name!r}")
    return Augment(split.kind, aug_types)


__all__ = [
    "AUG_RECIPES",
    "MODALITIES",
    "TYPES",
    "TYPES_1D",
    "TYPES_2D",
    "TYPES_IMAGE",
    "Augment",
    "ImageAugment",
    "Split",
    "available_datasets",
    "build_augment",
    "check_modality",
    "dataset_from_config",
    "dataset_info",
    "is_regression",
    "load_dataset",
    "load_digits",
    "load_mnist1d",
    "register_dataset",
    "view_augments",
]

# the graph modality's names (tu:NAME, davis); its loaders import PyG/RDKit only when called
from ..graphs import register_datasets as _register_graph_datasets  # noqa: E402

_register_graph_datasets()
