"""Contrastive Attraction and Contrastive Repulsion (Zheng et al., NeurIPS 2021).

CACR Eq. (2)–(5) with the paper's choices ``c(z1, z2) = ‖z1 - z2‖²`` and
``d_t(z1, z2) = t·‖z1 - z2‖²`` (§3.1). For an anchor with ``K`` positives and ``J``
negatives, the mini-batch conditionals of Eq. (5) are softmaxes over the costs:

* attraction ``π⁺_k = softmax_k(t⁺·c⁺_k)``: far positives weigh more;
* repulsion ``π⁻_j = softmax_j(-t⁻·c⁻_j)``: near negatives weigh more;

and ``L = mean_i Σ_k π⁺_ik c⁺_ik - mean_i Σ_j π⁻_ij c⁻_ij``. Defaults t⁺ = 1, t⁻ = 2 are
the paper's small-scale setting for K = 1 on CIFAR-10 (Appendix B).

:func:`cacr` takes the costs; :func:`cacr_cosine` takes cosine similarities of unit
vectors, where ``c = 2 - 2s``: then ``π⁻ = softmax(2t⁻·s)`` and the repulsion of anchor
``i`` is ``-(2 - 2·E_i)`` with ``E_i = Σ_j π⁻_ij s_ij``, which a fused
:class:`~contrastkit.losses.functional._negatives.Negatives` computes without a cost
matrix.

Ablations and cost variants (both forms):

* ``pos_weights="uniform"``: w/o π⁺ (CACR Table 8), the attraction is the mean cost
  ``mean_k c⁺_k`` (the t⁺ → 0 limit, Lemma 1);
* ``neg_weights="uniform"``: w/o π⁻ (Table 8), the repulsion is ``-mean_j c⁻_j``;
  both uniform is UAUR, App. C.2 Eq. (11);
* ``repulsion_cost="rbf"``: App. C.4 Eq. (13)–(14), the repulsion in the log-scale RBF
  form ``L_CR = log( (1/M) Σ_i Σ_j π⁻_ij exp(-t·c⁻_ij) )`` with ``π⁻`` as above (uniform
  with ``neg_weights="uniform"``) and ``t = rbf_precision``. The paper does not state t for
  Table 12; the default 2 is Wang & Isola's (2020) uniformity loss, which Eq. (14) follows.
  Computed as ``logsumexp_i(a_i) - log M`` with
  ``a_i = logsumexp_j(-(t⁻ + t)·c_ij) - logsumexp_j(-t⁻·c_ij)``.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from ._common import check_positive, check_tensor, compute_dtype, float32_compute
from ._negatives import DenseNegatives, GramNegatives, Negatives


def _check(pos: object, neg: object, names: tuple[str, str]) -> tuple[Tensor, Tensor | Negatives]:
    pos_t = check_tensor(pos, names[0], 2, "[M, K]")
    rows = neg.rows if isinstance(neg, Negatives) else None
    if rows is None:
        neg = check_tensor(neg, names[1], 2, "[M, J]")
        rows = neg.shape[0]
        if neg.shape[1] < 1:
            raise ValueError(f"{names[1]} must have shape [M, J] with J >= 1, got J = 0")
    if rows != pos_t.shape[0]:
        raise ValueError(
            f"{names[1]} must have shape [M, J] with M = {names[0]}.shape[0] = "
            f"{pos_t.shape[0]}, got M = {rows}"
        )
    if pos_t.shape[1] < 1:
        raise ValueError(f"{names[0]} must have shape [M, K] with K >= 1, got K = 0")
    return pos_t, neg


WEIGHTS = ("conditional", "uniform")
REPULSION_COSTS = ("euclidean", "rbf")


def check_variant(
    pos_weights: str, neg_weights: str, repulsion_cost: str, rbf_precision: float, detach: bool
) -> float:
    """Validate the ablation/cost options; returns ``rbf_precision`` as a float."""
    for name, value, allowed in (
        ("pos_weights", pos_weights, WEIGHTS),
        ("neg_weights", neg_weights, WEIGHTS),
        ("repulsion_cost", repulsion_cost, REPULSION_COSTS),
    ):
        if value not in allowed:
            raise ValueError(f"{name} must be one of {allowed}, got {value!r}")
    if repulsion_cost == "rbf" and detach:
        raise ValueError("detach_neg_weights is not supported with repulsion_cost='rbf'")
    return check_positive(rbf_precision, "rbf_precision")


def _rbf_repulsion(a: Tensor) -> Tensor:
    """``log((1/M) Σ_i exp(a_i))`` (Eq. 14's outer log-mean)."""
    return torch.logsumexp(a, dim=0) - math.log(a.shape[0])


def _attraction(c_pos: Tensor, t_pos: float, detach: bool, uniform: bool = False) -> Tensor:
    """``mean_i Σ_k π⁺_ik c⁺_ik`` (Eq. 3); ``uniform``: ``π⁺_ik = 1/K``."""
    if uniform:
        return c_pos.mean(dim=1).mean()
    w = torch.softmax(t_pos * c_pos, dim=1)
    return ((w.detach() if detach else w) * c_pos).sum(dim=1).mean()


def _parts(
    attraction: Tensor, repulsion: Tensor, return_parts: bool
) -> Tensor | tuple[Tensor, Tensor, Tensor]:
    total = attraction + repulsion
    return (total, attraction, repulsion) if return_parts else total


@float32_compute
def cacr(
    pos_cost: Tensor,
    neg_cost: Tensor,
    t_pos: float = 1.0,
    t_neg: float = 2.0,
    detach_pos_weights: bool = False,
    detach_neg_weights: bool = False,
    return_parts: bool = False,
    pos_weights: str = "conditional",
    neg_weights: str = "conditional",
    repulsion_cost: str = "euclidean",
    rbf_precision: float = 2.0,
) -> Tensor | tuple[Tensor, Tensor, Tensor]:
    """CACR loss over squared Euclidean costs.

    Args:
        pos_cost: ``[M, K]`` costs from each anchor to its ``K`` positives.
        neg_cost: ``[M, J]`` costs from each anchor to its ``J`` negatives.
        t_pos: t⁺ of the attraction conditional (Eq. 3); t⁺ → 0 makes it uniform, which
            turns the attraction into the alignment loss (CACR Lemma 1).
        t_neg: t⁻ of the repulsion conditional (Eq. 4).
        detach_pos_weights: stop the gradient through π⁺, as the paper's MoCo code
            (Algorithm 3) does; its §3.2 equations put no stop-gradient on π⁺, hence
            ``False``.
        detach_neg_weights: stop the gradient through π⁻.
        return_parts: return ``(L_CA + L_CR, L_CA, L_CR)`` instead of the sum.
        pos_weights, neg_weights: ``"conditional"`` (π⁺, π⁻) or ``"uniform"`` (Table 8's
            w/o π⁺, w/o π⁻; both uniform = UAUR).
        repulsion_cost: ``"euclidean"`` (Eq. 12) or ``"rbf"`` (Eq. 13–14).
        rbf_precision: t of the RBF cost (see the module docstring).
    """
    neg_cost = check_tensor(neg_cost, "neg_cost", 2, "[M, J]")
    pos_cost, _ = _check(pos_cost, neg_cost, ("pos_cost", "neg_cost"))
    t_pos = check_positive(t_pos, "t_pos")
    t_neg = check_positive(t_neg, "t_neg")
    rbf_t = check_variant(
        pos_weights, neg_weights, repulsion_cost, rbf_precision, detach_neg_weights
    )
    dtype = compute_dtype(pos_cost, neg_cost)
    c_neg = neg_cost.to(dtype)
    uniform_pos = pos_weights == "uniform"
    attraction = _attraction(pos_cost.to(dtype), t_pos, detach_pos_weights, uniform_pos)
    t_eff = 0.0 if neg_weights == "uniform" else t_neg
    if repulsion_cost == "rbf":
        a = torch.logsumexp(-(t_eff + rbf_t) * c_neg, 1) - torch.logsumexp(-t_eff * c_neg, 1)
        return _parts(attraction, _rbf_repulsion(a), return_parts)
    w_neg = torch.softmax(-t_eff * c_neg, dim=1)
    if detach_neg_weights:
        w_neg = w_neg.detach()
    repulsion = -(w_neg * c_neg).sum(dim=1).mean()
    return _parts(attraction, repulsion, return_parts)


@float32_compute
def cacr_cosine(
    pos_sim: Tensor,
    neg_sim: Tensor | Negatives,
    t_pos: float = 1.0,
    t_neg: float = 2.0,
    detach_pos_weights: bool = False,
    detach_neg_weights: bool = False,
    return_parts: bool = False,
    pos_weights: str = "conditional",
    neg_weights: str = "conditional",
    repulsion_cost: str = "euclidean",
    rbf_precision: float = 2.0,
) -> Tensor | tuple[Tensor, Tensor, Tensor]:
    """:func:`cacr` for unit-norm embeddings, in cosine similarities (``c = 2 - 2s``).

    Args:
        pos_sim: ``[M, K]`` similarities of each anchor with its ``K`` positives.
        neg_sim: ``[M, J]`` similarities with its negatives (``-inf`` = absent), or a
            :class:`Negatives` such as the fused V-view layout of
            :func:`contrastkit.losses.views.multiview_negatives`.
        t_pos, t_neg, detach_pos_weights, detach_neg_weights, return_parts, pos_weights,
            neg_weights, repulsion_cost, rbf_precision: as :func:`cacr`.

    Equal to ``cacr(2 - 2·pos_sim, 2 - 2·neg_sim, ...)`` when the similarities are cosines;
    the RBF repulsion is ``a_i = -2t + lse_j((2t⁻ + 2t)·s_ij) - lse_j(2t⁻·s_ij)``.
    """
    pos_sim, neg = _check(pos_sim, neg_sim, ("pos_sim", "neg_sim"))
    t_pos = check_positive(t_pos, "t_pos")
    t_neg = check_positive(t_neg, "t_neg")
    rbf_t = check_variant(
        pos_weights, neg_weights, repulsion_cost, rbf_precision, detach_neg_weights
    )
    if isinstance(neg, Tensor):
        neg = DenseNegatives(neg, compute_dtype(pos_sim, neg))
    dtype = compute_dtype(pos_sim)
    uniform_pos = pos_weights == "uniform"
    attraction = _attraction(2.0 - 2.0 * pos_sim.to(dtype), t_pos, detach_pos_weights, uniform_pos)
    scale = 0.0 if neg_weights == "uniform" else 2.0 * t_neg
    if repulsion_cost == "rbf":
        a = neg.logsumexp(scale + 2.0 * rbf_t) - neg.logsumexp(scale) - 2.0 * rbf_t
        return _parts(attraction, _rbf_repulsion(a), return_parts)
    # π⁻ uniform at scale 0
    mean_sim = _uniform_mean(neg) if scale == 0.0 else neg.softmax_mean(scale, detach_neg_weights)
    repulsion = (2.0 * mean_sim - 2.0).mean()
    return _parts(attraction, repulsion, return_parts)


def _uniform_mean(neg: Negatives) -> Tensor:
    """``[M]`` mean similarity over each anchor's negatives (``π⁻`` uniform)."""
    if isinstance(neg, DenseNegatives):
        present = torch.isfinite(neg.neg)
        return torch.where(present, neg.neg, 0.0).sum(dim=1) / present.sum(dim=1)
    if isinstance(neg, GramNegatives):  # Σ_j a_i·k_j = a_i·Σ_j k_j, minus the excluded
        keys = neg.anchors if neg.keys is None else neg.keys
        if neg.extra is not None:
            keys = torch.cat([keys, neg.extra.to(keys.dtype)])
        total = neg.anchors @ keys.sum(dim=0)
        if neg.exclude is not None:
            total = total - (neg.anchors.unsqueeze(1) * keys[neg.exclude]).sum(dim=(1, 2))
        return total / neg.count()
    raise TypeError(f"uniform negative weights need dense or Gram negatives, got {type(neg)}")
