"""InfoNCE-family modules: NT-Xent, InfoNCE (MoCo / cross-view), DCL, DCLW, FlatNCE,
dual temperature and HCL.

All but :class:`InfoNCE` use SimCLR's 2N convention: ``loss(z1, z2)`` with two views
``[N, d]`` (normalised inside) makes 2N anchors, each with the same sample's other view as
positive and the other 2N - 2 views (plus an optional ``queue``) as negatives, and
averages over the 2N anchors. ``loss.similarity_loss(pos, neg)`` applies the same loss to
similarities built any other way (MoCo's queue, for instance). The 2N layout goes through
:func:`views.ntxent_negatives`, whose fused log-sum-exp never materialises ``neg``; the
queue is then a constant, as MoCo's memory is.

Example:
    >>> import torch
    >>> from contrastkit.losses import NTXent
    >>> z1, z2 = torch.randn(8, 16), torch.randn(8, 16)
    >>> NTXent(temperature=0.5)(z1, z2).shape
    torch.Size([])
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import ClassVar

import torch
from torch import Tensor

from .. import distributed
from . import functional as F
from ._fused_settings import FusedSettings
from .functional import Negatives
from .functional._backend import DEFAULT_BACKEND
from .functional._scaled_terms import hcl_anchors
from .functional.infonce import (
    check_hcl,
    dclw_from_statistics,
    dual_weighted,
    hcl_scales,
)
from .hparams import NONNEGATIVE, POSITIVE, Param
from .registry import register
from .views import (
    cross_view_negatives,
    cross_view_terms,
    dual_ntxent_terms,
    fused_pair_terms,
    ntxent_negatives,
    ntxent_statistics,
    ntxent_terms,
)


class TwoViewContrastive(FusedSettings, ABC):
    """Base of the losses defined on ``(pos, neg)`` similarities in the 2N layout.

    Args shared by every subclass (keyword-only): ``block_size``, ``gather_distributed``
    and ``backend``, as for :class:`~contrastkit.losses.FusedSettings`.
    """

    param_ranges: ClassVar[dict[str, Param]] = {"temperature": POSITIVE}

    def forward(self, z1: Tensor, z2: Tensor, queue: Tensor | None = None) -> Tensor:
        """Loss over the 2N anchors of ``z1, z2: [N, d]``; ``queue: [Q, d]`` adds negatives."""
        pos, neg = ntxent_negatives(z1, z2, queue, *self.fused_setting)
        return self.similarity_loss(pos, neg)

    @abstractmethod
    def similarity_loss(self, pos: Tensor, neg: Tensor | Negatives) -> Tensor:
        """The loss on ``pos [M]`` and ``neg [M, K]`` (or any :class:`Negatives`) with this
        module's hyper-parameters."""

    def _fusable(self, owner: type, z1: Tensor, queue: Tensor | None, temperature: float) -> bool:
        """Whether a call takes ``owner``'s fused path from the views: no queue,
        ``similarity_loss`` still ``owner``'s (a subclass may redefine it), and
        :func:`views.fused_pair_terms` allows at ``temperature`` (the lowest one used)."""
        if queue is not None or type(self).similarity_loss is not owner.similarity_loss:
            return False
        return fused_pair_terms(z1, temperature, *self.fused_setting)


