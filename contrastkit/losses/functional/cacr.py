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
"""

from __future__ import annotations

import torch
from torch import Tensor

from ._common import check_positive, check_tensor, compute_dtype
from ._negatives import DenseNegatives, Negatives


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


def _attraction(c_pos: Tensor, t_pos: float, detach: bool) -> Tensor:
    """``mean_i Σ_k π⁺_ik c⁺_ik`` (Eq. 3)."""
    w = torch.softmax(t_pos * c_pos, dim=1)
    return ((w.detach() if detach else w) * c_pos).sum(dim=1).mean()


def _parts(
    attraction: Tensor, repulsion: Tensor, dtype: torch.dtype, return_parts: bool
) -> Tensor | tuple[Tensor, Tensor, Tensor]:
    total = (attraction + repulsion).to(dtype)
    if return_parts:
        return total, attraction.to(dtype), repulsion.to(dtype)
    return total


def cacr(
    pos_cost: Tensor,
    neg_cost: Tensor,
    t_pos: float = 1.0,
    t_neg: float = 2.0,
    detach_pos_weights: bool = False,
    detach_neg_weights: bool = False,
    return_parts: bool = False,
) -> Tensor | tuple[Tensor, Tensor, Tensor]:
    """CACR loss over squared Euclidean costs.

    Args:
        pos_cost: ``[M, K]`` costs from each anchor to its ``K`` positives.
        neg_cost: ``[M, J]`` costs from each anchor to its ``J`` negatives.
        t_pos: t⁺ of the attraction conditional (Eq. 3); t⁺ → 0 makes it uniform, which
            turns the attraction into the alignment loss (CACR Lemma 1).
        t_neg: t⁻ of the repulsion conditional (Eq. 4).
        detach_pos_weights: stop the gradient through π⁺, as the paper's MoCo code
            (Algorithm 3) does; the small-scale code keeps it, hence ``False``.
        detach_neg_weights: stop the gradient through π⁻.
        return_parts: return ``(L_CA + L_CR, L_CA, L_CR)`` instead of the sum.
    """
    neg_cost = check_tensor(neg_cost, "neg_cost", 2, "[M, J]")
    pos_cost, _ = _check(pos_cost, neg_cost, ("pos_cost", "neg_cost"))
    t_pos = check_positive(t_pos, "t_pos")
    t_neg = check_positive(t_neg, "t_neg")
    dtype = compute_dtype(pos_cost, neg_cost)
    c_neg = neg_cost.to(dtype)
    attraction = _attraction(pos_cost.to(dtype), t_pos, detach_pos_weights)
    w_neg = torch.softmax(-t_neg * c_neg, dim=1)
    if detach_neg_weights:
        w_neg = w_neg.detach()
    repulsion = -(w_neg * c_neg).sum(dim=1).mean()
    return _parts(attraction, repulsion, pos_cost.dtype, return_parts)


def cacr_cosine(
    pos_sim: Tensor,
    neg_sim: Tensor | Negatives,
    t_pos: float = 1.0,
    t_neg: float = 2.0,
    detach_pos_weights: bool = False,
    detach_neg_weights: bool = False,
    return_parts: bool = False,
) -> Tensor | tuple[Tensor, Tensor, Tensor]:
    """:func:`cacr` for unit-norm embeddings, in cosine similarities (``c = 2 - 2s``).

    Args:
        pos_sim: ``[M, K]`` similarities of each anchor with its ``K`` positives.
        neg_sim: ``[M, J]`` similarities with its negatives (``-inf`` = absent), or a
            :class:`Negatives` such as the fused V-view layout of
            :func:`contrastkit.losses.views.multiview_negatives`.
        t_pos, t_neg, detach_pos_weights, detach_neg_weights, return_parts: as
            :func:`cacr`.

    Equal to ``cacr(2 - 2·pos_sim, 2 - 2·neg_sim, ...)`` when the similarities are cosines.
    """
    pos_sim, neg = _check(pos_sim, neg_sim, ("pos_sim", "neg_sim"))
    t_pos = check_positive(t_pos, "t_pos")
    t_neg = check_positive(t_neg, "t_neg")
    if isinstance(neg, Tensor):
        neg = DenseNegatives(neg, compute_dtype(pos_sim, neg))
    dtype = compute_dtype(pos_sim)
    attraction = _attraction(2.0 - 2.0 * pos_sim.to(dtype), t_pos, detach_pos_weights)
    mean_sim = neg.softmax_mean(2.0 * t_neg, detach_neg_weights)
    repulsion = (2.0 * mean_sim - 2.0).mean()
    return _parts(attraction, repulsion, pos_sim.dtype, return_parts)
