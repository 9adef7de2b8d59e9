"""Shared-encoder frameworks: SimCLR, Barlow Twins, multi-view (CACR / CMC), supervised.

All encode every view with the same encoder and projection head; they differ in the
projector's shape, the number of views and what the loss is given.

``joint_views`` decides what batch normalisation sees. ``True`` (SimCLR, SupCon and the
multi-view default) runs the V views as one ``[V·N, ...]`` batch, so BN statistics are taken
over all V·N views, as SimCLR's reference code does by concatenating the 2N views (Chen
et al., 2020; SupCon's code does the same);
``False`` (the Barlow Twins default, as in its reference training loop) runs each view as
its own batch of N, so BN normalises each view by its own statistics. The two differ only
in training mode; ``docs/results_images.md`` measures the difference.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import ClassVar

import torch
from torch import Tensor, nn

from ..losses.hparams import Param
from ..models.encoders import mlp
from .base import Framework


class SimCLR(Framework):
    """SimCLR (Chen et al., 2020): two views, shared encoder, 2-layer MLP projector.

    Accepts "pair" losses ``loss(z1, z2)`` on projections and "features" losses (AMCL's
    multi-head SimCLR) ``loss(h1, h2)`` on encoder features; those own their heads, so no
    projector is built.

    Args:
        encoder: maps a batch to ``[N, encoder.feature_dim]``.
        loss: registered loss name; ``None`` = the framework's :attr:`default_loss`
            (``ntxent``, ``barlow_twins``, ``cacr``, ``supcon``); ``loss_kwargs`` its
            hyper-parameters.
        proj_dim: projection width (128 as in SimCLR and MACL's CIFAR-10 setting).
        hidden_dim: projector hidden width; ``None`` means the encoder's feature width.
        joint_views: encode all views as one batch (see the module docstring); ``None``
            takes the framework's default (:attr:`joint_views_default`).
    """

    name = "simclr"
    input_kinds = ("pair", "features")
    projector_layers = 2
    projector_last_bn = False
    joint_views_default = True
    default_loss = "ntxent"

    def __init__(
        self,
        encoder: nn.Module,
        loss: str | None = None,
        loss_kwargs: Mapping[str, object] | None = None,
        proj_dim: int = 128,
        hidden_dim: int | None = None,
        joint_views: bool | None = None,
    ) -> None:
        super().__init__(encoder, loss, loss_kwargs)
        self.joint_views = self.joint_views_default if joint_views is None else joint_views
        feature_dim = encoder.feature_dim
        self.projector = (
            None
            if self.loss_kind == "features"
            else mlp(
                feature_dim,
                hidden_dim or feature_dim,
                proj_dim,
                self.projector_layers,
                self.projector_last_bn,
            )
        )

    def project(self, views: Sequence[Tensor]) -> list[Tensor]:
        """Encoder (and projector, if any) outputs of each view, each ``[N, ·]``."""
        if not self.joint_views:
            return [self._embed(v) for v in views]
        sizes = {v.shape for v in views}
        if len(sizes) != 1:
            raise ValueError(f"joint_views needs views of one shape [N, ...], got {sizes}")
        return list(self._embed(torch.cat(list(views))).split(views[0].shape[0]))

    def _embed(self, x: Tensor) -> Tensor:
        return self.head(self.encoder(x))

    def head(self, h: Tensor) -> Tensor:
        return h if self.projector is None else self.projector(h)

    def forward(self, views: Sequence[Tensor], labels: Tensor | None = None) -> Tensor:
        self.check_views(views)
        z1, z2 = self.project(views)
        return self.loss(z1, z2)


class BarlowTwinsFramework(SimCLR):
    """Barlow Twins (Zbontar et al., 2021): SimCLR's layout with a 3-layer projector
    (Linear-BN-ReLU ×2, Linear), trained by default with the ``barlow_twins`` loss (the
    loss standardises each dimension over the batch itself). Accepts "pair" losses.
    Views go through the network one at a time by default, as in the reference loop."""

    name = "barlow_twins"
    input_kinds = ("pair",)
    projector_layers = 3
    joint_views_default = False
    default_loss = "barlow_twins"


class MultiView(SimCLR):
    """V ≥ 2 views of each sample through the shared encoder and projector, stacked into
    ``[V, N, d]`` for "views" losses: CACR with K = V - 1 positives (CACR §3.2) and CMC's
    full-graph loss (CACR Table 2 compares both at K = 4, i.e. ``num_views = 5``)."""

    name = "multiview"
    input_kinds = ("views",)
    option_ranges: ClassVar[dict[str, Param]] = {"num_views": Param.integer(2)}
    default_loss = "cacr"

    def __init__(
        self,
        encoder: nn.Module,
        loss: str | None = None,
        loss_kwargs: Mapping[str, object] | None = None,
        proj_dim: int = 128,
        hidden_dim: int | None = None,
        num_views: int = 2,
        joint_views: bool | None = None,
    ) -> None:
        super().__init__(encoder, loss, loss_kwargs, proj_dim, hidden_dim, joint_views)
        self.check_options(num_views=num_views)
        self.num_views = num_views

    def forward(self, views: Sequence[Tensor], labels: Tensor | None = None) -> Tensor:
        self.check_views(views)
        return self.loss(torch.stack(self.project(views)))


class Supervised(SimCLR):
    """Two views plus the samples' labels for "labeled" losses (SupCon, LASCon)."""

    name = "supervised"
    input_kinds = ("labeled",)
    needs_labels = True
    default_loss = "supcon"

    def forward(self, views: Sequence[Tensor], labels: Tensor | None = None) -> Tensor:
        self.check_views(views)
        if labels is None:
            raise ValueError(f"the {self.name} framework needs labels [N] with the views")
        z1, z2 = self.project(views)
        return self.loss(z1, z2, labels)
