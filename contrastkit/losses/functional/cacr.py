"""Contrastive Attraction and Contrastive Repulsion (Zheng et al., NeurIPS 2021).

CACR Eq. (2)–(5) with the paper's choices ``c(z1, z2) = ‖z1 - z2‖²`` and
``d_t(z1, z2) = t·‖z1 - z2‖²`` (§3.1). For an anchor with ``K`` positives and ``J``
negatives, the mini-batch conditionals of Eq. (5) are softmaxes over the costs:

* attraction ``π⁺_k = softmax_k(t⁺·c⁺_k)``: far positives weigh more;
* repulsion ``π⁻_j = softmax_j(-t⁻·c⁻_j)``: near negatives weigh more;

and ``L = mean_i Σ_k π⁺_ik c⁺_ik - mean_i Σ_j π⁻_ij c⁻_ij``. Defaults t⁺ = 1, t⁻ = 2 are
the paper's small-scale setting for K = 1 on CIFAR-10 (Appendix B).
"""

from __future__ import annotations

import torch
from torch import Tensor

from ._common import check_positive, check_tensor, compute_dtype


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
    pos_cost = check_tensor(pos_cost, "pos_cost", 2, "[M, K]")
    neg_cost = check_tensor(neg_cost, "neg_cost", 2, "[M, J]")
    if neg_cost.shape[0] != pos_cost.shape[0]:
        raise ValueError(
            f"neg_cost must have shape [M, J] with M = pos_cost.shape[0] = {pos_cost.shape[0]}, "
            f"got {tuple(neg_cost.shape)}"
        )
    if pos_cost.shape[1] < 1 or neg_cost.shape[1] < 1:
        raise ValueError("pos_cost and neg_cost need at least one column each")
    t_pos = check_positive(t_pos, "t_pos")
    t_neg = check_positive(t_neg, "t_neg")
    dtype = compute_dtype(pos_cost, neg_cost)
    c_pos, c_neg = pos_cost.to(dtype), neg_cost.to(dtype)
    w_pos = torch.softmax(t_pos * c_pos, dim=1)
    w_neg = torch.softmax(-t_neg * c_neg, dim=1)
    if detach_pos_weights:
        w_pos = w_pos.detach()
    if detach_neg_weights:
        w_neg = w_neg.detach()
    attraction = (w_pos * c_pos).sum(dim=1).mean()
    repulsion = -(w_neg * c_neg).sum(dim=1).mean()
    total = (attraction + repulsion).to(pos_cost.dtype)
    if return_parts:
        return total, attraction.to(pos_cost.dtype), repulsion.to(pos_cost.dtype)
    return total