class SingleTemperature(TwoViewContrastive):
    """A 2N-layout loss whose only hyper-parameter is τ: subclasses name the functional
    form as ``loss_fn(pos, neg, temperature)``.

    A subclass whose per-anchor loss is a function of InfoNCE's terms ``(-log P, log W)``
    alone names it as ``from_terms``; its calls without a queue then take the fused path
    :func:`views.ntxent_terms` where :func:`views.fused_pair_terms` allows (the torch
    backend, no ``block_size``, nothing gathered): one ``autograd.Function``, about a third
    less host time per call, the same values and gradients to float32 rounding."""

    loss_fn: ClassVar[Callable[..., Tensor]]
    from_terms: ClassVar[Callable[[Tensor, Tensor], Tensor] | None] = None

    def __init_subclass__(cls, **kwargs: object) -> None:
        """A subclass that redefines the loss (``loss_fn``, ``similarity_loss``) without
        ``from_terms`` of its own takes the general path: its inherited ``from_terms``
        would compute the parent's loss."""
        super().__init_subclass__(**kwargs)
        if {"loss_fn", "similarity_loss"} & vars(cls).keys() and "from_terms" not in vars(cls):
            cls.from_terms = None

    def __init__(
        self,
        temperature: float = 0.1,
        *,
        block_size: int | None = None,
        gather_distributed: bool = False,
        backend: str = DEFAULT_BACKEND,
    ) -> None:
        super().__init__(block_size, gather_distributed, backend)
        self.temperature = temperature

    def forward(self, z1: Tensor, z2: Tensor, queue: Tensor | None = None) -> Tensor:
        from_terms = type(self).from_terms
        setting = (self.temperature, *self.fused_setting)
        if from_terms is not None and queue is None and fused_pair_terms(z1, *setting):
            nll, log_w, _, _ = ntxent_terms(z1, z2, self.temperature)
            return from_terms(nll, log_w).mean()
        return super().forward(z1, z2, queue)

    def similarity_loss(self, pos: Tensor, neg: Tensor | Negatives) -> Tensor:
        return type(self).loss_fn(pos, neg, self.temperature)


def _minus_log_p(nll: Tensor, log_w: Tensor) -> Tensor:
    """NT-Xent's per-anchor loss from InfoNCE's terms: ``-log P``."""
    return nll


def _flat(nll: Tensor, log_w: Tensor) -> Tensor:
    """FlatNCE's per-anchor loss from InfoNCE's terms (:func:`F.flatnce`): with
    ``v = l - p = -log P + log W``, ``sg(-log P) + exp(v - sg(v)) - 1``."""
    v = nll + log_w
    return nll.detach() + torch.exp(v - v.detach()) - 1.0


def _decoupled(nll: Tensor, log_w: Tensor) -> Tensor:
    """DCL's per-anchor loss from InfoNCE's terms: ``l - p = -log P + log W`` (with
    ``l = log Σ_neg exp(neg/τ)``, ``p = pos/τ``: ``-log P = lse - p``, ``log W = l - lse``)."""
    return nll + log_w


@register("ntxent", "pair", "SimCLR (Chen et al., 2020); MACL Eq. (1)", fused_backends=True)
class NTXent(SingleTemperature):
    """NT-Xent: InfoNCE over SimCLR's 2N views (MACL Eq. 1; LASCon Eq. 1).

    Args:
        temperature: τ; 0.1 as in MACL's SimCLR experiments (SimCLR used 0.1–0.5).
    """

    loss_fn = staticmethod(F.info_nce)
    from_terms = staticmethod(_minus_log_p)


