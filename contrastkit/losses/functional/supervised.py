"""Supervised (SupCon) and label-similarity-aware (LASCon) contrastive losses.

Both work on a ``[M, M]`` similarity matrix ``sim`` of ``M`` embeddings (``M = 2N`` views in
the SimCLR layout) and a ``[M, M]`` matrix of pair weights. Following LASCon §3.1, ``A(i)``
is every index but ``i``; ``u_ij = softmax_{j ∈ A(i)}(sim_ij / τ)`` (LASCon §3.4.1).
The diagonal of ``sim`` is ignored, so callers need not mask it.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from ._common import (
    check_positive,
    check_reduction,
    check_tensor,
    compute_dtype,
    float32_compute,
    reduce,
)

LabelSimilarity = str | Callable[[Tensor, Tensor], Tensor]
_SIMILARITIES = ("linear", "tanh", "indicator")


def _check_square(sim: object, weights: object) -> tuple[Tensor, Tensor]:
    sim_t = check_tensor(sim, "sim", 2, "[M, M]")
    if sim_t.shape[0] != sim_t.shape[1] or sim_t.shape[0] < 2:
        raise ValueError(f"sim must have shape [M, M] with M >= 2, got {tuple(sim_t.shape)}")
    if not isinstance(weights, Tensor) or weights.shape != sim_t.shape:
        got = tuple(weights.shape) if isinstance(weights, Tensor) else type(weights).__name__
        raise ValueError(
            f"the pair weights must have the shape of sim {tuple(sim_t.shape)}, got {got}"
        )
    return sim_t, weights


def lascon_out_terms(
    lse: Tensor, weighted_sim: Tensor, has_target: Tensor, temperature: float
) -> Tensor:
    """Per-anchor LASCon-out from its two sufficient statistics.

    With ``lse_i = log Σ_{j∈A(i)} exp(sim_ij/τ)`` and ``weighted_sim_i = Σ_{j∈A(i)} s̃_ij
    sim_ij``, ``-Σ_j s̃_ij log u_ij = lse_i - weighted_sim_i/τ`` because ``Σ_j s̃_ij = 1``;
    anchors without target mass (``has_target`` False) contribute 0.
    """
    per_anchor = lse - weighted_sim / temperature
    return per_anchor.masked_fill(~has_target, 0.0)


@float32_compute
def lascon(
    sim: Tensor,
    label_sim: Tensor,
    temperature: float = 0.1,
    variant: str = "out",
    reduction: str = "mean",
) -> Tensor:
    """LASCon (an anonymous ICLR 2023 submission), §3.4.4, in the ``"out"`` or ``"in"`` version.

    ``s̃_ij = s_ij / Σ_{k ∈ A(i)} s_ik`` (§3.1); ``out``: ``-Σ_{j∈A(i)} s̃_ij log u_ij``;
    ``in``: ``-log Σ_{j∈A(i)} s̃_ij u_ij``; the mean over anchors ``i`` by default.

    Args:
        sim: ``[M, M]`` cosine similarities.
        label_sim: ``[M, M]`` label similarities ``s ∈ [0, 1]`` (diagonal ignored).
        temperature: τ; 0.1, SupCon's (LASCon reports the best τ in [0.1, 1.0], App. D,
            and uses 0.5 for FreiHAND, App. D.3).
        variant: ``"out"`` (the paper's main choice) or ``"in"``.
        reduction: ``"mean"`` over anchors, ``"sum"``, or ``"none"`` (``[M]`` per anchor).

    An anchor whose ``s`` is zero on all of ``A(i)`` has no target and contributes 0.
    """
    sim, label_sim = _check_square(sim, label_sim)
    temperature = check_positive(temperature, "temperature")
    if variant not in ("out", "in"):
        raise ValueError(f"variant must be 'out' or 'in', got {variant!r}")
    dtype = compute_dtype(sim)
    eye = torch.eye(sim.shape[0], dtype=torch.bool, device=sim.device)
    sim = sim.to(dtype).masked_fill(eye, 0.0)
    logits = (sim / temperature).masked_fill(eye, float("-inf"))
    lse = torch.logsumexp(logits, dim=1)
    s = label_sim.to(dtype).masked_fill(eye, 0.0)
    mass = s.sum(dim=1)
    has_target = mass > 0
    s_tilde = s / mass.clamp(min=torch.finfo(dtype).tiny)[:, None]
    if variant == "out":
        per_anchor = lascon_out_terms(lse, (s_tilde * sim).sum(dim=1), has_target, temperature)
    else:
        log_s = torch.log(s_tilde).masked_fill(s_tilde == 0, float("-inf"))
        # rows without a target: a finite stand-in, so their logsumexp (then replaced by 0)
        # has a finite gradient, not the NaN of a softmax over only -inf
        log_s = log_s.masked_fill(~has_target[:, None], 0.0)
        log_mix = torch.logsumexp(logits - lse[:, None] + log_s, dim=1)
        per_anchor = -torch.where(has_target, log_mix, torch.zeros_like(log_mix))
    return reduce(per_anchor, check_reduction(reduction))


@float32_compute
def supcon(
    sim: Tensor, positive_mask: Tensor, temperature: float = 0.1, reduction: str = "mean"
) -> Tensor:
    """SupCon (Khosla et al., 2020), "out" version (LASCon Eq. 2).

    ``-(1/|P(i)|) Σ_{p∈P(i)} log u_ip`` with ``P(i)`` the ``True`` entries of row ``i`` of
    ``positive_mask`` (``[M, M]`` bool, diagonal ignored). It is LASCon-out with the
    indicator label similarity (LASCon §3.4.3).
    """
    if not isinstance(positive_mask, Tensor) or positive_mask.dtype != torch.bool:
        raise TypeError("positive_mask must be a bool tensor of shape [M, M]")
    return lascon(sim, positive_mask.to(sim.dtype), temperature, "out", reduction)


def label_similarity(
    labels: Tensor,
    similarity: LabelSimilarity = "linear",
    c: float = 1.0,
) -> Tensor:
    """Pairwise label similarity ``s ∈ [0, 1]`` of LASCon §4.3, ``[N, N]``.

    * scalar labels ``[N]`` (Eq. 5): ``ỹ = y / max|y|``, ``s = 1 - act(c·|ỹ_i - ỹ_j| / 2)``;
    * vector labels ``[N, D]`` (Eq. 6): ``s = 1 - act(c·(‖y_i - y_j‖₁ - m) / (M - m))`` with
      ``m``, ``M`` the smallest and largest L1 distance over the batch's pairs ``i, j ∈ I``,
      as Eq. 6 writes them: the pairs include ``i = j``, so ``m = 0`` and only a sample's
      own label (and an equal one) gets ``s = 1`` (until 2026-12-07 ``m`` was taken over
      distinct samples, which gave the closest different pair ``s = 1`` too);

    ``act`` is the identity (``"linear"``) or ``tanh`` (``"tanh"``). ``"indicator"`` gives
    ``1[y_i = y_j]`` and a callable ``f(labels_i, labels_j)`` is applied to broadcast pairs
    (``labels[:, None]`` and ``labels[None]``). The result is clipped to ``[0, 1]``.
    Degenerate batches (all ``y = 0``, or ``M = m``) divide by a tiny floor, not by zero.
    """
    if not isinstance(labels, Tensor):
        raise TypeError(
            f"labels must be a tensor of shape [N] or [N, D], got {type(labels).__name__}"
        )
    if labels.dim() not in (1, 2):
        raise ValueError(f"labels must have shape [N] or [N, D], got {tuple(labels.shape)}")
    if callable(similarity):
        s = similarity(labels[:, None], labels[None])
        if not isinstance(s, Tensor) or s.shape != (labels.shape[0], labels.shape[0]):
            raise ValueError("a callable similarity must return an [N, N] tensor")
        return s.to(torch.get_default_dtype() if not s.is_floating_point() else s.dtype).clamp(
            0.0, 1.0
        )
    if similarity not in _SIMILARITIES:
        raise ValueError(
            f"similarity must be one of {_SIMILARITIES} or a callable, got {similarity!r}"
        )
    if similarity == "indicator":
        equal = labels[:, None] == labels[None]
        equal = equal if labels.dim() == 1 else equal.all(dim=-1)
        return equal.to(labels.dtype if labels.is_floating_point() else torch.get_default_dtype())
    y = labels if labels.is_floating_point() else labels.to(torch.get_default_dtype())
    tiny = torch.finfo(y.dtype).eps
    if y.dim() == 1:
        y_tilde = y / y.abs().max().clamp(min=tiny)
        scaled = (y_tilde[:, None] - y_tilde[None]).abs_().mul_(c / 2.0)
    else:
        dist = torch.cdist(y, y, p=1.0)  # m = 0: the diagonal is in the batch's pairs
        scaled = dist.mul_(c / dist.max().clamp(min=tiny))
    act = scaled.tanh_() if similarity == "tanh" else scaled
    return act.neg_().add_(1.0).clamp_(0.0, 1.0)  # every step in place on [N, N]
