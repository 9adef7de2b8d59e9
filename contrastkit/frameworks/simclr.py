"""Shared-encoder frameworks: SimCLR, Barlow Twins, multi-view (CACR / CMC), supervised.

All encode every view with the same encoder and projection head; they differ in the
projector's shape, the number of views and what the loss is given.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import torch
from torch import Tensor, nn

from ..models.encoders import mlp
from .base import Framework


class SimCLR(Framework):
    """SimCLR (Chen et al., 2020): two views, shared encoder, 2-layer MLP projector.

    Accepts "pair" losses ``loss(z1, z2)`` on projections and "features" losses (AMCL's
    multi-head SimCLR) ``loss(h1, h2)`` on encoder features; those own their heads, so no
    projector is built.

    Args:
        encoder: maps a batch to ``[N, encoder.feature_dim]``.
        loss: registered loss name; ``loss_kwargs`` its hyper-parameters.
        proj_dim: projection width (128 as in SimCLR and MACL's CIFAR-10 setting).
        hidden_dim: projector hidden width; ``None`` means the encoder's feature width.
    """

    name = "simclr"
    input_kinds = ("pair", "features")
    projector_layers = 2
    projector_last_bn = False

    def __init__(
        self,
        encoder: nn.Module,
        loss: str = "ntxent",
        loss_kwargs: Mapping[str, object] | None = None,
        proj_dim: int = 128,
        hidden_dim: int | None = None,
    ) -> None:
        super().__init__(encoder, loss, loss_kwargs)
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
        feats = [self.encoder(v) for v in views]
        return feats if self.projector is None else [self.projector(h) for h in feats]

    def forward(self, views: Sequence[Tensor], labels: Tensor | None = None) -> Tensor:
        self.check_views(views)
        z1, z2 = self.project(views)
        return self.loss(z1, z2)


class BarlowTwinsFramework(SimCLR):
    """Barlow Twins (Zbontar et al., 2021): SimCLR's layout with a 3-layer projector
    (Linear-BN-ReLU ×2, Linear), trained by default with the ``barlow_twins`` loss (the
    loss standardises each dimension over the batch itself). Accepts "pair" losses."""

    name = "barlow_twins"
    input_kinds = ("pair",)
    projector_layers = 3

    def __init__(
        self,
        encoder: nn.Module,
        loss: str = "barlow_twins",
        loss_kwargs: Mapping[str, object] | None = None,
        proj_dim: int = 128,
        hidden_dim: int | None = None,
    ) -> None:
        super().__init__(encoder, loss, loss_kwargs, proj_dim, hidden_dim)


class MultiView(SimCLR):
    """V ≥ 2 views of each sample through the shared encoder and projector, stacked into
    ``[V, N, d]`` for "views" losses: CACR with K = V - 1 positives (CACR §3.2) and CMC's
    full-graph loss (CACR Table 2 compares both at K = 4, i.e. ``num_views = 5``)."""

    name = "multiview"
    input_kinds = ("views",)

    def __init__(
        self,
        encoder: nn.Module,
        loss: str = "cacr",
        loss_kwargs: Mapping[str, object] | None = None,
        proj_dim: int = 128,
        hidden_dim: int | None = None,
        num_views: int = 2,
    ) -> None:
        super().__init__(encoder, loss, loss_kwargs, proj_dim, hidden_dim)
        if num_views < 2:
            raise ValueError(f"num_views must be >= 2 for the multiview framework, got {num_views}")
        self.num_views = num_views

    def forward(self, views: Sequence[Tensor], labels: Tensor | None = None) -> Tensor:
        self.check_views(views)
        return self.loss(torch.stack(self.project(views)))


class Supervised(SimCLR):
    """Two views plus the samples' labels for "labeled" losses (SupCon, LASCon)."""

    name = "supervised"
    input_kinds = ("labeled",)
    needs_labels = True

    def __init__(
        self,
        encoder: nn.Module,
        loss: str = "supcon",
        loss_kwargs: Mapping[str, object] | None = None,
        proj_dim: int = 128,
        hidden_dim: int | None = None,
    ) -> None:
        super().__init__(encoder, loss, loss_kwargs, proj_dim, hidden_dim)

    def forward(self, views: Sequence[Tensor], labels: Tensor | None = None) -> Tensor:
        self.check_views(views)
        if labels is None:
            raise ValueError(f"the {self.name} framework needs labels [N] with the views")
        z1, z2 = self.project(views)
        return self.loss(z1, z2, labels)
