"""MoCo v2 (He et al., 2020; Chen et al., 2020) and SimSiam (Chen & He, 2021)."""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import ClassVar

import torch
from torch import Tensor, nn

from .. import distributed
from ..losses.hparams import Param
from ..losses.registry import LossInfo
from ..losses.views import cross_view_similarities, normalize
from ..models.encoders import mlp
from ._queue import fifo_enqueue
from .base import Framework


class MoCo(Framework):
    """MoCo v2: query encoder + 2-layer MLP head, a momentum copy for keys, a FIFO queue.

    Per step: the key encoder is updated as ``θ_k ← m·θ_k + (1 - m)·θ_q``, keys of view 2
    are computed without gradient, the loss compares queries of view 1 with their keys
    and the queue's ``Q`` past keys as negatives, then the keys are enqueued. The loss
    sees:

    * "query_key" (``infonce``): ``loss(q, k, queue)``;
    * InfoNCE-family "pair" losses (NT-Xent, DCL, MACL, FlatNCE...):
      ``loss.similarity_loss(pos [N], neg [N, Q])`` built by
      :func:`~contrastkit.losses.views.cross_view_similarities`;
    * CACR (the only "views" loss accepted): CACR's MoCo form (CACR Algorithm 3 with one
      positive, one query direction and ``with_intra_batch`` off, where the paper's
      MoCo-v2 runs had it on): ``loss.queue_loss(q, k, queue)``, the costs
      ``‖q_i - k_i‖²`` and ``‖q_i - queue_j‖²`` of normalised vectors taken as ``2 - 2·cos``
      by :func:`~contrastkit.losses.functional.cacr_cosine` with the module's t⁺, t⁻ and
      detach flags. CMC is refused: its full graph over views has no single query side.
    * AMCL (the only "features" loss accepted), the paper's MoCo column: the loss owns
      its ``C`` heads (``loss.projector``), so MoCo builds no projector of its own and
      ``proj_dim`` / ``hidden_dim`` are unused (set AMCL's ``out_dim`` / ``hidden``
      instead). Queries are ``loss.projector(encoder(x1))``; the key network is a momentum
      copy of ``(encoder, loss.projector)``; the queue is ``[C, Q, d']``, one ``Q``-row
      queue per head, and every head's keys are enqueued at the same pointer. The loss is
      ``loss.queue_loss(q [C, N, d'], k [C, N, d'], queue [C, Q, d'])``. AMCL's ``φ``
      (the temperature network) is trained, not momentum-copied: it only scores pairs and
      is one layer shared by all heads. Bases ``"simsiam"`` and ``"barlow_twins"`` are
      refused: they have no negatives for a queue to supply.

    Args:
        queue_size: Q (MoCo uses 65,536 on ImageNet; 4,096 suits 16k-sample data).
        momentum: m (0.99; MoCo v2 uses 0.999 for its much longer ImageNet schedules),
            per optimiser step.
        proj_dim, hidden_dim: projection head widths (128 as in MoCo v2). The head is this
            project's two-layer MLP, with batch norm after its hidden layer; MoCo v2's own
            head is Linear-ReLU-Linear without it.
        grad_accum: forward passes per optimiser step (the trainer's ``grad_accum``): the
            update runs at every forward with ``m^(1/grad_accum)``, so a whole window moves
            the key encoder by ``m``, as one step does (the query weights do not change
            within it); a window an epoch's end closes early moves it less.

    BatchNorm statistics are per batch; MoCo's shuffle-BN (a multi-GPU device) is not
    reproduced on one CPU. Under ``torchrun`` every rank enqueues all ranks' keys, so the
    queue is shared and identical on every rank.
    """

    name = "moco"
    input_kinds = ("query_key", "pair", "views", "features")
    default_loss = "infonce"
    option_ranges: ClassVar[dict[str, Param]] = {
        "queue_size": Param.integer(1),
        "momentum": Param.real(0.0, 1.0, high_open=True),
        "grad_accum": Param.integer(1),
    }

    def __init__(
        self,
        encoder: nn.Module,
        loss: str | None = None,
        loss_kwargs: Mapping[str, object] | None = None,
        proj_dim: int = 128,
        hidden_dim: int | None = None,
        queue_size: int = 4096,
        momentum: float = 0.99,
        grad_accum: int = 1,
    ) -> None:
        super().__init__(encoder, loss, loss_kwargs)
        self.check_options(queue_size=queue_size, momentum=momentum, grad_accum=grad_accum)
        self.momentum = momentum
        self.forward_momentum = momentum ** (1.0 / grad_accum)  # per forward pass
        self.projector: nn.Module | None = None
        if self.loss_kind == "features":  # AMCL: its own heads, one queue per head
            if self.loss.base not in ("ntxent", "infonce"):
                raise ValueError(
                    f"framework {self.name!r} cannot train AMCL with base {self.loss.base!r}: "
                    "only 'ntxent' and 'infonce' contrast queries with queued negatives"
                )
            queue_shape: tuple[int, ...] = (self.loss.heads, queue_size, self.loss.out_dim)
        else:
            self.projector = mlp(encoder.feature_dim, hidden_dim or encoder.feature_dim, proj_dim)
            queue_shape = (queue_size, proj_dim)
        self.key_encoder = copy.deepcopy(nn.Sequential(self.encoder, self.query_head))
        self.key_encoder.requires_grad_(False)
        self.register_buffer("queue", normalize(torch.randn(queue_shape)))
        self.register_buffer("queue_ptr", torch.zeros((), dtype=torch.long))

    def head(self, h: Tensor) -> Tensor:
        return h if self.projector is None else self.projector(h)

    @property
    def query_head(self) -> nn.Module:
        """The head after the encoder on the query side: MoCo's projector or AMCL's heads."""
        return self.loss.projector if self.projector is None else self.projector

    @classmethod
    def accepts(cls, loss_info: LossInfo) -> bool:
        if loss_info.inputs == "pair":
            return loss_info.similarity_level
        if loss_info.inputs in ("views", "features"):  # CACR's and AMCL's MoCo forms
            return loss_info.queue_form
        return loss_info.inputs in cls.input_kinds

    def forward(self, views: Sequence[Tensor], labels: Tensor | None = None) -> Tensor:
        self.check_views(views)
        q = self.query_head(self.encoder(views[0]))  # [N, d] or, for AMCL, [C, N, d']
        with torch.no_grad():
            self._momentum_update()
            k = normalize(self.key_encoder(views[1]))
        queue = self.queue.clone()
        if self.loss_kind == "features":
            loss = self.loss.queue_loss(q, k, queue)
        elif self.loss_kind == "query_key":
            loss = self.loss(q, k, queue)
        elif self.loss_kind == "views":
            loss = self.loss.queue_loss(normalize(q), k, queue)
        else:
            loss = self.loss.similarity_loss(*cross_view_similarities(q, k, queue))
        # every rank's keys, gathered along the sample axis: one shared queue; with AMCL
        # ([C, n, d'] keys) every head's keys go to the same rows of its queue
        keys = distributed.gather(k.movedim(-2, 0)).movedim(0, -2)
        fifo_enqueue(self.queue, self.queue_ptr, keys)
        return loss

    @torch.no_grad()
    def _momentum_update(self) -> None:
        # the same order as key_encoder = deepcopy(Sequential(encoder, query_head))
        query_params = [*self.encoder.parameters(), *self.query_head.parameters()]
        for key_param, query_param in zip(self.key_encoder.parameters(), query_params, strict=True):
            key_param.lerp_(query_param, 1.0 - self.forward_momentum)


