"""The non-contrastive objectives of Li, Zhang & Nie (ACL 2024) §4 on L2-normalised
sentence embeddings, before and after the paper's modification (§4, Appendix E).

Inputs are two views ``h, hp: [N, d]`` (normalised inside). ``symmetric=True`` (default)
adds the same objective with the views swapped (for the already symmetric Barlow Twins and
VICReg forms this doubles the value).

Unmodified (§4, Table 2 upper part): :func:`mhe` (alignment + ν·MHE uniformity), :func:`mhs`
(alignment + ν·MHS uniformity), :func:`barlow_l2` and :func:`vicreg_l2`. The paper applies
Barlow Twins and VICReg to L2-normalised embeddings (Appendix D.2, following Tao et al.,
2022), without the batch standardisation of :func:`.noncontrastive.barlow_twins` or the
1/d of :func:`.noncontrastive.vicreg`'s invariance term, hence separate functions.

Modified (Eqs. 6, 13–15): :func:`mmhe`, :func:`mmhs`, :func:`mbarlow`, :func:`mvicreg`. All
three paradigm components are replaced: GD is the indicator
``d_i = 1[h_iᵀhp_i − max_{k≠i} h_iᵀhp_k < m]`` (applied by stopping the gradient of anchors
with ``d_i = 0``), W takes an exponential form and R is a static ratio ``r``. As in the
official code (BDBC-KG-NLP/UnderstandingCSE), the gradient through the neighbour ``h_j`` is
stopped in mMHS and in the negative terms of mBarlow and mVICReg, and mMHE sums the
alignment terms and adds the uniformity once. This makes the gradient w.r.t. each anchor
exactly Eqs. (16)–(19) (times 1/N for mMHS, which averages its per-anchor terms).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from ._common import check_positive, float32_compute
from .alignment import alignment, uniformity
from .noncontrastive import off_diagonal
from .paradigm import both_ways, check_finite, distances, gd_indicator, negatives_masked

# ----------------------------------------------------------------------------------------
# Unmodified objectives (§4)


@float32_compute
def mhe(h: Tensor, hp: Tensor, nu: float = 1.0, symmetric: bool = True) -> Tensor:
    """``L^a + ν L^{u,MHE}``: ``(1/N) Σ_i ‖h_i − hp_i‖²`` plus
    ``log (2/(N(N−1))) Σ_{k<l} e^{−‖h_k − h_l‖²}`` over the anchor view.

    ν = 1 follows Wang & Isola (2020), whose uniformity weight the paper does not change.
    """
    nu = check_positive(nu, "nu")
    return both_ways(lambda a, b: alignment(a, b) + nu * uniformity(a, t=1.0), h, hp, symmetric)


@float32_compute
def mhs(h: Tensor, hp: Tensor, nu: float = 1.0, symmetric: bool = True) -> Tensor:
    """``L^a + ν (1/N) Σ_i L_i^{u,MHS}`` with ``L_i^{u,MHS} = −min_{j≠i} ‖h_i − h_j‖``
    (Maximum Hyperspherical Separation over the anchor view); ν = 1 as for :func:`mhe`."""
    nu = check_positive(nu, "nu")

    def one(a: Tensor, b: Tensor) -> Tensor:
        nearest = negatives_masked(distances(a @ a.T), float("inf")).amin(dim=1)
        return alignment(a, b) - nu * nearest.mean()

    return both_ways(one, h, hp, symmetric)


@float32_compute
def barlow_l2(h: Tensor, hp: Tensor, nu: float = 5e-3, symmetric: bool = True) -> Tensor:
    """Barlow Twins as written in §4: ``Σ_k (C_kk − 1)² + ν Σ_{k≠l} C_kl²`` with
    ``C = (1/N) Σ_i h_i hp_iᵀ`` of the L2-normalised views; ν = 5e-3 (Zbontar et al.)."""
    nu = check_positive(nu, "nu")

    def one(a: Tensor, b: Tensor) -> Tensor:
        c = a.T @ b / a.shape[0]
        return (torch.diagonal(c) - 1.0).pow(2).sum() + nu * off_diagonal(c).pow(2).sum()

    return both_ways(one, h, hp, symmetric)


def _covariance_penalty(x: Tensor) -> Tensor:
    """VICReg's ``(1/D) Σ_{k≠l} C_kl²`` of the sample covariance (the paper's ``v``)."""
    n, dim = x.shape
    centred = x - x.mean(dim=0)
    cov = centred.T @ centred / (n - 1)
    return off_diagonal(cov).pow(2).sum() / dim


def _std_penalty(x: Tensor, gamma: float, eps: float) -> Tensor:
    """VICReg's ``(1/D) Σ_k max(0, γ − σ_k)`` (the paper's ``c``); ε inside the sqrt as in
    Bardes et al. keeps the gradient finite."""
    return torch.relu(gamma - torch.sqrt(x.var(dim=0) + eps)).mean()


@float32_compute
def vicreg_l2(
    h: Tensor,
    hp: Tensor,
    nu_cov: float = 0.04,
    nu_std: float = 1.0,
    gamma: float = 1.0,
    eps: float = 1e-4,
    symmetric: bool = True,
) -> Tensor:
    """VICReg as written in §4: ``L^a + ν¹ (v(h) + v(hp)) + ν² (c(h) + c(hp))``.

    The paper gives no values for ν¹, ν²; the defaults keep Bardes et al.'s 25 : 25 : 1
    (invariance : variance : covariance) scaled so the alignment weight is 1, i.e.
    ν² = 1 (variance hinge, γ = 1) and ν¹ = 1/25 (covariance).
    """
    nu_cov, nu_std = check_positive(nu_cov, "nu_cov"), check_positive(nu_std, "nu_std")
    gamma = check_positive(gamma, "gamma")

    def one(a: Tensor, b: Tensor) -> Tensor:
        cov = _covariance_penalty(a) + _covariance_penalty(b)
        std = _std_penalty(a, gamma, eps) + _std_penalty(b, gamma, eps)
        return alignment(a, b) + nu_cov * cov + nu_std * std

    return both_ways(one, h, hp, symmetric)


# ----------------------------------------------------------------------------------------
# Modified objectives (§4, Appendix E)


def _check_modified(margin: float, ratio: float, temperature: float | None) -> None:
    check_finite(margin, "margin")
    check_positive(ratio, "ratio")
    if temperature is not None:
        check_positive(temperature, "temperature")


def anchor_gate(a: Tensor, b: Tensor, margin: float) -> tuple[Tensor, Tensor]:
    """``(d [N] bool, a')`` where ``a'`` equals ``a`` with the gradient of every anchor that
    fails the indicator ``d_i`` stopped."""
    d = gd_indicator((a @ b.T).detach(), margin).bool()
    return d, torch.where(d[:, None], a, a.detach())


@float32_compute
def mmhe(
    h: Tensor,
    hp: Tensor,
    margin: float = 0.3,
    ratio: float = 1.75,
    temperature: float = 0.05,
    symmetric: bool = True,
) -> Tensor:
    """Modified alignment + MHE uniformity, Eq. (14): ``Σ_i d_i L_i^{a,mMHE} + L^{u,mMHE}``.

    ``L^{u,mMHE} = log (2/(N(N−1))) Σ_{k<l} e^{−‖h_k − h_l‖²/(2τ)}`` (gradient stopped at
    anchors with ``d_i = 0``) and ``L_i^{a,mMHE} = c_i ‖h_i − hp_i‖²`` with the no-gradient
    coefficient ``c_i = r Σ_{j≠i} e^{h_iᵀh_j/τ} / (2τ Σ_{k<l} e^{h_kᵀh_l/τ})``. The
    alignment terms are summed, not averaged, so ``∂L/∂h_i`` is exactly Eq. (16).
    Defaults m = 0.3, r = 1.75, τ = 0.05: the paper's Table 4 (BERT-base).
    """
    _check_modified(margin, ratio, temperature)

    def one(a: Tensor, b: Tensor) -> Tensor:
        n = a.shape[0]
        d, gated = anchor_gate(a, b, margin)
        logits = negatives_masked(gated @ gated.T) / temperature
        lse_all = torch.logsumexp(logits.flatten(), dim=0)
        uniform = lse_all - 1.0 / temperature - math.log(n * (n - 1))
        lse_row = torch.logsumexp(logits.detach(), dim=1)
        coef = ratio / temperature * torch.exp(lse_row - lse_all.detach())
        align = (gated - b).pow(2).sum(dim=1)
        return (d * coef * align).sum() + uniform

    return both_ways(one, h, hp, symmetric)


@float32_compute
def mmhs(
    h: Tensor, hp: Tensor, margin: float = 0.3, ratio: float = 1.75, symmetric: bool = True
) -> Tensor:
    """Modified alignment + MHS uniformity, Eq. (15), averaged over anchors:
    ``(1/N) Σ_i d_i (r/(2δ_i) ‖h_i − hp_i‖² − ‖h_i − sg(h_j)‖)``.

    ``j`` is the nearest same-view neighbour and ``δ_i = ‖h_i − h_j‖`` carries no gradient.
    The paper's text writes ``max_j ‖h_i − h_j‖`` in ``L_i^{a,mMHS}``, but its Eq. (17)
    (``∂L_i/∂h_i = d_i (h_j − r hp_i)/‖h_i − h_j‖``, j = argmin) holds only with the nearest
    neighbour, which is what MHS itself uses; we follow Eq. (17). The gradient of each
    anchor is Eq. (17) / N. Defaults m = 0.3, r = 1.75: Table 4 (BERT-base).
    """
    _check_modified(margin, ratio, None)

    def one(a: Tensor, b: Tensor) -> Tensor:
        d, gated = anchor_gate(a, b, margin)
        nearest = negatives_masked(a @ a.T, float("-inf")).argmax(dim=1).detach()
        sq_sep = (gated - a.detach()[nearest]).pow(2).sum(dim=1)
        sep = sq_sep.clamp(min=torch.finfo(a.dtype).eps).sqrt()
        align = (gated - b).pow(2).sum(dim=1)
        per_anchor = ratio / (2.0 * sep.detach()) * align - sep
        return (d * per_anchor).mean()

    return both_ways(one, h, hp, symmetric)


def _weighted_pull_push(
    a: Tensor, b: Tensor, weight_view: Tensor, margin: float, ratio: float, temperature: float
) -> Tensor:
    """``Σ_i d_i (−w_p,i h_iᵀhp_i + Σ_{j≠i} w_ij h_iᵀ sg(h_j))`` with the no-gradient weights
    ``w_ij = e^{x_iᵀx_j/τ} / Σ_{k≠l} e^{x_kᵀx_l/τ}`` of ``x = weight_view`` and
    ``w_p,i = r Σ_{j≠i} w_ij`` (Eqs. 6 and 13)."""
    d, gated = anchor_gate(a, b, margin)
    x = weight_view.detach()
    logits = negatives_masked(x @ x.T) / temperature
    w = torch.exp(logits - torch.logsumexp(logits.flatten(), dim=0))
    push = (w * (gated @ a.detach().T)).sum(dim=1)
    pull = ratio * w.sum(dim=1) * (gated * b).sum(dim=1)
    return (d * (push - pull)).sum()


@float32_compute
def mbarlow(
    h: Tensor,
    hp: Tensor,
    margin: float = 0.3,
    ratio: float = 1.5,
    temperature: float = 0.05,
    symmetric: bool = True,
) -> Tensor:
    """Modified Barlow Twins, Eq. (6), summed over anchors; weights from the positive view,
    ``w_ij ∝ e^{hp_iᵀhp_j/τ}``. ``∂L/∂h_i`` is exactly Eq. (18).
    Defaults m = 0.3, r = 1.5, τ = 0.05: Table 4 (BERT-base)."""
    _check_modified(margin, ratio, temperature)
    return both_ways(
        lambda a, b: _weighted_pull_push(a, b, b, margin, ratio, temperature), h, hp, symmetric
    )


@float32_compute
def mvicreg(
    h: Tensor,
    hp: Tensor,
    margin: float = 0.3,
    ratio: float = 1.5,
    temperature: float = 0.05,
    symmetric: bool = True,
) -> Tensor:
    """Modified VICReg, Eq. (13), summed over anchors; weights from the anchor view,
    ``w_ij ∝ e^{h_iᵀh_j/τ}``. ``∂L/∂h_i`` is exactly Eq. (19).
    Defaults m = 0.3, r = 1.5, τ = 0.05: Table 4 (BERT-base)."""
    _check_modified(margin, ratio, temperature)
    return both_ways(
        lambda a, b: _weighted_pull_push(a, b, a, margin, ratio, temperature), h, hp, symmetric
    )
