"""Multi-view losses: CACR (Zheng et al., NeurIPS 2021) and its CMC baseline (Tian et al.).

Both take ``views: [V, N, d]`` (V >= 2 augmentations of N samples), so CACR with K = V - 1
positives and CMC with the same K compare on equal terms (CACR Table 2).

Example:
    >>> import torch
    >>> from contrastkit.losses import CACR, CMC
    >>> views = torch.randn(5, 8, 16)  # K = 4 positives per query
    >>> CACR()(views).shape, CMC()(views).shape
    (torch.Size([]), torch.Size([]))
"""

from __future__ import annotations

import itertools
from typing import ClassVar

import torch
from torch import Tensor

from .. import distributed
from . import functional as F
from ._diagnostics import DeviceDiagnostics
from ._fused_settings import FusedSettings
from .functional import GramNegatives
from .functional._backend import DEFAULT_BACKEND
from .functional._common import check_positive
from .functional._precision import same_values
from .functional.cacr import REPULSION_COSTS, WEIGHTS, check_variant
from .hparams import FLAG, POSITIVE, Param
from .registry import register
from .views import (
    check_multiview,
    cross_view_negatives,
    cross_view_queue_negatives,
    fused_pair_terms,
    multiview_negatives,
    multiview_pair_terms,
    multiview_terms,
)


