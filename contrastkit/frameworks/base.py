"""The framework interface: an encoder, the heads a method adds, and one registered loss.

A framework owns all training state (projection heads, momentum encoder, queue); the
loss stays a pure function of its inputs. Which losses a framework accepts is decided
from the registry's input kinds (:func:`contrastkit.losses.info`), and an incompatible
loss is refused with a message listing the compatible ones.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import ClassVar

import torch
from torch import Tensor, nn

from .. import losses
from ..engine import cat_rows
from ..losses.hparams import Param
from ..losses.registry import LossInfo


class Framework(nn.Module):
    """Base class. Subclasses set :attr:`name`, :attr:`input_kinds` and ``forward``.

    ``forward(views, labels=None)`` takes ``num_views`` augmented batches
    ``[N, *input_shape]`` (and ``labels [N]`` for label-aware frameworks) and returns the
    scalar training loss. :meth:`step_logs` reports the loss's per-step diagnostics.
    """

    name: ClassVar[str]
    input_kinds: ClassVar[tuple[str, ...]]
    # the loss a run of this framework trains with when it names none
    default_loss: ClassVar[str]
    needs_labels: ClassVar[bool] = False
    # declared ranges of the framework's own constructor options (checked with the config)
    option_ranges: ClassVar[dict[str, Param]] = {}
    # a loss's hyper-parameters in this framework's papers, under the run's own loss_args
    loss_defaults: ClassVar[Mapping[str, Mapping[str, object]]] = {}

    def __init__(
        self,
        encoder: nn.Module,
        loss: str | None = None,
        loss_kwargs: Mapping[str, object] | None = None,
    ) -> None:
        super().__init__()
        self.encoder = encoder
        loss = self.default_loss if loss is None else loss
        self.loss_name = loss
        self.loss = self.make_loss(loss, loss_kwargs, encoder.feature_dim)  # checks the loss
        self.loss_kind = losses.info(loss).inputs
        self.num_views = 2

    @classmethod
    def make_loss(
        cls, loss: str, loss_kwargs: Mapping[str, object] | None = None, in_dim: int | None = None
    ) -> nn.Module:
        """The registry loss ``loss`` as this framework trains it: :attr:`loss_defaults`
        updated by ``loss_kwargs``, ``in_dim`` for a "features" loss (its heads' input
        width). A refused loss or a bad argument is a one-line ``ValueError``."""
        info = cls.check_loss(loss)
        kwargs = {**cls.loss_defaults.get(loss, {}), **(loss_kwargs or {})}
        if info.inputs == "features":
            kwargs.setdefault("in_dim", in_dim)
        return build_loss(loss, kwargs)

    @classmethod
    def accepts(cls, loss_info: LossInfo) -> bool:
        """Whether this framework can train with the loss described by ``loss_info``."""
        return loss_info.inputs in cls.input_kinds

    @classmethod
    def compatible_losses(cls) -> list[str]:
        """Registered losses this framework accepts, sorted."""
        return [n for n in losses.available() if cls.accepts(losses.info(n))]

    @classmethod
    def check_loss(cls, loss: str) -> LossInfo:
        """The registry entry of ``loss``; ``ValueError`` listing compatible losses if refused."""
        loss_info = losses.info(loss)
        if not cls.accepts(loss_info):
            raise ValueError(
                f"framework {cls.name!r} cannot train with loss {loss!r} (input kind "
                f"{loss_info.inputs!r}); compatible losses: {', '.join(cls.compatible_losses())}"
            )
        return loss_info

    @classmethod
    def check_options(cls, **options: object) -> None:
        """``ValueError`` naming the first option outside :attr:`option_ranges`."""
        for key, value in options.items():
            if key in cls.option_ranges:
                cls.option_ranges[key].check(key, value)

    def check_views(self, views: Sequence[Tensor]) -> None:
        if len(views) != self.num_views:
            raise ValueError(f"{self.name} expects {self.num_views} views, got {len(views)}")

    @torch.no_grad()
    def encode(self, x: Tensor, batch_size: int = 1024) -> Tensor:
        """Frozen features ``[N, feature_dim]`` of ``x`` (eval mode, no gradient)."""
        was_training = self.encoder.training
        self.encoder.eval()
        out = cat_rows((self.encoder(chunk) for chunk in x.split(batch_size)), len(x))
        self.encoder.train(was_training)
        return out

    def head(self, h: Tensor) -> Tensor:
        """What the loss sees of encoder features ``h``: the projection head's output,
        ``h`` itself for a framework without one (SimCSE, a "features" loss's own heads)."""
        return h

    def step_logs(self) -> dict[str, float]:
        """Diagnostics of the last loss call (MACL's τ_a and A, CACR's parts, AMCL's τ), for
        the losses whose registry entry declares ``diagnostics``."""
        if not losses.info(self.loss_name).diagnostics:
            return {}
        return dict(self.loss.diagnostics())

    def step_values(self) -> dict[str, Tensor | float]:
        """:meth:`step_logs` without reading the device where the loss can avoid it: its
        ``diagnostic_tensors()`` (0-d device tensors: MACL, CACR, AMCL, TaU, the cosine
        schedule), else its ``diagnostics()``. A training loop that keeps them and reads
        them once an epoch makes no host synchronisation per step for them."""
        if not losses.info(self.loss_name).diagnostics:
            return {}
        tensors = getattr(self.loss, "diagnostic_tensors", None)
        return dict(tensors() if callable(tensors) else self.loss.diagnostics())


def build_loss(name: str, kwargs: Mapping[str, object]) -> nn.Module:
    """``losses.get(name, **kwargs)``, turning a bad keyword into a one-line ``ValueError``."""
    try:
        return losses.get(name, **kwargs)
    except TypeError as exc:
        raise ValueError(f"bad arguments {dict(kwargs)} for loss {name!r}: {exc}") from None
