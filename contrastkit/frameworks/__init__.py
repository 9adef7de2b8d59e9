"""Self-supervised training frameworks that accept any compatible registered loss.

>>> from contrastkit.frameworks import FRAMEWORKS, compatible_losses
>>> "macl" in compatible_losses("moco")
True
"""

from __future__ import annotations

import inspect
from collections.abc import Collection, Mapping

from torch import nn

from .. import losses
from .base import Framework, build_loss
from .moco import MoCo, SimSiam
from .nnclr import NNCLR
from .simclr import BarlowTwinsFramework, MultiView, SimCLR, Supervised
from .simcse import SimCSE, two_view_loss

FRAMEWORKS: dict[str, type[Framework]] = {
    cls.name: cls
    for cls in (SimCLR, MoCo, SimSiam, BarlowTwinsFramework, MultiView, Supervised, NNCLR, SimCSE)
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


FRAMEWORK_OPTIONS = ("proj_dim", "hidden_dim", "queue_size", "momentum", "num_views", "joint_views")


def check_run(
    framework: str,
    loss: str,
    loss_args: Mapping[str, object],
    options: Mapping[str, object],
    given: Collection[str] = (),
    used: Collection[str] | None = None,
) -> None:
    """Everything about a run's model that can be checked without building it; raises a
    one-line ``ValueError``.

    The framework must accept the loss; ``loss_args`` must name the loss's arguments with
    values in their declared ranges (:func:`contrastkit.losses.check_args`); ``options``
    (``queue_size``, ``momentum``, ...) must lie in the framework's declared ranges; and
    of the option names the user set explicitly (``given``), each must be taken by some
    framework in ``used`` (default: this one), so ``--queue-size`` under SimCLR is refused
    instead of ignored."""
    cls = framework_class(framework)
    info = cls.check_loss(loss)
    losses.check_args(loss, loss_args, provided=("in_dim",) if info.inputs == "features" else ())
    takes = set(inspect.signature(cls.__init__).parameters)
    cls.check_options(**{k: v for k, v in options.items() if k in takes and v is not None})
    users = {framework} if used is None else set(used)
    for key in given:
        if key in FRAMEWORK_OPTIONS and not any(
            key in inspect.signature(framework_class(f).__init__).parameters for f in users
        ):
            takers = [n for n, c in FRAMEWORKS.items() if key in inspect.signature(c).parameters]
            raise ValueError(
                f"{key} is not used by framework {framework!r} (only by: {', '.join(takers)})"
            )


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
    "SimCSE",
    "SimSiam",
    "Supervised",
    "build_framework",
    "build_loss",
    "check_run",
    "compatible_losses",
    "framework_class",
    "two_view_loss",
]
