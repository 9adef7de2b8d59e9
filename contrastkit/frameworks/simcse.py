"""Unsupervised SimCSE (Gao et al., 2021): the two views of a sentence are two dropout
passes of the same encoder, and any two-view loss of the registry contrasts them.

``forward([batch, batch])`` encodes the repeated batch in one pass (``2N`` inputs, so the
two copies of a sentence get independent dropout masks) and splits it into ``h1, h2
[N, d]``; the loss meets them through :func:`two_view_loss`. There is no projector: SimCSE's
training-only MLP head belongs to the sentence encoder
(:class:`~contrastkit.text.encoder.SentenceEncoder`, ``mlp_head``), and a "features" loss
owns its heads.

>>> import torch
>>> from torch import nn
>>> enc = nn.Sequential(nn.Dropout(0.1), nn.Linear(6, 4))
>>> enc.feature_dim = 4
>>> x = torch.randn(8, 6)
>>> SimCSE(enc, "infonce", {"temperature": 0.05})([x, x]).ndim
0
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import torch
from torch import Tensor, nn

from .. import losses
from ..losses.views import cross_view_negatives
from .base import Framework


def two_view_loss(
    loss: nn.Module, h1: Tensor, h2: Tensor, gather_distributed: bool = False
) -> Tensor:
    """Apply ``loss`` to two views ``h1, h2 [N, d]`` of the same samples.

    A loss the registry declares similarity-level (the InfoNCE family, MACL) gets SimCSE's
    cross-view layout: anchor ``h1_i``, positive ``h2_i``, negatives ``h2_j, j ≠ i`` —
    SimCSE's loss, the gradient-paradigm paper's InfoNCE (§2.2), and the loss MACL's
    sentence experiments modify (§6.2, App. B.4), not NT-Xent's 2N layout. The negatives
    come from :func:`~contrastkit.losses.views.cross_view_negatives` (the fused row
    log-sum-exp, no ``[N, N]`` tensor through autograd; with ``gather_distributed`` every
    rank's ``h2`` rows are negatives). Every other loss, and a module the registry does not
    know, is called as ``loss(h1, h2)``.
    """
    entry = losses.info_of(loss)
    if entry is not None and entry.similarity_level:
        pos, neg = cross_view_negatives(h1, h2, gather_distributed=gather_distributed)
        return loss.similarity_loss(pos, neg)
    return loss(h1, h2)


class SimCSE(Framework):
    """Two dropout views of one batch through a shared encoder (module docstring).

    Args:
        encoder: maps a batch (a tensor, or a list of sentences) to ``[N, feature_dim]``.
        loss: a registered loss taking two views ("pair", "query_key" or "features");
            ``None`` = ``infonce``, SimCSE's.
        loss_kwargs: its hyper-parameters, over the papers' sentence settings
            (:attr:`loss_defaults`: InfoNCE at SimCSE's τ = 0.05, MACL at App. B.4's).

    After each call :attr:`last_views` holds the detached ``(h1, h2)`` of the batch, for
    per-step geometry (:mod:`contrastkit.text.diagnostics`).
    """

    name = "simcse"
    input_kinds = ("pair", "query_key", "features")
    default_loss = "infonce"
    loss_defaults: ClassVar[Mapping[str, Mapping[str, object]]] = {
        # SimCSE (Gao et al., 2021), unsupervised: τ = 0.05
        "infonce": {"temperature": 0.05},
        # MACL App. B.4: {τ0, α, A0} = {0.05, 2, 0.8}, no reweighting for sentences
        "macl": {"temperature": 0.05, "alpha": 2.0, "a0": 0.8, "reweight": False},
    }

    def __init__(
        self,
        encoder: nn.Module,
        loss: str | None = None,
        loss_kwargs: Mapping[str, object] | None = None,
    ) -> None:
        super().__init__(encoder, loss, loss_kwargs)
        # set by the trainer under torchrun for losses that take it: every rank's negatives
        self.gather_distributed = bool((loss_kwargs or {}).get("gather_distributed", False))
        self.last_views: tuple[Tensor, Tensor] | None = None

    def forward(self, views: Sequence[Any], labels: Tensor | None = None) -> Tensor:
        self.check_views(views)
        first, second = views
        n = len(first)
        joint = [*first, *second] if isinstance(first, list) else torch.cat([first, second])
        h = self.encoder(joint).float()  # float32 views for last_views (the loss upcasts itself)
        h1, h2 = h[:n], h[n:]
        self.last_views = (h1.detach(), h2.detach())
        return two_view_loss(self.loss, h1, h2, self.gather_distributed)
