"""Sentence-embedding losses of the unified gradient paradigm (Li, Zhang & Nie, ACL 2024)
as registered modules: ``loss(h, hp)`` on two views ``[N, d]`` (normalised inside).

Each module holds its hyper-parameters and calls the function of the same name in
:mod:`contrastkit.losses.functional` (where the equations and defaults are documented).

Example:
    >>> import torch
    >>> from contrastkit import losses
    >>> loss = losses.get("paradigm", ratio=1.5)
    >>> loss(torch.randn(8, 16), torch.randn(8, 16)).shape
    torch.Size([])
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

from torch import Tensor, nn

from .. import distributed
from . import functional as F
from .functional.paradigm import ARCCON_MARGIN, GD_KINDS, RATIO_KINDS, WEIGHT_KINDS
from .hparams import FINITE, FLAG, NONNEGATIVE, POSITIVE, Param
from .registry import register

_REF = "Li, Zhang & Nie, ACL 2024"


class _TwoViewLoss(nn.Module):
    """``forward(h, hp)`` = ``fn(h, hp, **hyper-parameters)``; each hyper-parameter is a
    plain attribute (``loss.ratio = 2.0`` takes effect at the next call).

    ``gather_distributed=True`` computes the loss of the global batch on every rank, from
    every rank's embeddings gathered with gradient (:mod:`contrastkit.distributed`).

    ``symmetric=True`` (the default) averages it with the swapped direction, ``hp`` as the
    anchors: a choice of this project (every study here ran with it). Eq. (5) anchors on
    ``h`` alone; the authors' code (BDBC-KG-NLP/UnderstandingCSE, ``isotropy/models.py``)
    takes one direction for InfoNCE, ArcCon, MPT and MET, and for the alignment +
    uniformity losses adds both views' uniformity terms (a sum, not a mean)."""

    fn: Callable[..., Tensor]
    # one declaration for every loss of this family (registry.register reads it)
    param_ranges: ClassVar[dict[str, Param]] = {
        "gather_distributed": FLAG,
        "symmetric": FLAG,
        "margin": FINITE,
        "arc_margin": FINITE,
        "temperature": POSITIVE,
        "ratio": NONNEGATIVE,
        "nu": NONNEGATIVE,
        "nu_cov": NONNEGATIVE,
        "nu_std": NONNEGATIVE,
        "gamma": NONNEGATIVE,
        "gd": Param.one_of(*GD_KINDS),
        "weight": Param.one_of(*WEIGHT_KINDS),
        "ratio_kind": Param.one_of(*RATIO_KINDS),
    }

    def __init__(self, gather_distributed: bool = False, **hparams: object) -> None:
        super().__init__()
        self.gather_distributed = gather_distributed
        self._hparam_names = tuple(hparams)
        for key, value in hparams.items():
            setattr(self, key, value)

    def hparams(self) -> dict[str, object]:
        return {k: getattr(self, k) for k in self._hparam_names}

    def forward(self, h: Tensor, hp: Tensor) -> Tensor:
        h, hp = distributed.gather_all_with_grad(h, hp, enabled=self.gather_distributed)
        return type(self).fn(h, hp, **self.hparams())

    def extra_repr(self) -> str:
        return ", ".join(f"{k}={v!r}" for k, v in self.hparams().items())


@register("paradigm", "pair", f"{_REF}, Eq. (5), Table 1")
class Paradigm(_TwoViewLoss):
    """Eq. (5) with Table 1's GD / W / R choices; defaults are the §3.2 baseline
    (indicator GD, m = 0.3; softmax W, τ = 0.05; static R, r = 1)."""

    fn = staticmethod(F.paradigm)

    def __init__(
        self,
        margin: float = 0.3,
        temperature: float = 0.05,
        ratio: float = 1.0,
        gd: str = "indicator",
        weight: str = "softmax",
        ratio_kind: str = "static",
        arc_margin: float = ARCCON_MARGIN,
        symmetric: bool = True,
        *,
        gather_distributed: bool = False,
    ) -> None:
        for value, name, kinds in (
            (gd, "gd", GD_KINDS),
            (weight, "weight", WEIGHT_KINDS),
            (ratio_kind, "ratio_kind", RATIO_KINDS),
        ):
            if value not in kinds:
                raise ValueError(f"{name} must be one of {kinds}, got {value!r}")
        super().__init__(
            margin=margin,
            temperature=temperature,
            ratio=ratio,
            gd=gd,
            weight=weight,
            ratio_kind=ratio_kind,
            arc_margin=arc_margin,
            symmetric=symmetric,
            gather_distributed=gather_distributed,
        )


@register("arccon", "pair", f"Zhang et al., 2022; {_REF}, Eq. (2)")
class ArcCon(_TwoViewLoss):
    """ArcCon: InfoNCE with positive logit ``cos(θ_ii + u)/τ``; τ = 0.05, u = 10°."""

    fn = staticmethod(F.arccon)

    def __init__(
        self,
        temperature: float = 0.05,
        margin: float = ARCCON_MARGIN,
        symmetric: bool = True,
        *,
        gather_distributed: bool = False,
    ) -> None:
        super().__init__(
            temperature=temperature,
            margin=margin,
            symmetric=symmetric,
            gather_distributed=gather_distributed,
        )


@register("mpt", "pair", f"Nie et al., 2023; {_REF}, Eq. (3)")
class MPT(_TwoViewLoss):
    """MPT triplet on cosine similarity, margin m = 0.3: the paper's §3.2 GD margin; it
    states none for MPT itself (the authors' code defaults to 0.23)."""

    fn = staticmethod(F.mpt)

    def __init__(
        self, margin: float = 0.3, symmetric: bool = True, *, gather_distributed: bool = False
    ) -> None:
        super().__init__(margin=margin, symmetric=symmetric, gather_distributed=gather_distributed)