class SimSiam(Framework):
    """SimSiam: shared encoder, 3-layer projector with BN on its output (hidden width the
    encoder's, as the official builder; ``proj_dim`` out: 128 here, the paper's 2048), a
    2-layer bottleneck predictor (``proj_dim / 4`` hidden, as the paper's 2048 → 512), and the
    symmetric negative-cosine loss with stop-gradient on the targets ("predictor" kind).
    """

    name = "simsiam"
    input_kinds = ("predictor",)
    default_loss = "simsiam"

    def __init__(
        self,
        encoder: nn.Module,
        loss: str | None = None,
        loss_kwargs: Mapping[str, object] | None = None,
        proj_dim: int = 128,
        hidden_dim: int | None = None,
    ) -> None:
        super().__init__(encoder, loss, loss_kwargs)
        self.projector = mlp(
            encoder.feature_dim, hidden_dim or encoder.feature_dim, proj_dim, layers=3, last_bn=True
        )
        self.predictor = mlp(proj_dim, max(1, proj_dim // 4), proj_dim, layers=2)

    def head(self, h: Tensor) -> Tensor:
        return self.projector(h)

    def forward(self, views: Sequence[Tensor], labels: Tensor | None = None) -> Tensor:
        self.check_views(views)
        z1, z2 = (self.projector(self.encoder(v)) for v in views)
        return self.loss(self.predictor(z1), self.predictor(z2), z1, z2)
