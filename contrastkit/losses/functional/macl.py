"""Model-Aware Contrastive Learning (Huang et al., ICML 2023), at the similarity level.

Two changes to InfoNCE, usable together or apart:

* the alignment-adaptive temperature of Eq. (7): ``τ_a = τ0·(1 + α(A - A0))`` with
  ``A = mean(pos)`` detached (Eq. 6, the batch's alignment magnitude);
* the reweighting of Eq. (11): each anchor's ``-log P`` is multiplied by
  ``V = sg[1 / (1 - P)] = sg[1 / W]``, which cancels the gradient scaling factor ``W`` of
  Eq. (3) and leaves ``∂L/∂f_i = -(1/τ_a)(g_i - Σ_j P̂_ij g_j)``.

Defaults are the paper's ImageNet-1K and CIFAR ones (τ0 = 0.1, α = 0.5, A0 = 0; App. B.1
and B.3, the best of the Table 8 ablation on ImageNet-100); its MoCo-v2 setting is τ0 =
0.15, α = 0.5, A0 = 0.2, and its sentence setting (Appendix B.4) τ0 = 0.05, α = 2, A0 =
0.8, no reweighting.
"""

from __future__ import annotations

from torch import Tensor

from ._common import (
    Negatives,
    check_pos_neg,
    check_positive,
    check_reduction,
    compute_dtype,
    float32_compute,
    reduce,
)
from .infonce import info_nce_terms, over_w


def macl_temperature(
    pos: Tensor,
    temperature: float = 0.1,
    alpha: float = 0.5,
    a0: float = 0.0,
    min_temperature: float | None = None,
    alignment: Tensor | None = None,
) -> Tensor:
    """The detached adaptive temperature of MACL Eq. (7), a 0-d tensor.

    ``alignment`` overrides ``A = mean(pos)`` (distributed training passes the global mean).

    ``A`` is the mean of ``pos`` (Eq. 6). On the unit sphere ``A ∈ [-1, 1]``, so the paper
    states ``τ_a ∈ [(1 - α - α·A0)·τ0, (1 + α - α·A0)·τ0]``. That interval reaches zero or
    below for some settings (the sentence setting α = 2, A0 = 0.8 gives ``τ_a <= 0``
    whenever ``A <= 0.3``), so ``τ_a`` is floored at ``min_temperature``, by default
    ``0.1·τ0``; with the image defaults (α = 0.5, A0 = 0) the floor never binds.
    """
    temperature = check_positive(temperature, "temperature")
    floor = (
        0.1 * temperature
        if min_temperature is None
        else check_positive(min_temperature, "min_temperature")
    )
    if alignment is None:
        alignment = pos.detach().to(compute_dtype(pos)).mean()
    # τ0·(1 + α·(A - A0)) as (τ0·α)·A + τ0·(1 - α·A0): three operators on the device
    return (
        (alignment * (temperature * alpha)).add_(temperature * (1.0 - alpha * a0)).clamp_(min=floor)
    )


@float32_compute
def macl(
    pos: Tensor,
    neg: Tensor | Negatives,
    temperature: float = 0.1,
    alpha: float = 0.5,
    a0: float = 0.0,
    reweight: bool = True,
    adaptive: bool = True,
    return_temperature: bool = False,
    min_temperature: float | None = None,
    reduction: str = "mean",
    alignment: Tensor | None = None,
) -> Tensor | tuple[Tensor, Tensor]:
    """MACL loss, Eq. (11) with the temperature of Eq. (7) (Algorithm 1).

    Args:
        pos: ``[M]`` anchor–positive similarities; their mean is the alignment ``A``.
        neg: ``[M, K]`` anchor–negative similarities (``-inf`` marks an absent one).
        temperature: τ0, the base temperature.
        alpha: α, how strongly τ follows the alignment (``adaptive=False`` ignores it).
        a0: A0, the alignment at which ``τ_a = τ0``.
        reweight: multiply by ``sg[1/(1-P)]`` (Eq. 11); ``False`` gives InfoNCE at ``τ_a``.
        adaptive: use Eq. (7); ``False`` keeps ``τ0`` fixed.
        return_temperature: also return the ``τ_a`` used (detached, 0-d).
        min_temperature: floor of ``τ_a``; ``None`` means ``0.1·τ0``.
        reduction: ``"mean"``, ``"sum"`` or ``"none"``.
        alignment: A to use instead of ``mean(pos)`` (e.g. the global mean across ranks).

    The product ``sg[1/W]·(-log P)`` is formed in log space from log-space terms
    (:func:`~.infonce.over_w`): ``1/W`` alone overflows float32 for an anchor whose
    positive dominates by ~88 logits (reachable at τ below ~0.023), where the product
    tends to 1 and its gradient to that of the gap.
    """
    pos, neg = check_pos_neg(pos, neg)
    if adaptive:
        tau = macl_temperature(pos, temperature, alpha, a0, min_temperature, alignment)
    else:
        # filled on the device: a host tensor would be a blocking copy on CUDA at every call
        tau = pos.new_full((), check_positive(temperature, "temperature"), dtype=compute_dtype(pos))
    nll, log_w = info_nce_terms.__wrapped__(pos, neg, tau)  # in float32 already
    loss = reduce(reweighted(nll, log_w) if reweight else nll, check_reduction(reduction))
    return (loss, tau) if return_temperature else loss


def reweighted(nll: Tensor, log_w: Tensor) -> Tensor:
    """Eq. (11)'s per-anchor loss ``sg[1/W]·(-log P)`` from InfoNCE's terms
    ``(-log P, log W)`` (:func:`~.infonce.over_w`)."""
    return over_w(nll, log_w)