@register("met", "pair", f"Nie et al., 2023; {_REF}, Eq. (3)")
class MET(_TwoViewLoss):
    """MET triplet on Euclidean distance, margin m = 0.3: the paper's §3.2 GD margin; it
    states none for MET itself (the authors' code defaults to 0.45)."""

    fn = staticmethod(F.met)

    def __init__(
        self, margin: float = 0.3, symmetric: bool = True, *, gather_distributed: bool = False
    ) -> None:
        super().__init__(margin=margin, symmetric=symmetric, gather_distributed=gather_distributed)


@register("mhe", "pair", f"Wang & Isola, 2020; {_REF}, §4")
class MHE(_TwoViewLoss):
    """Alignment + ν·MHE uniformity (ν = 1)."""

    fn = staticmethod(F.mhe)

    def __init__(
        self, nu: float = 1.0, symmetric: bool = True, *, gather_distributed: bool = False
    ) -> None:
        super().__init__(nu=nu, symmetric=symmetric, gather_distributed=gather_distributed)


@register("mhs", "pair", f"{_REF}, §4")
class MHS(_TwoViewLoss):
    """Alignment + ν·MHS uniformity (−nearest-neighbour distance; ν = 1)."""

    fn = staticmethod(F.mhs)

    def __init__(
        self, nu: float = 1.0, symmetric: bool = True, *, gather_distributed: bool = False
    ) -> None:
        super().__init__(nu=nu, symmetric=symmetric, gather_distributed=gather_distributed)


@register("barlow_l2", "pair", f"Zbontar et al., 2021, as in {_REF}, §4")
class BarlowL2(_TwoViewLoss):
    """Barlow Twins on L2-normalised embeddings, ν = 5e-3."""

    fn = staticmethod(F.barlow_l2)

    def __init__(
        self, nu: float = 5e-3, symmetric: bool = True, *, gather_distributed: bool = False
    ) -> None:
        super().__init__(nu=nu, symmetric=symmetric, gather_distributed=gather_distributed)


@register("vicreg_l2", "pair", f"Bardes et al., 2022, as in {_REF}, §4")
class VICRegL2(_TwoViewLoss):
    """VICReg on L2-normalised embeddings (ν¹ = 0.04 covariance, ν² = 1 variance)."""

    fn = staticmethod(F.vicreg_l2)

    def __init__(
        self,
        nu_cov: float = 0.04,
        nu_std: float = 1.0,
        gamma: float = 1.0,
        symmetric: bool = True,
        *,
        gather_distributed: bool = False,
    ) -> None:
        super().__init__(
            nu_cov=nu_cov,
            nu_std=nu_std,
            gamma=gamma,
            symmetric=symmetric,
            gather_distributed=gather_distributed,
        )


@register("mmhe", "pair", f"{_REF}, Eq. (14), (16)")
class MMHE(_TwoViewLoss):
    """Modified alignment + MHE; m = 0.3, r = 1.75, τ = 0.05 (Table 4)."""

    fn = staticmethod(F.mmhe)

    def __init__(
        self,
        margin: float = 0.3,
        ratio: float = 1.75,
        temperature: float = 0.05,
        symmetric: bool = True,
        *,
        gather_distributed: bool = False,
    ) -> None:
        super().__init__(
            margin=margin,
            ratio=ratio,
            temperature=temperature,
            symmetric=symmetric,
            gather_distributed=gather_distributed,
        )


@register("mmhs", "pair", f"{_REF}, Eq. (15), (17)")
class MMHS(_TwoViewLoss):
    """Modified alignment + MHS; m = 0.3, r = 1.75 (Table 4)."""

    fn = staticmethod(F.mmhs)

    def __init__(
        self,
        margin: float = 0.3,
        ratio: float = 1.75,
        symmetric: bool = True,
        *,
        gather_distributed: bool = False,
    ) -> None:
        super().__init__(
            margin=margin, ratio=ratio, symmetric=symmetric, gather_distributed=gather_distributed
        )


@register("mbarlow", "pair", f"{_REF}, Eq. (6), (18)")
class MBarlow(_TwoViewLoss):
    """Modified Barlow Twins; m = 0.3, r = 1.5, τ = 0.05 (Table 4)."""

    fn = staticmethod(F.mbarlow)

    def __init__(
        self,
        margin: float = 0.3,
        ratio: float = 1.5,
        temperature: float = 0.05,
        symmetric: bool = True,
        *,
        gather_distributed: bool = False,
    ) -> None:
        super().__init__(
            margin=margin,
            ratio=ratio,
            temperature=temperature,
            symmetric=symmetric,
            gather_distributed=gather_distributed,
        )


@register("mvicreg", "pair", f"{_REF}, Eq. (13), (19)")
class MVICReg(_TwoViewLoss):
    """Modified VICReg; m = 0.3, r = 1.5, τ = 0.05 (Table 4)."""

    fn = staticmethod(F.mvicreg)

    def __init__(
        self,
        margin: float = 0.3,
        ratio: float = 1.5,
        temperature: float = 0.05,
        symmetric: bool = True,
        *,
        gather_distributed: bool = False,
    ) -> None:
        super().__init__(
            margin=margin,
            ratio=ratio,
            temperature=temperature,
            symmetric=symmetric,
            gather_distributed=gather_distributed,
        )