@register(
    "infonce", "query_key", "MoCo (He et al., 2020); SimCSE (Gao et al., 2021)", fused_backends=True
)
class InfoNCE(FusedSettings):
    """One-directional InfoNCE of queries against keys.

    * ``loss(query, key, queue)`` is MoCo's: the positive of ``q_i`` is ``k_i`` and the
      negatives are the queue's rows; detach ``key`` and ``queue`` yourself (momentum
      encoder outputs).
    * ``loss(query, key)`` is the cross-view form of SimCSE: the negatives of ``q_i`` are
      the other keys ``k_j, j ≠ i``; gradients flow into both arguments.

    Args:
        temperature: τ; 0.1 is the default here (MoCo v2 used 0.2, SimCSE 0.05).
        block_size, gather_distributed, backend: as for
            :class:`~contrastkit.losses.FusedSettings` (with a queue the negatives are
            the shared queue and nothing is gathered).
    """

    param_ranges: ClassVar[dict[str, Param]] = {"temperature": POSITIVE}

    def __init__(
        self,
        temperature: float = 0.1,
        *,
        block_size: int | None = None,
        gather_distributed: bool = False,
        backend: str = DEFAULT_BACKEND,
    ) -> None:
        super().__init__(block_size, gather_distributed, backend)
        self.temperature = temperature

    def forward(self, query: Tensor, key: Tensor, queue: Tensor | None = None) -> Tensor:
        """One fused ``autograd.Function`` (:func:`views.cross_view_terms`) where
        :func:`views.fused_pair_terms` allows (nothing is gathered with a queue) and
        ``similarity_loss`` is this class's; the same values and gradients to float32
        rounding."""
        gather = self.gather_distributed and queue is None
        setting = (self.block_size, gather, self.backend)
        if type(self).similarity_loss is InfoNCE.similarity_loss and fused_pair_terms(
            query, self.temperature, *setting, views=1
        ):
            return cross_view_terms(query, key, queue, self.temperature)[0].mean()
        pos, neg = cross_view_negatives(query, key, queue, *self.fused_setting)
        return self.similarity_loss(pos, neg)

    def similarity_loss(self, pos: Tensor, neg: Tensor | Negatives) -> Tensor:
        return F.info_nce(pos, neg, self.temperature)


@register("dcl", "pair", "Yeh et al., ECCV 2022, Eq. (6)", fused_backends=True)
class DCL(SingleTemperature):
    """Decoupled contrastive loss: the positive leaves the denominator.

    Mean over 2N anchors; the authors' code sums the two directions, i.e. twice this.
    """

    loss_fn = staticmethod(F.dcl)
    from_terms = staticmethod(_decoupled)


@register("dclw", "pair", "Yeh et al., ECCV 2022, §3.3 (weighted DCL)", fused_backends=True)
class DCLW(TwoViewContrastive):
    """DCL with the positive weighted by ``sg[2 - M·softmax(pos/σ)]`` (σ = 0.5); with
    ``gather_distributed`` the softmax runs over every rank's positives."""

    param_ranges: ClassVar[dict[str, Param]] = {"sigma": POSITIVE}

    def __init__(
        self,
        temperature: float = 0.1,
        sigma: float = 0.5,
        *,
        block_size: int | None = None,
        gather_distributed: bool = False,
        backend: str = DEFAULT_BACKEND,
    ) -> None:
        super().__init__(block_size, gather_distributed, backend)
        self.temperature = temperature
        self.sigma = sigma

    def forward(self, z1: Tensor, z2: Tensor, queue: Tensor | None = None) -> Tensor:
        """As :meth:`TwoViewContrastive.forward`; where :meth:`_fusable`, from the fused
        statistics (:func:`views.ntxent_statistics`; same values and gradients to float32
        rounding)."""
        if self._fusable(DCLW, z1, queue, self.temperature):
            pos, lse = ntxent_statistics(z1, z2, (1.0 / self.temperature,))
            return dclw_from_statistics(pos, lse[0], self.temperature, self.sigma).mean()
        return super().forward(z1, z2, queue)

    def similarity_loss(self, pos: Tensor, neg: Tensor | Negatives) -> Tensor:
        batch_pos = distributed.gather(pos.detach()) if self.gather_distributed else None
        return F.dclw(pos, neg, self.temperature, self.sigma, batch_pos=batch_pos)


@register("flatnce", "pair", "Chen et al., 2021 (FlatNCE); MACL §5.2", fused_backends=True)
class FlatNCE(SingleTemperature):
    """FlatNCE: reports InfoNCE's value, follows DCL's gradient."""

    loss_fn = staticmethod(F.flatnce)
    from_terms = staticmethod(_flat)