@register(
    "cacr",
    "views",
    "Zheng et al., NeurIPS 2021, Eq. (2)-(5)",
    queue_form=True,
    diagnostics=True,
    fused_backends=True,
)
class CACR(DeviceDiagnostics, FusedSettings):
    """CACR over V views: each view in turn is the query, its K = V - 1 sibling views are
    the positives, and the V·(N - 1) views of the other samples (plus an optional
    ``queue``) are the negatives; the loss is averaged over all V·N queries, which matches
    the paper's MoCo code (Algorithm 3) dividing the per-view sum by the number of views.

    The embeddings are L2-normalised, so the costs are ``2 - 2·cos`` and the loss goes
    through :func:`functional.cacr_cosine` with the fused negatives of
    :func:`~contrastkit.losses.views.multiview_negatives`: no ``[V·N, V·N]`` cost matrix is
    gathered, and the repulsion costs one matrix product forward and two backward.

    Args:
        t_pos, t_neg: t⁺ and t⁻ (the paper's CIFAR-10 values: t⁺ = 1; t⁻ = 2 for K = 1,
            0.9 for K = 4).
        detach_pos_weights, detach_neg_weights: see :func:`functional.cacr`.
        pos_weights, neg_weights: ``"conditional"`` or ``"uniform"`` (CACR Table 8's
            w/o π⁺ / w/o π⁻; both uniform = UAUR, App. C.2 Eq. 11).
        repulsion_cost, rbf_precision: ``"euclidean"`` or Table 12's ``"rbf"``
            (App. C.4 Eq. 13–14) with precision t (default 2, see :mod:`functional.cacr`).
        block_size: compute the repulsion ``block_size`` queries at a time, recomputing in
            backward (memory O(V·N·block) instead of O((V·N)²)).
        gather_distributed: negatives from every rank's samples; each rank's loss is the
            mean over its own queries (:mod:`contrastkit.distributed`).
        backend: the implementation of the fused repulsion statistics, ``"torch"``,
            ``"triton"`` or ``"auto"`` (see :class:`~contrastkit.losses.FusedSettings`;
            uniform negative weights need no Gram statistic and stay plain torch).

    After each call :attr:`last_parts` holds ``(L_CA, L_CR)`` as floats (kept as device
    tensors until read, so a step never waits for the device).
    """

    param_ranges: ClassVar[dict[str, Param]] = {
        "t_pos": POSITIVE,  # Eq. 3-4 need t > 0 (t⁺ → 0 is pos_weights="uniform")
        "t_neg": POSITIVE,
        "detach_pos_weights": FLAG,
        "detach_neg_weights": FLAG,
        "pos_weights": Param.one_of(*WEIGHTS),
        "neg_weights": Param.one_of(*WEIGHTS),
        "repulsion_cost": Param.one_of(*REPULSION_COSTS),
        "rbf_precision": POSITIVE,
    }

    def __init__(
        self,
        t_pos: float = 1.0,
        t_neg: float = 2.0,
        detach_pos_weights: bool = False,
        detach_neg_weights: bool = False,
        pos_weights: str = "conditional",
        neg_weights: str = "conditional",
        repulsion_cost: str = "euclidean",
        rbf_precision: float = 2.0,
        *,
        block_size: int | None = None,
        gather_distributed: bool = False,
        backend: str = DEFAULT_BACKEND,
    ) -> None:
        super().__init__(block_size, gather_distributed, backend)
        self.t_pos = t_pos
        self.t_neg = t_neg
        self.detach_pos_weights = detach_pos_weights
        self.detach_neg_weights = detach_neg_weights
        check_variant(pos_weights, neg_weights, repulsion_cost, rbf_precision, detach_neg_weights)
        self.variant = {
            "pos_weights": pos_weights,
            "neg_weights": neg_weights,
            "repulsion_cost": repulsion_cost,
            "rbf_precision": rbf_precision,
        }
        # (L_CA, L_CR) of the last call (DeviceDiagnostics)
        self._last: dict[str, Tensor | None] = {"attraction": None, "repulsion": None}

    def forward(self, views: Tensor, queue: Tensor | None = None) -> Tensor:
        """The loss over ``views [V, N, d]`` (and ``queue``); without a queue, with
        conditional negative weights and the Euclidean cost, where
        :func:`views.fused_pair_terms` allows at ``τ = 1/(2·t⁻)``, in one fused
        ``autograd.Function`` (:func:`views.multiview_terms`: same values and gradients to
        float32 rounding, fewer operators)."""
        if queue is None and self._fusable(views):
            t_pos, t_neg = check_positive(self.t_pos, "t_pos"), check_positive(self.t_neg, "t_neg")
            t_pos = 0.0 if self.variant["pos_weights"] == "uniform" else t_pos  # w/o π⁺
            detach = (self.detach_pos_weights, self.detach_neg_weights)
            attraction, repulsion = multiview_terms(views, t_pos, t_neg, *detach)
            return self._record(attraction.mean(), repulsion.mean())
        pos_sim, negatives = multiview_negatives(views, queue, *self.fused_setting)
        return self._loss(pos_sim, negatives)

    def _fusable(self, views: Tensor) -> bool:
        """Whether :meth:`forward` takes the fused path (before the queue test)."""
        variant = self.variant["neg_weights"], self.variant["repulsion_cost"]
        if variant != ("conditional", "euclidean") or not self.t_neg > 0:
            return False
        if not isinstance(views, Tensor) or views.dim() != 3:
            return False  # the general path's checks say what is wrong
        t = 0.5 / self.t_neg
        return fused_pair_terms(views[0], t, *self.fused_setting, views=views.shape[0])

    def queue_loss(self, query: Tensor, key: Tensor, queue: Tensor) -> Tensor:
        """CACR's MoCo form (Algorithm 3, K = 1): unit-norm ``query [N, d]`` against its
        ``key [N, d]`` and the constant ``queue [Q, d]`` alone, through the fused negatives
        (``block_size`` tiles the queries); records :attr:`last_parts`."""
        pos_sim = (query * key).sum(dim=1, keepdim=True)
        extra = queue.to(query.dtype)
        negatives = GramNegatives(query, query[:0], extra, None, self.block_size, self.backend)
        return self._loss(pos_sim, negatives)

    def _loss(self, pos_sim: Tensor, negatives: GramNegatives) -> Tensor:
        """:func:`functional.cacr_cosine` with this module's t⁺, t⁻ and detach flags;
        records :attr:`last_parts`."""
        total, attraction, repulsion = F.cacr_cosine(
            pos_sim,
            negatives,
            self.t_pos,
            self.t_neg,
            self.detach_pos_weights,
            self.detach_neg_weights,
            return_parts=True,
            **self.variant,
        )
        return self._record(attraction, repulsion, total)

    def _record(self, attraction: Tensor, repulsion: Tensor, total: Tensor | None = None) -> Tensor:
        """Keeps ``(L_CA, L_CR)`` for :attr:`last_parts` (with ``gather_distributed``, their
        means over every rank's queries); returns their sum (``total``)."""
        parts = attraction.detach(), repulsion.detach()
        if self.gather_distributed:
            parts = tuple(map(distributed.global_mean, parts))
        self._last["attraction"], self._last["repulsion"] = parts
        return attraction + repulsion if total is None else total

    @property
    def last_parts(self) -> tuple[float, float] | None:
        """``(L_CA, L_CR)`` of the last call (``None`` before the first)."""
        attraction, repulsion = self.last_float("attraction"), self.last_float("repulsion")
        return None if attraction is None or repulsion is None else (attraction, repulsion)


