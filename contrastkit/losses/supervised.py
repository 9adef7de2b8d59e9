"""Label-aware modules: SupCon (Khosla et al., 2020) and LASCon (an anonymous ICLR 2023 submission).

Both take two views ``z1, z2: [N, d]`` and ``labels`` for the N samples, duplicated for
the 2N views; anchors range over all 2N views and ``A(i)`` is every other view.

Example:
    >>> import torch
    >>> from contrastkit.losses import LASCon
    >>> z1, z2, y = torch.randn(8, 16), torch.randn(8, 16), torch.rand(8) * 5
    >>> LASCon(similarity="tanh", c=2.0)(z1, z2, y).shape
    torch.Size([])
"""

from __future__ import annotations

from typing import ClassVar

import torch
from torch import Tensor

from . import functional as F
from ._fused_settings import FusedSettings
from .functional._backend import DEFAULT_BACKEND
from .functional.supervised import LabelSimilarity
from .hparams import POSITIVE, Param
from .registry import register
from .supervised_views import (
    check_labels,
    fused_supervised_terms,
    supervised_terms,
    two_view_similarity,
)
from .views import fused_pair_terms


def _duplicated_pairs(matrix: Tensor) -> Tensor:
    """``[N, N]`` → ``[2N, 2N]``: the same pairwise values for every pair of views."""
    return matrix.repeat(2, 2)


@register("supcon", "labeled", "Khosla et al., NeurIPS 2020; LASCon Eq. (2)", fused_backends=True)
class SupCon(FusedSettings):
    """SupCon, "out" version: positives are the other views with the same label.

    Computed as LASCon-out with the indicator similarity (per-class sums, no ``[2N, 2N]``
    tensor in autograd): one fused ``autograd.Function`` where it applies, else the fused
    statistics of :func:`supervised_views.supervised_terms` (see :func:`_lascon_out`).

    Args:
        temperature: τ = 0.1 (SupCon's default).
        block_size, gather_distributed, backend: as for
            :class:`~contrastkit.losses.FusedSettings` (the keys gathered come with their
            labels).
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

    def forward(self, z1: Tensor, z2: Tensor, labels: Tensor) -> Tensor:
        return _lascon_out(self, z1, z2, labels, "indicator", 1.0)


def _lascon_out(
    loss: SupCon | LASCon,
    z1: Tensor,
    z2: Tensor,
    labels: Tensor,
    similarity: LabelSimilarity,
    c: float,
) -> Tensor:
    """LASCon-out's mean over the 2N anchors with ``loss``'s settings: one fused
    ``autograd.Function`` where :func:`views.fused_pair_terms` allows (the torch backend, no
    ``block_size``, nothing gathered, no row sum that could underflow), else the fused
    statistics of :func:`supervised_views.supervised_terms`; the same values and gradients
    to float32 rounding."""
    setting = loss.fused_setting
    if fused_pair_terms(z1, loss.temperature, *setting):
        per_anchor = fused_supervised_terms(z1, z2, labels, loss.temperature, similarity, c)
    else:
        terms = supervised_terms(z1, z2, labels, loss.temperature, similarity, c, *setting)
        per_anchor = F.lascon_out_terms(*terms, loss.temperature)
    return per_anchor.mean().to(z1.dtype)


@register(
    "lascon",
    "labeled",
    "LASCon (ICLR 2023 submission, anonymous), §3.4, Eq. (5)-(6)",
    fused_backends=True,
)
class LASCon(FusedSettings):
    """Label-similarity-aware supervised contrastive loss.

    Args:
        temperature: τ = 0.1.
        similarity: ``"linear"`` or ``"tanh"`` (Eq. 5 for ``[N]`` labels, Eq. 6 for
            ``[N, D]``), ``"indicator"`` (SupCon), or a callable
            ``(labels_i, labels_j) -> [N, N]`` in [0, 1].
        c: steepness c of Eq. (5)/(6).
        variant: ``"out"`` (default; the paper's better one) or ``"in"``.
        block_size, gather_distributed, backend: as for :class:`SupCon`; ``"out"`` only
            (``backend="auto"`` is plain torch for ``"in"``).

    The two views of a sample have label distance 0, so ``s = 1`` between them. The
    ``"out"`` variant runs as SupCon does (:func:`_lascon_out`); the ``"in"`` variant on the
    dense ``[2N, 2N]`` similarities.
    """

    param_ranges: ClassVar[dict[str, Param]] = {
        "temperature": POSITIVE,
        "similarity": Param.one_of("linear", "tanh", "indicator", callable_ok=True),
        "c": POSITIVE,
        "variant": Param.one_of("out", "in"),
    }

    def __init__(
        self,
        temperature: float = 0.1,
        similarity: LabelSimilarity = "linear",
        c: float = 1.0,
        variant: str = "out",
        *,
        block_size: int | None = None,
        gather_distributed: bool = False,
        backend: str = DEFAULT_BACKEND,
    ) -> None:
        super().__init__(block_size, gather_distributed, backend)
        if variant not in ("out", "in"):
            raise ValueError(f"variant must be 'out' or 'in', got {variant!r}")
        if variant == "in" and block_size is not None:
            raise ValueError("block_size needs variant='out'")
        if variant == "in" and gather_distributed:  # what a torchrun run of the trainer sets
            raise ValueError(
                "gather_distributed (on in contrastkit train under torchrun) needs "
                "variant='out': LASCon-in is computed on one process's batch only"
            )
        if variant == "in" and backend == "triton":
            raise ValueError("backend='triton' needs variant='out'")
        self.temperature = temperature
        self.similarity = similarity
        self.c = c
        self.variant = variant

    def forward(self, z1: Tensor, z2: Tensor, labels: Tensor) -> Tensor:
        if self.variant == "out":
            return _lascon_out(self, z1, z2, labels, self.similarity, self.c)
        sim = two_view_similarity(z1, z2)
        labels = check_labels(labels, z1.shape[0])
        with torch.no_grad():
            s = F.label_similarity(labels, self.similarity, self.c)
        return F.lascon(sim, _duplicated_pairs(s).to(sim.dtype), self.temperature, "in")