@register("dual_temperature", "pair", "Zhang et al., CVPR 2022", fused_backends=True)
class DualTemperature(TwoViewContrastive):
    """``sg[W(τ_inter)/W(τ)] · InfoNCE(τ)``; τ_inter = 1.0 by default (Zhang et al.)."""

    param_ranges: ClassVar[dict[str, Param]] = {"inter_temperature": POSITIVE}

    def __init__(
        self,
        temperature: float = 0.1,
        inter_temperature: float = 1.0,
        *,
        block_size: int | None = None,
        gather_distributed: bool = False,
        backend: str = DEFAULT_BACKEND,
    ) -> None:
        super().__init__(block_size, gather_distributed, backend)
        self.temperature = temperature
        self.inter_temperature = inter_temperature

    def forward(self, z1: Tensor, z2: Tensor, queue: Tensor | None = None) -> Tensor:
        """As :meth:`TwoViewContrastive.forward`; without a queue, where
        :func:`views.fused_pair_terms` allows at the lower of the two temperatures, from
        the fused terms at τ and, without gradient, at τ_inter, both from one matrix
        product (:func:`views.dual_ntxent_terms`; same values and gradients to float32
        rounding)."""
        lowest = min(self.temperature, self.inter_temperature)
        if self._fusable(DualTemperature, z1, queue, lowest):
            terms = dual_ntxent_terms(z1, z2, self.temperature, self.inter_temperature)
            return dual_weighted(*terms).mean()
        return super().forward(z1, z2, queue)

    def similarity_loss(self, pos: Tensor, neg: Tensor | Negatives) -> Tensor:
        return F.dual_temperature(pos, neg, self.temperature, self.inter_temperature)


@register("hcl", "pair", "Robinson et al., ICLR 2021, Eq. (5) estimator", fused_backends=True)
class HCL(TwoViewContrastive):
    """Hard-negative debiased loss; defaults τ = 0.5, τ⁺ = 0.1, β = 1 (the authors' CIFAR-10).

    τ⁺ is a class prior, so it lies in [0, 1); β >= 0 (β = 0 is the debiased loss).
    ``backend="auto"`` keeps the torch path at every size (its Triton kernels have not
    been timed faster, see ``__init__``); ``"triton"`` asks for them."""

    param_ranges: ClassVar[dict[str, Param]] = {
        "tau_plus": Param.real(0.0, 1.0, high_open=True),
        "beta": NONNEGATIVE,
    }

    def __init__(
        self,
        temperature: float = 0.5,
        tau_plus: float = 0.1,
        beta: float = 1.0,
        *,
        block_size: int | None = None,
        gather_distributed: bool = False,
        backend: str = DEFAULT_BACKEND,
    ) -> None:
        # "auto" keeps the torch path: it takes both log-sum-exps from one matrix product;
        # on an H200 the kernels, then one pass per scale, were slower at every size
        # measured (45.0 against 38.8 ms at 16,384 pairs; docs/results/performance-log.md).
        # They now take both in one pass (Negatives.logsumexps), not yet timed
        backend = "torch" if backend == "auto" else backend
        super().__init__(block_size, gather_distributed, backend)
        self.temperature = temperature
        self.tau_plus = tau_plus
        self.beta = beta

    def forward(self, z1: Tensor, z2: Tensor, queue: Tensor | None = None) -> Tensor:
        """As :meth:`TwoViewContrastive.forward`; where :meth:`_fusable` at the larger
        scale, from the fused statistics (:func:`views.ntxent_statistics`: the positives
        and both log-sum-exps from one matrix product) and the per-anchor loss with a
        closed-form backward (:func:`functional._scaled_terms.hcl_anchors`); same values
        and gradients to float32 rounding."""
        scales = hcl_scales(self.temperature, self.beta)
        if self._fusable(HCL, z1, queue, 1.0 / scales[0]):
            check_hcl(self.tau_plus, self.beta)
            pos, lse = ntxent_statistics(z1, z2, scales)
            count = 2 * z1.shape[0] - 2  # every view but the anchor and its positive
            per_anchor = hcl_anchors(pos, lse[0], lse[1], count, self.temperature, self.tau_plus)
            return per_anchor.mean()
        return super().forward(z1, z2, queue)

    def similarity_loss(self, pos: Tensor, neg: Tensor | Negatives) -> Tensor:
        return F.hcl(pos, neg, self.temperature, self.tau_plus, self.beta)