@register("cmc", "views", "Tian et al., ECCV 2020 (CMC), full-graph Eq. (8)", fused_backends=True)
class CMC(FusedSettings):
    """CMC's full-graph multi-positive InfoNCE: the mean over every ordered pair of views
    ``(a, b)``, ``a ≠ b``, of InfoNCE with queries from view ``a``, positives the same
    samples in view ``b`` and negatives the other samples in view ``b`` (plus ``queue``).

    Args:
        temperature: τ; 0.07 as in CMC and CACR's CMC (K = 4) baseline.
        block_size: each pair's negatives ``block_size`` queries at a time, recomputed in
            backward (memory O(N·block) instead of O(N²) per pair).
        gather_distributed: compute the loss of the global batch on every rank, from every
            rank's views gathered with gradient (:mod:`contrastkit.distributed`).
        backend: the implementation of each pair's fused negatives, ``"torch"``,
            ``"triton"`` or ``"auto"`` (see :class:`~contrastkit.losses.FusedSettings`).
    """

    param_ranges: ClassVar[dict[str, Param]] = {"temperature": POSITIVE}

    def __init__(
        self,
        temperature: float = 0.07,
        *,
        block_size: int | None = None,
        gather_distributed: bool = False,
        backend: str = DEFAULT_BACKEND,
    ) -> None:
        super().__init__(block_size, gather_distributed, backend)
        self.temperature = temperature

    def forward(self, views: Tensor, queue: Tensor | None = None) -> Tensor:
        """Without a queue, where :func:`views.fused_pair_terms` allows, in one fused
        ``autograd.Function`` (:func:`views.multiview_pair_terms`: one product per unordered
        pair of views serves both directions); else each ordered pair through the fused
        negatives of :func:`views.cross_view_negatives` (with a queue:
        :func:`views.cross_view_queue_negatives`). The same values and gradients to
        float32 rounding."""
        views = check_multiview(views)
        v = views.shape[0]
        setting = (*self.fused_setting, v)
        if queue is None and fused_pair_terms(views[0], self.temperature, *setting):
            # every pair has N anchors: the mean of all terms is the mean of the pairs' means
            return multiview_pair_terms(views, self.temperature).mean()
        if self.gather_distributed:
            views = torch.stack(distributed.gather_all_with_grad(*views))
        each = same_values(views, views.unbind(0))  # bfloat16 values stay known as such
        losses = [
            F.info_nce(*self._pair(each[a], each[b], queue), self.temperature)
            for a, b in itertools.permutations(range(v), 2)
        ]
        return torch.stack(losses).mean()

    def _pair(
        self, query: Tensor, key: Tensor, queue: Tensor | None
    ) -> tuple[Tensor, GramNegatives]:
        """``(pos, negatives)`` of queries ``query`` against the keys ``key`` (and
        ``queue``)."""
        if queue is None:
            return cross_view_negatives(query, key, None, self.block_size, False, self.backend)
        return cross_view_queue_negatives(query, key, queue, self.block_size, self.backend)
