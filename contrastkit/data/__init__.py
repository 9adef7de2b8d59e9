"""Datasets (through one registry) and augmentations for self-supervised training.

Importing this package registers every built-in dataset: ``digits``, ``mnist1d``
(:mod:`.datasets`), ``digits_rotation``, ``diabetes`` (:mod:`.regression`), ``cifar10``,
``cifar100``, ``stl10``, ``mnist``, ``fashion_mnist`` (:mod:`.images`),
``imagefolder`` (:mod:`.imagefolder`), ``sst5`` (:mod:`.sentences`) and the graph sets
``tu:NAME`` and ``davis`` (:mod:`contrastkit.graphs`).
"""

from collections.abc import Sequence

from . import datasets, imagefolder, images, regression, sentences  # noqa: F401  (registration)
from .augment import TYPES, TYPES_1D, TYPES_2D, Augment
from .datasets import load_digits, load_mnist1d
from .image_augment import AUG_RECIPES, TYPES_IMAGE, ImageAugment, check_jitter, view_augments
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
    split: Split,
    aug_types: int | None = None,
    crop_scale: float | None = None,
    jitter: Sequence[float] | None = None,
    p_jitter: float | None = None,
) -> Augment | ImageAugment:
    """The view generator for ``split``'s kind: :class:`ImageAugment` (SimCLR's recipe;
    ``crop_scale``, ``jitter`` and ``p_jitter`` as given, else its defaults) for
    ``"image"`` data, :class:`Augment` for the small ``"2d"`` / ``"1d"`` data."""
    options = {"crop_scale": crop_scale, "jitter": jitter, "p_jitter": p_jitter}
    if split.kind == "image":
        extra = {k: v for k, v in options.items() if v is not None}
        return ImageAugment(min(split.input_shape[1:]), aug_types, **extra)
    for name, value in options.items():
        if value is not None:
            raise ValueError(f"{name} applies to image datasets, not to {split.name!r}")
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
    "check_jitter",
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
