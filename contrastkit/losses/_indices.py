"""The constant tensors of the view layouts (:mod:`.views`: indices, ones), built once per shape.

Each builder depends only on sizes and a device, so its tensor is kept and handed back at
the next call of the same shape instead of being rebuilt (a few operators and their
host time at every loss call). :func:`shape_cache` is the memo: a plain dict in eager mode
(at most :data:`MAX_ENTRIES` shapes per builder, the oldest dropped first); under
``torch.compile`` it calls the builder, which dynamo traces into the graph (dynamo warns
about ``functools.lru_cache`` and ignores it).

Example:
    >>> import torch
    >>> pair_exclude(2, 2, 0, torch.device("cpu")).tolist()
    [[0, 2], [1, 3], [2, 0], [3, 1]]
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

import torch
from torch import Tensor

MAX_ENTRIES = 32

_Builder = TypeVar("_Builder", bound=Callable[..., Any])


def shape_cache(build: _Builder) -> _Builder:
    """Memoise ``build`` on its (hashable) positional arguments, outside ``torch.compile``.

    The tensors are built outside inference mode, so a first call under
    ``torch.inference_mode()`` does not hand later autograd calls an inference tensor.
    ``cache_clear()`` empties the memo."""
    cache: dict[tuple[Any, ...], Any] = {}

    @functools.wraps(build)
    def cached(*key: Any) -> Any:
        if torch.compiler.is_compiling():
            return build(*key)
        hit = cache.get(key)
        if hit is None:
            if len(cache) >= MAX_ENTRIES:
                del cache[next(iter(cache))]
            with torch.inference_mode(False):
                hit = cache[key] = build(*key)
        return hit

    cached.cache_clear = cache.clear  # type: ignore[attr-defined]
    return cached  # type: ignore[return-value]


@shape_cache
def pair_mask(n: int, device: torch.device) -> Tensor:
    """``[2N, 2N]`` bool: True at each view's own index and at its positive's index."""
    idx = torch.arange(2 * n, device=device)
    mask = torch.zeros(2 * n, 2 * n, dtype=torch.bool, device=device)
    mask[idx, idx] = True
    mask[idx, (idx + n) % (2 * n)] = True
    return mask


@shape_cache
def pair_exclude(n: int, total: int, offset: int, device: torch.device) -> Tensor:
    """``[2n, 2]`` global columns of each local anchor's self and positive in the 2N layout
    of ``total`` samples, this process's samples starting at ``offset``."""
    local = torch.arange(n, device=device) + offset
    first = torch.stack([local, local + total], dim=1)  # z1 rows: self, positive in z2
    return torch.cat([first, first.flip(1)])


@shape_cache
def self_exclude(n: int, total: int, offset: int, device: torch.device) -> Tensor:
    """``[2n, 1]``: the first column of :func:`pair_exclude` (each anchor's own index)."""
    return pair_exclude(n, total, offset, device)[:, :1]


@shape_cache
def query_exclude(n: int, offset: int, device: torch.device) -> Tensor:
    """``[n, 1]``: the global column ``offset + i`` of each local query's own key."""
    return (torch.arange(n, device=device) + offset)[:, None]


@shape_cache
def ones(n: int, dtype: torch.dtype, device: torch.device) -> Tensor:
    """``[n]`` ones (a constant operand, e.g. the counts of an ``index_add_``)."""
    return torch.ones(n, dtype=dtype, device=device)


@shape_cache
def other_views(v: int, device: torch.device) -> Tensor:
    """``[V, V-1]``: row ``a`` lists the views other than ``a``, in order."""
    views = torch.arange(v, device=device)
    return torch.stack([views[views != a] for a in range(v)])


@shape_cache
def view_rows(v: int, device: torch.device) -> Tensor:
    """``[V, 1]``: the view indices as a column (paired with :func:`other_views`)."""
    return torch.arange(v, device=device)[:, None]


@shape_cache
def view_pairs(v: int, device: torch.device) -> Tensor:
    """``[2, V(V-1)/2]``: the unordered pairs of views ``(a, b)``, ``a < b``."""
    return torch.triu_indices(v, v, 1, device=device)


@shape_cache
def multiview_index(v: int, n: int, device: torch.device) -> tuple[Tensor, Tensor]:
    """Column indices into the flattened ``[V·N]`` views: positives ``[V·N, V-1]`` and
    negatives ``[V·N, V·(N-1)]`` of every row ``(view a, sample i)``."""
    row_view = torch.arange(v, device=device).repeat_interleave(n)
    row_sample = torch.arange(n, device=device).repeat(v)
    pos_idx = other_views(v, device)[row_view] * n + row_sample[:, None]
    cols = torch.arange(v * n, device=device)
    neg_keep = (cols[None] % n) != row_sample[:, None]
    neg_idx = cols.expand(v * n, -1)[neg_keep].view(v * n, v * (n - 1))
    return pos_idx, neg_idx


@shape_cache
def multiview_exclude(v: int, n: int, total: int, offset: int, device: torch.device) -> Tensor:
    """``[V·n, V]`` global columns of each local row's own sample in all V views."""
    local = torch.arange(n, device=device) + offset
    cols = torch.arange(v, device=device)[None, :] * total + local[:, None]  # [n, V]
    return cols.repeat(v, 1)
