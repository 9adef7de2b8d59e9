"""Label-aware modules: SupCon (Khosla et al., 2020) and LASCon (Kim et al., 2023).

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

import torch
from torch import Tensor, nn

from . import functional as F
from .functional.supervised import LabelSimilarity
from .registry import register
from .views import check_labels, two_view_similarity


def _duplicated_pairs(matrix: Tensor) -> Tensor:
    """``[N, N]`` → ``[2N, 2N]``: the same pairwise values for every pair of views."""
    return matrix.repeat(2, 2)


@register("supcon", "labeled", "Khosla et al., NeurIPS 2020; LASCon Eq. (2)")
class SupCon(nn.Module):
    """SupCon, "out" version: positives are the other views with the same label.

    Args:
        temperature: τ = 0.1 (SupCon's default).
    """

    def __init__(self, temperature: float = 0.1) -> None:
        super().__init__()
        self.temperature = temperature

    def forward(self, z1: Tensor, z2: Tensor, labels: Tensor) -> Tensor:
        sim = two_view_similarity(z1, z2)
        labels = check_labels(labels, z1.shape[0])
        same = labels[:, None] == labels[None]
        same = same if labels.dim() == 1 else same.all(dim=-1)
        return F.supcon(sim, _duplicated_pairs(same), self.temperature)


@register("lascon", "labeled", "Kim et al., 2023 (LASCon), §3.4, Eq. (5)-(6)")
class LASCon(nn.Module):
    """Label-similarity-aware supervised contrastive loss.

    Args:
        temperature: τ = 0.1.
        similarity: ``"linear"`` or ``"tanh"`` (Eq. 5 for ``[N]`` labels, Eq. 6 for
            ``[N, D]``), ``"indicator"`` (SupCon), or a callable
            ``(labels_i, labels_j) -> [N, N]`` in [0, 1].
        c: steepness c of Eq. (5)/(6).
        variant: ``"out"`` (default; the paper's better one) or ``"in"``.

    The two views of a sample have label distance 0, so ``s = 1`` between them.
    """

    def __init__(
        self,
        temperature: float = 0.1,
        similarity: LabelSimilarity = "linear",
        c: float = 1.0,
        variant: str = "out",
    ) -> None:
        super().__init__()
        if variant not in ("out", "in"):
            raise ValueError(f"variant must be 'out' or 'in', got {variant!r}")
        self.temperature = temperature
        self.similarity = similarity
        self.c = c
        self.variant = variant

    def forward(self, z1: Tensor, z2: Tensor, labels: Tensor) -> Tensor:
        sim = two_view_similarity(z1, z2)
        labels = check_labels(labels, z1.shape[0])
        with torch.no_grad():
            s = F.label_similarity(labels, self.similarity, self.c)
        return F.lascon(sim, _duplicated_pairs(s).to(sim.dtype), self.temperature, self.variant)
