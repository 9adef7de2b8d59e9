"""InfoNCE and the baselines that MACL compares against, at the similarity level.

Every function takes ``pos: [M]`` (each anchor's similarity with its positive) and
``neg: [M, K]`` (with its negatives; ``-inf`` marks an absent negative) and returns the
mean over anchors, or per-anchor values with ``reduction="none"``.

Example:
    >>> import torch
    >>> from contrastkit.losses import functional as F
    >>> pos, neg = torch.tensor([0.9, 0.8]), torch.tensor([[0.1, -0.2], [0.3, 0.0]])
    >>> round(F.info_nce(pos, neg, temperature=0.1).item(), 4)
    0.0037
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch
from torch import Tensor
from torch.nn.functional import logsigmoid, softplus

from ._common import (
    Negatives,
    check_pos_neg,
    check_positive,
    check_reduction,
    compute_dtype,
    float32_compute,
    log1mexp,
    reduce,
)
from ._gram_grad import differentiating_backward


def _scaled_pos(pos: Tensor, temperature: float | Tensor) -> Tensor:
    return pos.to(compute_dtype(pos)) / temperature


# softplus(x) is x above this: log1p(exp(-40)) = 4e-18 is below float64's rounding of 40
_SOFTPLUS_LINEAR = 40.0


def terms_of_gap(gap: Tensor) -> tuple[Tensor, Tensor]:
    """``(-log P, log W) = (softplus(d), logsigmoid(d))`` for ``d = l - p`` (the negatives'
    log-sum-exp minus the positive's logit, both at the same τ and shift)."""
    return softplus(gap, threshold=_SOFTPLUS_LINEAR), logsigmoid(gap)


def over_w(nll: Tensor, log_w: Tensor, log_scale: Tensor | None = None) -> Tensor:
    """``sg[c/W]·(-log P)`` per anchor from InfoNCE's terms ``(-log P, log W)`` and a
    gradient-free ``log c`` (``None``: c = 1): MACL's Eq. (11) weight, the dual-temperature
    ratio (:class:`_OverW`)."""
    return _OverW.apply(nll, log_w, log_scale)


class _OverW(torch.autograd.Function):
    """``F = sg[c/W]·(-log P)`` without forming ``1/W``, which leaves float32 when the
    positive dominates by ~88 logits (gap ``d = l - p``; reachable for τ below ~0.023).

    Value: ``c·(-log P)/W``, and ``c`` where ``-log P`` is below ``sqrt(tiny)`` of the dtype
    (there ``-log P/W = 1 + (-log P)/2 + …`` rounds to 1; above it ``1/W`` is finite).
    Gradient: ``dF/dd = c·W/sg(W)``, value ``c``; sent to ``-log P`` and ``log W`` alike,
    since ``d = (-log P) + log W`` and their own backward maps ``(g, h)`` to
    ``g·W + h·P = g``. Recorded with ``create_graph`` as ``c·exp(log W - sg(log W))``, whose
    derivative ``c·P`` is the exact second derivative of the stop-gradient product."""

    @staticmethod
    def forward(ctx, nll: Tensor, log_w: Tensor, log_scale: Tensor | None) -> Tensor:  # type: ignore[override]
        tiny = torch.finfo(nll.dtype).tiny ** 0.5
        value = torch.where(nll < tiny, 1.0, nll / log_w.exp())
        scale = None if log_scale is None else log_scale.exp()
        ctx.save_for_backward(log_w, scale)
        ctx.set_materialize_grads(False)
        return value if scale is None else value * scale

    @staticmethod
    def backward(ctx, grad: Tensor | None) -> tuple:  # type: ignore[override]
        if grad is None:
            return None, None, None
        log_w, scale = ctx.saved_tensors
        if scale is not None:
            grad = grad * scale
        if differentiating_backward():
            grad = grad * torch.exp(log_w - log_w.detach())
        return grad, grad, None


@float32_compute
def info_nce_terms(
    pos: Tensor, neg: Tensor | Negatives, temperature: float | Tensor
) -> tuple[Tensor, Tensor]:
    """Per-anchor ``(-log P, log W)`` at ``temperature``, both ``[M]``.

    ``P`` is the softmax of ``[pos, neg] / τ`` at the positive (MACL Eq. 2 with j = i) and
    ``W = 1 - P`` the gradient scaling factor of MACL Eq. (8); ``log W`` is formed in log
    space, never as ``log(1 - P)``, so it stays finite when ``P`` rounds to 1.

    ``temperature``: a number, or a 0-d tensor without gradient (MACL's adaptive τ); the
    terms give τ no gradient, so a τ that requires one is an error, not a silent zero.
    """
    pos, neg = check_pos_neg(pos, neg)
    if isinstance(temperature, Tensor) and temperature.requires_grad:
        raise ValueError(
            "temperature: info_nce_terms gives τ no gradient; pass a number or a tensor "
            "without grad (τ.detach()), got a tensor that requires grad"
        )
    # a tensor τ stays on the device (no read); its reciprocal is one operator, 1.0 / τ two
    scale = temperature.reciprocal() if isinstance(temperature, Tensor) else 1.0 / temperature
    lse_neg = neg.logsumexp(scale)
    return _Terms.apply(pos, lse_neg, temperature)


class _Terms(torch.autograd.Function):
    """``(-log P, log W)`` from ``pos`` and ``l = log Σ exp(neg/τ)``: with ``p = pos/τ``
    and ``d = l - p``, ``P = sigmoid(-d)`` and ``W = sigmoid(d)``, so
    ``-log P = softplus(d)`` and ``log W = logsigmoid(d)`` (:func:`terms_of_gap`). Neither
    subtracts two large numbers: the former ``logaddexp(p, l) - p`` lost ``eps·|p|`` to
    cancellation, a relative error of about 1e-3 in float32 for an anchor whose positive
    dominates (``-log P`` near 1e-3 at ``p`` near 10), which MACL's weight ``1/W``
    multiplies back into the loss.

    Backward in closed form: ``∂(-log P)/∂l = W = -τ·∂(-log P)/∂pos`` and
    ``∂(log W)/∂l = P = -τ·∂(log W)/∂pos``, with ``W = exp(log W)``, ``P = exp(p - lse)``:
    three operators for ``-log P`` alone (autograd's division, ``logaddexp`` and
    subtraction take twelve), and ``P - 1`` is never formed by cancellation. A term
    without a gradient costs nothing (MACL and dual temperature use ``log W`` detached).
    ``τ`` (a number or a detached 0-d tensor) gets no gradient.

    Double backward: exact. A backward run with grad mode on (``create_graph=True``)
    recomputes ``p``, ``lse`` and ``log W`` from the saved inputs ``pos`` and ``l`` with
    differentiable operations and forms the same closed form from them, so autograd
    records it; a plain backward reads the kept values (no extra operator).
    """

    @staticmethod
    def forward(  # type: ignore[override]
        ctx, pos: Tensor, lse_neg: Tensor, temperature: float | Tensor
    ) -> tuple[Tensor, Tensor]:
        nll, log_w = terms_of_gap(lse_neg - _scaled_pos(pos, temperature))
        ctx.save_for_backward(nll, log_w, pos, lse_neg)
        ctx.temperature = temperature
        ctx.set_materialize_grads(False)
        return nll, log_w

    @staticmethod
    def backward(ctx, grad_nll: Tensor | None, grad_log_w: Tensor | None) -> tuple:  # type: ignore[override]
        nll, log_w, pos, lse_neg = ctx.saved_tensors
        if differentiating_backward():  # recorded: recompute from the inputs, differentiably
            nll, log_w = terms_of_gap(lse_neg - _scaled_pos(pos, ctx.temperature))
        grad = None if grad_nll is None else grad_nll * log_w.exp()
        if grad_log_w is not None:
            from_log_w = grad_log_w * (-nll).exp()
            grad = from_log_w if grad is None else grad + from_log_w
        if grad is None:
            return None, None, None
        return grad / -ctx.temperature, grad, None


@float32_compute
def info_nce(
    pos: Tensor, neg: Tensor | Negatives, temperature: float = 0.1, reduction: str = "mean"
) -> Tensor:
    """InfoNCE (van den Oord et al., 2018; MACL Eq. 1): ``-log softmax([pos, neg]/τ)[0]``.

    Args:
        pos: ``[M]`` anchor–positive similarities.
        neg: ``[M, K]`` anchor–negative similarities.
        temperature: τ > 0; 0.1 is SimCLR's CIFAR setting used by MACL's experiments.
        reduction: ``"mean"`` (default), ``"sum"`` or ``"none"``.
    """
    pos, neg = check_pos_neg(pos, neg)
    temperature = check_positive(temperature, "temperature")
    nll, _ = info_nce_terms.__wrapped__(pos, neg, temperature)  # in float32 already
    return reduce(nll, check_reduction(reduction))


@float32_compute
def dcl(
    pos: Tensor, neg: Tensor | Negatives, temperature: float = 0.1, reduction: str = "mean"
) -> Tensor:
    """Decoupled contrastive loss (Yeh et al., ECCV 2022): ``-pos/τ + logsumexp(neg/τ)``.

    The positive is removed from the denominator, so the gradient carries no
    ``W = 1 - P`` factor (MACL §5.2).
    """
    pos, neg = check_pos_neg(pos, neg)
    temperature = check_positive(temperature, "temperature")
    per_anchor = neg.logsumexp(1.0 / temperature) - _scaled_pos(pos, temperature)
    return reduce(per_anchor, check_reduction(reduction))


@float32_compute
def dclw(
    pos: Tensor,
    neg: Tensor | Negatives,
    temperature: float = 0.1,
    sigma: float = 0.5,
    reduction: str = "mean",
    batch_pos: Tensor | None = None,
) -> Tensor:
    """Weighted DCL (Yeh et al., ECCV 2022): ``-w·pos/τ + logsumexp(neg/τ)``.

    ``w = sg[2 - M·softmax(pos/σ)]`` over the ``M`` anchors, a von Mises–Fisher weighting
    that puts more weight on harder (less similar) positives; σ = 0.5 is the paper's value.
    Written as ``2 - exp(pos/σ - log mean_j exp(b_j/σ))`` over ``b = batch_pos`` (default
    ``pos``): passing the whole batch's positives weights a subset of the anchors (one
    rank's) as within the whole batch.
    """
    pos, neg = check_pos_neg(pos, neg)
    temperature = check_positive(temperature, "temperature")
    sigma = check_positive(sigma, "sigma")
    lse = neg.logsumexp(1.0 / temperature)
    per_anchor = dclw_from_statistics(pos, lse, temperature, sigma, batch_pos)
    return reduce(per_anchor, check_reduction(reduction))


def dclw_from_statistics(
    pos: Tensor, lse: Tensor, temperature: float, sigma: float, batch_pos: Tensor | None = None
) -> Tensor:
    """:func:`dclw`'s per-anchor loss from the positives ``pos [M]`` and the negatives'
    ``lse = log Σ exp(neg/τ)`` ``[M]`` (checked arguments)."""
    p = _scaled_pos(pos, temperature)
    batch = (pos if batch_pos is None else batch_pos).detach().to(p.dtype) / sigma
    log_mean_exp = torch.logsumexp(batch, dim=0) - math.log(batch.shape[0])
    weight = 2.0 - torch.exp(pos.detach().to(p.dtype) / sigma - log_mean_exp)
    return lse - weight * p


@float32_compute
def flatnce(
    pos: Tensor, neg: Tensor | Negatives, temperature: float = 0.1, reduction: str = "mean"
) -> Tensor:
    """FlatNCE (Chen et al., 2021): InfoNCE's value with DCL's gradient.

    With ``v = logsumexp((neg - pos)/τ)`` the surrogate ``exp(v - sg(v))`` equals one and
    has gradient ``∇v``, which is exactly DCL's (MACL §5.2). The function returns
    ``sg(InfoNCE) + exp(v - sg(v)) - 1`` so the logged value is InfoNCE's.
    """
    pos, neg = check_pos_neg(pos, neg)
    temperature = check_positive(temperature, "temperature")
    v = neg.logsumexp(1.0 / temperature) - _scaled_pos(pos, temperature)  # lse((neg - pos)/τ)
    value = torch.logaddexp(torch.zeros_like(v), v).detach()  # InfoNCE = log(1 + exp(v))
    per_anchor = value + torch.exp(v - v.detach()) - 1.0
    return reduce(per_anchor, check_reduction(reduction))


@float32_compute
def dual_temperature(
    pos: Tensor,
    neg: Tensor | Negatives,
    temperature: float = 0.1,
    inter_temperature: float = 1.0,
    reduction: str = "mean",
) -> Tensor:
    """Dual-temperature InfoNCE (Zhang et al., CVPR 2022).

    ``sg[W(τ_inter) / W(τ)] · InfoNCE(τ)`` with ``W(t) = 1 - P_pos(t)``: the intra-anchor
    temperature τ shapes the weights over negatives, the larger inter-anchor temperature
    sets each anchor's overall gradient scale. The product is formed in log space
    (:func:`over_w`), so it stays exact where ``W(τ)`` underflows.
    """
    pos, neg = check_pos_neg(pos, neg)
    temperature = check_positive(temperature, "temperature")
    inter_temperature = check_positive(inter_temperature, "inter_temperature")
    terms = info_nce_terms.__wrapped__  # in float32 already: without the precision wrapper
    nll, log_w_intra = terms(pos, neg, temperature)
    _, log_w_inter = terms(pos, neg, inter_temperature)
    return reduce(dual_weighted(nll, log_w_intra, log_w_inter), check_reduction(reduction))


def dual_weighted(nll: Tensor, log_w_intra: Tensor, log_w_inter: Tensor) -> Tensor:
    """The dual-temperature per-anchor loss ``sg[W(τ_inter)/W(τ)]·(-log P(τ))`` from
    InfoNCE's terms at the two temperatures (:func:`over_w`)."""
    return over_w(nll, log_w_intra, log_w_inter)


@float32_compute
def hcl(
    pos: Tensor,
    neg: Tensor | Negatives,
    temperature: float = 0.5,
    tau_plus: float = 0.1,
    beta: float = 1.0,
    reduction: str = "mean",
) -> Tensor:
    """Hard-negative debiased contrastive loss (Robinson et al., ICLR 2021, Eq. 5 estimator).

    Importance weights ``imp = exp(β·neg/τ)``; the negative term
    ``Ng = (-τ⁺·K·e^{pos/τ} + Σ imp·e^{neg/τ} / mean(imp)) / (1 - τ⁺)`` is clamped below at
    ``K·e^{-1/τ}`` (its value when every negative sits at similarity -1) and the loss is
    ``-log(e^{pos/τ} / (e^{pos/τ} + Ng))``. Defaults (τ = 0.5, τ⁺ = 0.1, β = 1) follow the
    authors' CIFAR-10 setting. ``K`` counts each row's finite negatives. Everything is
    evaluated in log space.
    """
    pos, neg = check_pos_neg(pos, neg)
    temperature = check_positive(temperature, "temperature")
    check_hcl(tau_plus, beta)
    lse_hard, lse_soft = neg.logsumexps(hcl_scales(temperature, beta))
    per_anchor = hcl_parts(pos, lse_hard, lse_soft, neg.count(), temperature, tau_plus).loss
    return reduce(per_anchor, check_reduction(reduction))


def check_hcl(tau_plus: float, beta: float) -> None:
    """:func:`hcl`'s checks of τ⁺ (a class prior in [0, 1)) and β (>= 0)."""
    if not 0.0 <= tau_plus < 1.0:
        raise ValueError(f"tau_plus must lie in [0, 1), got {tau_plus}")
    if beta < 0:
        raise ValueError(f"beta must be >= 0, got {beta}")


def hcl_scales(temperature: float, beta: float) -> tuple[float, float]:
    """The two scales of :func:`hcl`'s log-sum-exps over the negatives: ``(1 + β)/τ`` and
    ``β/τ``."""
    return (1.0 + beta) / temperature, beta / temperature


class HclParts(NamedTuple):
    """:func:`hcl_parts`: the loss ``ℓ = both - p`` and what its closed-form backward
    needs: ``log_ng`` (``log N_g``), ``both = log(e^p + N_g)``, ``t`` of the
    debiasing (``log(τ⁺·K·e^p / reweighted)``, -1 where it is >= 0; ``None`` for τ⁺ = 0),
    the debiased estimate ``debiased`` and its ``floor``."""

    loss: Tensor
    log_ng: Tensor
    both: Tensor
    t: Tensor | None
    debiased: Tensor
    floor: float | Tensor


def hcl_parts(
    pos: Tensor,
    lse_hard: Tensor,
    lse_soft: Tensor,
    count: Tensor | float,
    temperature: float,
    tau_plus: float,
) -> HclParts:
    """:func:`hcl`'s per-anchor loss from the positives ``pos [M]``, the negatives'
    log-sum-exps at :func:`hcl_scales` and their number ``count`` (checked arguments),
    with its intermediate values (:class:`HclParts`)."""
    p = _scaled_pos(pos, temperature)
    log_k = count.log() if isinstance(count, Tensor) else math.log(count)
    # log(Σ imp·e^{n} / mean(imp)) = lse((1+β)·neg/τ) - lse(β·neg/τ) + log K
    log_reweighted = lse_hard - lse_soft + log_k
    # log(reweighted - τ⁺·K·e^{p}) where positive, -inf where the estimate is <= 0
    safe_t = None
    if tau_plus > 0:
        t = math.log(tau_plus) + log_k + p - log_reweighted
        ok = t < 0
        safe_t = torch.where(ok, t, torch.full_like(t, -1.0))
        debiased = torch.where(ok, log_reweighted + log1mexp(safe_t), torch.full_like(t, -math.inf))
    else:
        debiased = log_reweighted
    floor = math.log(1.0 - tau_plus) + log_k - 1.0 / temperature
    log_ng = debiased.clamp(min=floor) - math.log(1.0 - tau_plus)
    # ℓ = log(e^p + N_g) - p as softplus(log N_g - p): no cancellation of two large terms
    # for an easy anchor, and a second derivative that stays finite (logaddexp's overflows)
    loss = softplus(log_ng - p, threshold=_SOFTPLUS_LINEAR)
    return HclParts(loss, log_ng, loss + p, safe_t, debiased, floor)
