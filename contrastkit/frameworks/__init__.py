"""Self-supervised training frameworks that accept any compatible registered loss.

>>> from contrastkit.frameworks import FRAMEWORKS, compatible_losses
>>> "macl" in compatible_losses("moco")
True
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping

from torch import nn

from .base import Framework, build_loss
from .moco import MoCo, SimSiam
from .nnclr import NNCLR
from .simclr import BarlowTwinsFramework, MultiView, SimCLR, Supervised

FRAMEWORKS: dict[str, type[Framework]] = {
    cls.name: cls
    for cls in (SimCLR, MoCo, SimSiam, BarlowTwinsFramework, MultiView, Supervised, NNCLR)
}


def framework_class(name: str) -> type[Framework]:
    """The framework class registered as ``name``."""
    try:
        return FRAMEWORKS[name]
    except KeyError:
        raise ValueError(
            f"unknown framework {name!r}; available: {', '.join(FRAMEWORKS)}"
        ) from None


def compatible_losses(framework: str) -> list[str]:
    """Registered losses the framework ``framework`` accepts."""
    return framework_class(framework).compatible_losses()


def build_framework(
    name: str,
    encoder: nn.Module,
    loss: str,
    loss_kwargs: Mapping[str, object] | None = None,
    **options: object,
) -> Framework:
    """Framework ``name`` around ``encoder`` with loss ``loss``; ``options`` that the
    framework does not take (``queue_size`` for SimCLR, say) are ignored."""
    cls = framework_class(name)
    accepted = inspect.signature(cls.__init__).parameters
    kwargs = {k: v for k, v in options.items() if k in accepted and v is not None}
    return cls(encoder, loss, loss_kwargs, **kwargs)


__all__ = [
    "FRAMEWORKS",
    "NNCLR",
    "BarlowTwinsFramework",
    "Framework",
    "MoCo",
    "MultiView",
    "SimCLR",
    "SimSiam",
    "Supervised",
    "build_framework",
    "build_loss",
    "compatible_losses",
    "framework_class",
]
