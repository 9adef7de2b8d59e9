"""NNCLR (Dwibedi et al., 2021): nearest neighbours from a support set as positives.

Per step, with projections ``z_v = g(f(x_v))`` and predictions ``p_v = q(z_v)`` of the two
views, and a support set ``Q [S, d]`` of past (normalised, detached) projections:

    NN(z) = argmax_{s ∈ Q} cos(z, s)                      (nearest neighbour, no gradient)
    L = ½ [ ℓ(NN(z_1), p_2) + ℓ(NN(z_2), p_1) ]

where ``ℓ(a, b)`` is the InfoNCE-family loss of anchors ``a_i`` with positive ``b_i`` and
negatives ``b_j, j ≠ i`` (NNCLR Eq. 3, its symmetric form; cosine similarities; under
``torchrun`` with the loss's ``gather_distributed``, every rank's ``b_j``). Any
registered "pair" loss with a similarity form (``similarity_loss(pos, neg)``: NT-Xent,
DCL, MACL, FlatNCE, ...) takes the place of InfoNCE: the two directions' ``pos [N]`` and
``neg [N, N]`` are stacked into ``2N`` anchors, so a loss's mean over anchors equals the
average of the two directions. MACL's alignment A is then the mean cosine between
neighbours and predictions, as in MACL App. B.2.2 (Table B.2 trains NNCLR with MACL).
After the loss, view 1's projections are enqueued (FIFO), as in the reference code.
Both views go through the encoder as one ``[2N, ...]`` batch (batch norm over 2N views,
as this package's SimCLR default).

Defaults (NNCLR §4): projector 3 layers with BN on its output, predictor 2 layers,
support-set size from ``queue_size`` (the paper's 98,304 suits ImageNet; 4,096 here);
the support set starts as random unit vectors, like MoCo's queue.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import torch
from torch import Tensor, nn

from .. import distributed
from ..losses.functional._precision import compute_dtype, no_autocast
from ..losses.registry import LossInfo
from ..losses.views import cross_view_similarities, normalize
from ..models.encoders import mlp
from ._queue import fifo_enqueue
from .base import Framework


def nearest_neighbours(z: Tensor, support: Tensor) -> Tensor:
    """Rows of ``support [S, d]`` most cosine-similar to each row of ``z [N, d]``
    (``[N, d]`` in the support set's dtype, no gradient).

    The search runs in the compute dtype of the losses (at least float32; the support set
    keeps its own dtype and is cast here) with autocast off, so half-precision projections
    (a step under autocast) find the same neighbours as float32 ones would."""
    dtype = compute_dtype(z, support)
    with torch.no_grad(), no_autocast(z.device.type):
        idx = (normalize(z.to(dtype)) @ normalize(support.to(dtype)).T).argmax(dim=1)
        return support[idx]


class NNCLR(Framework):
    """NNCLR around ``encoder`` with a registered pair loss (see the module docstring).

    Args:
        loss: a "pair" loss with a similarity form (default ``ntxent``).
        proj_dim: projection width d (NNCLR: 256; 128 here as the other frameworks).
        hidden_dim: projector and predictor hidden width (``None``: the encoder's width;
            NNCLR's are 2048 and 4096).
        queue_size: support-set size S.
        symmetric: average both directions (NNCLR); ``False`` uses only NN(z_1) vs p_2.
    """

    name = "nnclr"
    input_kinds = ("pair",)
    default_loss = "ntxent"

    def __init__(
        self,
        encoder: nn.Module,
        loss: str | None = None,
        loss_kwargs: Mapping[str, object] | None = None,
        proj_dim: int = 128,
        hidden_dim: int | None = None,
        queue_size: int = 4096,
        symmetric: bool = True,
    ) -> None:
        super().__init__(encoder, loss, loss_kwargs)
        if queue_size < 1:
            raise ValueError(f"queue_size must be >= 1, got {queue_size}")
        hidden = hidden_dim or encoder.feature_dim
        self.projector = mlp(encoder.feature_dim, hidden, proj_dim, layers=3, last_bn=True)
        self.predictor = mlp(proj_dim, hidden, proj_dim, layers=2)
        self.symmetric = symmetric
        self.register_buffer("support", normalize(torch.randn(queue_size, proj_dim)))
        self.register_buffer("support_ptr", torch.zeros((), dtype=torch.long))

    @classmethod
    def accepts(cls, loss_info: LossInfo) -> bool:
        return loss_info.inputs == "pair" and loss_info.similarity_level

    def head(self, h: Tensor) -> Tensor:
        return self.projector(h)

    def forward(self, views: Sequence[Tensor], labels: Tensor | None = None) -> Tensor:
        self.check_views(views)
        n = views[0].shape[0]
        z1, z2 = self.projector(self.encoder(torch.cat(list(views)))).split(n)
        p1, p2 = self.predictor(torch.cat([z1, z2])).split(n)
        support = self.support.clone()
        gather = getattr(self.loss, "gather_distributed", False)  # every rank's predictions
        pos, neg = cross_view_similarities(nearest_neighbours(z1, support), p2, None, gather)
        if self.symmetric:
            pos2, neg2 = cross_view_similarities(nearest_neighbours(z2, support), p1, None, gather)
            pos, neg = torch.cat([pos, pos2]), torch.cat([neg, neg2])
        loss = self.loss.similarity_loss(pos, neg)
        fifo_enqueue(self.support, self.support_ptr, distributed.gather(normalize(z1.detach())))
        return loss
