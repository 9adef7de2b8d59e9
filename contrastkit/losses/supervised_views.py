"""View construction of the supervised layouts: SupCon's and LASCon's 2N views with labels
(the label-weighted sums of :func:`supervised_terms`, the dense similarities of
:func:`two_view_similarity`). Same conventions as :mod:`.views`.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from .. import distributed
from ._indices import ones, self_exclude
from .functional._backend import DEFAULT_BACKEND
from .functional._common import check_views, compute_dtype, float32_compute
from .functional._negatives import gram_logsumexp
from .functional._pair_terms import supervised_pair_terms
from .functional._precision import in_dtype
from .functional.supervised import LabelSimilarity, label_similarity
from .views import _bf16_source, _gathered_views, normalize


def check_labels(labels: object, n: int) -> Tensor:
    """Labels for ``n`` samples: ``[N]`` or ``[N, D]``."""
    if not isinstance(labels, Tensor):
        raise TypeError(
            f"labels must be a tensor of shape [N] or [N, D], got {type(labels).__name__}"
        )
    if labels.dim() not in (1, 2) or labels.shape[0] != n:
        raise ValueError(
            f"labels must have shape [N] or [N, D] with N = {n}, got {tuple(labels.shape)}"
        )
    return labels


def _class_ids(labels: Tensor) -> Tensor:
    """``[N]`` class index of each sample in ``[0, N)``: two samples share an index iff
    their labels are equal. Class labels ``[N]``: the position of the label's first
    occurrence in sorted order (a sort and a binary search, neither of which waits for the
    device); label rows ``[N, C]``: ``torch.unique(dim=0)``'s numbering, which does wait
    (its output size is data)."""
    if labels.dim() == 2:
        return torch.unique(labels, dim=0, return_inverse=True)[1]
    if labels.dtype == torch.bool:  # no binary search over booleans
        labels = labels.to(torch.uint8)
    return torch.searchsorted(torch.sort(labels).values, labels)


LabelWeights = Callable[[Tensor, Tensor], Tensor]  # (keys, anchors) -> weighted keys


def label_weights(
    labels_all: Tensor,
    n: int,
    offset: int,
    similarity: LabelSimilarity,
    c: float,
    dtype: torch.dtype,
    device: torch.device,
) -> tuple[LabelWeights, Tensor]:
    """The target weights ``s_ij`` of the ``2n`` local anchors of the 2N layout (``j`` over
    ``A(i)``, every view but the anchor itself) as a linear map and its row sums:
    ``weigh(keys, anchors) = Σ_{j∈A(i)} s_ij·k_j`` ``[2n, d]`` and ``mass_i = Σ_{j∈A(i)} s_ij``.

    ``keys = cat(z1_all, z2_all)`` ``[2N, d]``; local sample ``i`` is global ``offset + i``.
    The indicator similarity (SupCon) goes through per-class sums, O(N·d) time and memory;
    any other through the ``[n, N]`` label similarities of the local samples. With
    ``offset = 0`` and ``keys = anchors = x``, ``weigh(x, x)`` is ``S·x`` for the symmetric
    ``[2N, 2N]`` target matrix ``S`` (zero diagonal). The general path's
    (:func:`supervised_terms`); the fused one takes the ``[N, N]`` similarities whole."""
    total = labels_all.shape[0]
    if similarity == "indicator":
        cls = _class_ids(labels_all)
        cls2 = torch.cat([cls, cls])
        count = cls.new_zeros(total, dtype=dtype)
        count = count.index_add_(0, cls2, ones(2 * total, dtype, device))
        local = cls[offset : offset + n]  # the local samples are contiguous: a view
        mine = cls2 if n == total else torch.cat([local, local])

        def by_class(keys: Tensor, anchors: Tensor) -> Tensor:
            class_sum = keys.new_zeros(total, keys.shape[1]).index_add_(0, cls2, keys)
            return class_sum[mine] - anchors

        return by_class, count[mine] - 1.0
    with torch.no_grad():  # the local rows are a contiguous slice: a view, not a copy
        s = label_similarity(labels_all, similarity, c)[offset : offset + n].to(dtype)
    s_self = torch.diagonal(s, offset)  # [n, N]: local sample i is column offset + i
    s_self2 = torch.cat([s_self, s_self])[:, None]

    def by_similarity(keys: Tensor, anchors: Tensor) -> Tensor:
        half = s @ (keys[:total] + keys[total:])
        return torch.cat([half, half]) - s_self2 * anchors

    mass = 2.0 * s.sum(dim=1) - s_self
    return by_similarity, torch.cat([mass, mass])


@float32_compute
def supervised_terms(
    z1: Tensor,
    z2: Tensor,
    labels: Tensor,
    temperature: float,
    similarity: LabelSimilarity = "indicator",
    c: float = 1.0,
    block_size: int | None = None,
    gather_distributed: bool = False,
    backend: str = DEFAULT_BACKEND,
) -> tuple[Tensor, Tensor, Tensor]:
    """The sufficient statistics of LASCon-out (and SupCon) for the 2N views, fused.

    Returns, per local anchor ``i`` of ``cat(z1, z2)``: ``lse_i = log Σ_{j∈A(i)}
    exp(z_i·z_j/τ)`` (from :func:`gram_logsumexp`, never a ``[2N, 2N]`` tensor through
    autograd), ``weighted_sim_i = Σ_{j∈A(i)} s̃_ij z_i·z_j`` and whether the anchor has any
    target mass. With ``gather_distributed`` the keys and labels are every rank's.
    ``backend`` computes ``lse`` (:func:`gram_logsumexp`); the label-weighted sums are
    O(N·d) (indicator) or one ``[N, N]`` label-similarity product, plain torch.
    """
    z1, z2 = check_views(z1, z2, min_rows=1)
    labels = check_labels(labels, z1.shape[0])
    dtype = compute_dtype(z1, z2)
    n, keys, labels_all, offset = z1.shape[0], None, labels, 0
    x = in_dtype(torch.cat([z1, z2]), dtype)  # both views at once
    anchors = normalize(x)
    if gather_distributed and distributed.is_distributed():
        keys = _gathered_views(anchors, n)
        labels_all, offset = distributed.gather(labels), n * distributed.rank()
    exclude = self_exclude(n, labels_all.shape[0], offset, anchors.device)
    source = _bf16_source(x, None, (z1, z2), keys is None)
    args = (exclude, block_size, backend, True, source)
    lse = gram_logsumexp(anchors, 1.0 / temperature, keys, None, *args)
    weigh, mass = label_weights(labels_all, n, offset, similarity, c, dtype, anchors.device)
    weighted = weigh(anchors if keys is None else keys, anchors)
    has_target = mass > 0
    weighted_sim = (anchors * weighted).sum(dim=1) / mass.clamp(min=torch.finfo(dtype).tiny)
    return lse, weighted_sim, has_target


@float32_compute
def fused_supervised_terms(
    z1: Tensor,
    z2: Tensor,
    labels: Tensor,
    temperature: float,
    similarity: LabelSimilarity = "indicator",
    c: float = 1.0,
) -> Tensor:
    """LASCon-out's (SupCon's, with the indicator) per-anchor loss ``[2N]`` in one fused
    ``autograd.Function`` (:func:`.functional._pair_terms.supervised_pair_terms`): the same
    values as ``lascon_out_terms(*supervised_terms(...), temperature)`` to float32 rounding.
    It takes the ``[N, N]`` label similarities whatever the similarity (the general path's
    per-class sums keep SupCon's memory O(N·d); this path holds ``[2N, 2N]`` matrices
    anyway, and one product with them launches less than the sums' scatter and gathers).
    For calls :func:`.views.fused_pair_terms` accepts."""
    z1, z2 = check_views(z1, z2, min_rows=1)
    labels = check_labels(labels, z1.shape[0])
    dtype, n = compute_dtype(z1, z2), z1.shape[0]
    with torch.no_grad():
        targets = label_similarity(labels, similarity, c).to(dtype)
    exclude = self_exclude(n, n, 0, z1.device)
    z1, z2 = in_dtype(z1, dtype), in_dtype(z2, dtype)
    return supervised_pair_terms(z1, z2, temperature, exclude, targets)


@float32_compute
def two_view_similarity(z1: Tensor, z2: Tensor) -> Tensor:
    """``[2N, 2N]`` cosine similarities of ``cat(z1, z2)``, the SupCon/LASCon layout."""
    z1, z2 = check_views(z1, z2, min_rows=1)
    dtype = compute_dtype(z1, z2)
    z = normalize(in_dtype(torch.cat([z1, z2]), dtype))
    return z @ z.T
