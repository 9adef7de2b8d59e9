"""The image and signal modalities: datasets, views, the image trainer and its analyses.

Importing this package registers the ``image`` and ``signal`` modalities
(:mod:`.modality`) and their datasets: ``digits`` and ``mnist1d`` (:mod:`.datasets`),
``digits_rotation`` (:mod:`.rotation`), ``cifar10``, ``cifar100``, ``stl10``, ``mnist`` and
``fashion_mnist`` (:mod:`.readers`) and ``imagefolder`` (:mod:`.imagefolder`).
"""

from ..data import register_dataset
from ..training import register_modality
from .augment import TYPES, TYPES_1D, TYPES_2D, Augment
from .datasets import load_digits, load_mnist1d
from .image_augment import AUG_RECIPES, TYPES_IMAGE, ImageAugment, check_jitter, view_augments
from .imagefolder import load_imagefolder
from .modality import IMAGE, SIGNAL, build_augment
from .readers import load_cifar10, load_cifar100, load_fashion_mnist, load_mnist, load_stl10
from .rotation import load_digits_rotation
from .trainer import ImageTrainer

register_modality(IMAGE)
register_modality(SIGNAL)
register_dataset("digits", load_digits, "2d", description="scikit-learn 8x8 digits")
register_dataset("mnist1d", load_mnist1d, "1d", description="MNIST-1D generated locally")
register_dataset("digits_rotation", load_digits_rotation, "2d", regression=True)
register_dataset("cifar10", load_cifar10, "image", description="CIFAR-10 python pickles")
register_dataset("cifar100", load_cifar100, "image", description="CIFAR-100 python pickles")
register_dataset("stl10", load_stl10, "image", description="STL-10 binary release")
register_dataset("mnist", load_mnist, "image", description="MNIST idx files")
register_dataset("fashion_mnist", load_fashion_mnist, "image", description="Fashion-MNIST idx")
register_dataset("imagefolder", load_imagefolder, "image", description="folder/tar of images")

__all__ = [
    "AUG_RECIPES",
    "IMAGE",
    "SIGNAL",
    "TYPES",
    "TYPES_1D",
    "TYPES_2D",
    "TYPES_IMAGE",
    "Augment",
    "ImageAugment",
    "ImageTrainer",
    "build_augment",
    "check_jitter",
    "load_digits",
    "load_mnist1d",
    "view_augments",
]
