"""View construction: turn raw embeddings into the (pos, neg) or cost inputs of the core.

Kept apart from the formulas in :mod:`contrastkit.losses.functional`: the same formula
serves SimCLR's 2N layout, MoCo's queue, SimCSE's cross-view pairs and V-view batches
(the supervised 2N layouts with labels are in :mod:`.supervised_views`). Negatives that
must not count (an anchor with itself, with its own positive) are masked in place with
``-inf`` on the similarity matrix, never gathered into a copy.

Every builder follows the precision rule of :mod:`.functional._common`: it runs with
autocast off and returns similarities in the compute dtype of the embeddings (float32 for
half-precision ones); a ``queue`` keeps its own dtype and is cast to that dtype here.
"""

from __future__ import annotations

import torch
from torch import Tensor

from .. import distributed
from ._indices import (
    multiview_exclude,
    multiview_index,
    other_views,
    pair_exclude,
    pair_mask,
    query_exclude,
    view_pairs,
    view_rows,
)
from .functional._backend import DEFAULT_BACKEND, resolve
from .functional._common import (
    check_tensor,
    check_views,
    compute_dtype,
    float32_compute,
)
from .functional._gram_torch import needs_guard
from .functional._negatives import GramNegatives
from .functional._pair_terms import Temperature, cross_terms, dual_pair_terms, pair_terms
from .functional._precision import holds_bf16_values, in_dtype
from .functional._scaled_terms import scaled_terms
from .functional._unit_rows import unit_rows
from .functional._view_terms import pairwise_terms, view_terms


def normalize(z: Tensor) -> Tensor:
    """L2-normalise rows; zero rows stay zero, with a zero gradient (:func:`unit_rows`)."""
    return unit_rows(z)


def _check_queue(queue: Tensor | None, dim: int, dtype: torch.dtype) -> Tensor | None:
    """The ``[Q, d]`` queue normalised in ``dtype`` (the compute dtype of the embeddings)."""
    return None if queue is None else normalize(_queue_in(queue, dim, dtype))


def _queue_in(queue: object, dim: int, dtype: torch.dtype) -> Tensor:
    """The ``[Q, d]`` queue, checked, in ``dtype``."""
    queue = check_tensor(queue, "queue", 2, "[Q, d]")
    if queue.shape[1] != dim:
        raise ValueError(f"queue must have shape [Q, d] with d = {dim}, got {tuple(queue.shape)}")
    return in_dtype(queue, dtype)


@float32_compute
def ntxent_similarities(
    z1: Tensor, z2: Tensor, queue: Tensor | None = None
) -> tuple[Tensor, Tensor]:
    """SimCLR's 2N layout (Chen et al., 2020): ``pos [2N]``, ``neg [2N, 2N (+ Q)]``.

    Anchor ``i`` is row ``i`` of ``cat(z1, z2)``; its positive is the same sample's other
    view; its negatives are the other ``2N - 2`` views (self and positive masked with
    ``-inf``) plus every row of the optional ``queue`` ``[Q, d]``.
    """
    z1, z2 = check_views(z1, z2)
    n, dtype = z1.shape[0], compute_dtype(z1, z2)
    queue = _check_queue(queue, z1.shape[1], dtype)
    z = normalize(in_dtype(torch.cat([z1, z2]), dtype))  # both views at once
    neg = (z @ z.T).masked_fill_(pair_mask(n, z.device), float("-inf"))
    if queue is not None:
        neg = torch.cat([neg, z @ queue.T], dim=1)
    return _pair_products(z, n), neg


@float32_compute
def ntxent_negatives(
    z1: Tensor,
    z2: Tensor,
    queue: Tensor | None = None,
    block_size: int | None = None,
    gather_distributed: bool = False,
    backend: str = DEFAULT_BACKEND,
) -> tuple[Tensor, GramNegatives]:
    """The layout of :func:`ntxent_similarities` without materialising ``neg``.

    Returns ``pos [2N]`` and a :class:`GramNegatives` whose row log-sum-exps come from one
    fused matrix product (``block_size`` rows at a time if given); the InfoNCE-family
    functions accept it in place of ``neg``. The ``queue`` is a constant (no gradient),
    as MoCo's memory is. With ``gather_distributed`` the keys are every rank's views
    (:mod:`contrastkit.distributed`) and the anchors this rank's. Half-precision inputs
    are computed in float32. ``backend`` computes the fused statistics
    (:class:`GramNegatives`: ``"torch"``, ``"triton"`` or ``"auto"``).
    """
    z1, z2 = check_views(z1, z2)
    dtype = compute_dtype(z1, z2)
    queue = _check_queue(queue, z1.shape[1], dtype)
    n = z1.shape[0]
    x = in_dtype(torch.cat([z1, z2]), dtype)  # both views at once
    anchors, keys = normalize(x), None
    pos = _pair_products(anchors, n)
    total, offset = n, 0
    if gather_distributed and distributed.is_distributed():
        keys = _gathered_views(anchors, n)
        total, offset = n * distributed.world_size(), n * distributed.rank()
    exclude = pair_exclude(n, total, offset, anchors.device)
    unit = queue is None  # the queue's rows are the caller's, of any norm
    source = _bf16_source(x, None, (z1, z2), queue is None and keys is None)
    return pos, GramNegatives(anchors, keys, queue, exclude, block_size, backend, unit, source)


def fused_pair_terms(
    z1: Tensor,
    temperature: float,
    block_size: int | None,
    gather_distributed: bool,
    backend: str,
    views: int = 2,
) -> bool:
    """Whether a fused Function from the views computes a call (the ``*_terms`` and
    :func:`ntxent_statistics` builders here and in :mod:`.supervised_views`): the torch
    backend for its ``views·N`` anchor rows, no ``block_size``, nothing gathered across
    ranks, two-dimensional views, and no row sum that could underflow at ``temperature``
    (:func:`._gram_torch.needs_guard`; every ``τ > 0.028`` in float32)."""
    if block_size is not None or (gather_distributed and distributed.is_distributed()):
        return False
    if z1.dim() != 2 or resolve(backend, z1, rows=views * z1.shape[0]) != "torch":
        return False
    return not needs_guard(1.0 / temperature, True, compute_dtype(z1))


@float32_compute
def ntxent_terms(
    z1: Tensor, z2: Tensor, temperature: Temperature
) -> tuple[Tensor, Tensor, Tensor | None, Tensor | None]:
    """``(-log P, log W)`` ``[2N]`` of the layout of :func:`ntxent_negatives` (no queue)
    in one fused ``autograd.Function`` (:mod:`.functional._pair_terms`): the same values
    as ``info_nce_terms(*ntxent_negatives(z1, z2), temperature)`` to float32 rounding, in
    a third less host time per call; then τ and the alignment A where ``temperature`` is a
    callable ``A -> τ`` (MACL), else ``None, None``. For calls :func:`fused_pair_terms`
    accepts (at the lowest τ the callable can return)."""
    z1, z2 = check_views(z1, z2)
    dtype, n = compute_dtype(z1, z2), z1.shape[0]
    exclude = pair_exclude(n, n, 0, z1.device)
    return pair_terms(in_dtype(z1, dtype), in_dtype(z2, dtype), temperature, exclude)


def dual_ntxent_terms(
    z1: Tensor, z2: Tensor, temperature: float, inter_temperature: float
) -> tuple[Tensor, Tensor, Tensor]:
    """``(-log P, log W)`` ``[2N]`` at ``temperature`` as :func:`ntxent_terms`, and ``log W``
    at ``inter_temperature`` without gradient, from one fused ``autograd.Function`` and one
    matrix product (:func:`.functional._pair_terms.dual_pair_terms`): the dual-temperature
    loss's terms. For calls :func:`fused_pair_terms` accepts at the lower temperature."""
    z1, z2 = check_views(z1, z2)
    dtype, n = compute_dtype(z1, z2), z1.shape[0]
    exclude = pair_exclude(n, n, 0, z1.device)
    z1, z2 = in_dtype(z1, dtype), in_dtype(z2, dtype)
    return dual_pair_terms(z1, z2, temperature, inter_temperature, exclude)


def ntxent_statistics(
    z1: Tensor, z2: Tensor, scales: tuple[float, ...]
) -> tuple[Tensor, tuple[Tensor, ...]]:
    """Each anchor's cosine with its positive ``[2N]`` and its negatives' log-sum-exps at
    ``scales`` (one ``[2N]`` each) over the layout of :func:`ntxent_negatives` (no queue) in one
    fused ``autograd.Function`` (:mod:`.functional._scaled_terms`): the ``pos`` and the
    ``neg.logsumexp(c)`` of ``ntxent_negatives(z1, z2)`` to float32 rounding. For calls
    :func:`fused_pair_terms` accepts at ``τ = 1/max(scales)``."""
    z1, z2 = check_views(z1, z2)
    dtype, n = compute_dtype(z1, z2), z1.shape[0]
    exclude = pair_exclude(n, n, 0, z1.device)
    return scaled_terms(in_dtype(z1, dtype), in_dtype(z2, dtype), scales, exclude)


@float32_compute
def cross_view_terms(
    query: Tensor, key: Tensor, queue: Tensor | None, temperature: float
) -> tuple[Tensor, Tensor]:
    """``(-log P, log W)`` ``[N]`` of the layout of :func:`cross_view_negatives` (the
    other keys as the negatives, or a queue's rows, a constant: MoCo) in one fused
    ``autograd.Function`` (:func:`.functional._pair_terms.cross_terms`). For calls
    :func:`fused_pair_terms` accepts (with ``views=1``)."""
    min_rows = 1 if queue is not None else 2
    q, k = check_views(query, key, min_rows=min_rows, names=("query", "key"))
    dtype = compute_dtype(q, k)
    w = None if queue is None else _queue_in(queue, q.shape[1], dtype)
    return cross_terms(in_dtype(q, dtype), in_dtype(k, dtype), w, temperature)


def _bf16_source(
    x: Tensor, kx: Tensor | None, given: tuple[Tensor, ...], applies: bool
) -> tuple[Tensor, Tensor | None] | None:
    """``(x, kx)`` for :class:`GramNegatives`' ``source`` where the rows ``x`` (and keys
    ``kx``) are made of the ``given`` views, and those hold bfloat16 values
    (:func:`.functional._precision.holds_bf16_values`: half-precision embeddings the
    precision rule cast to float32), and the layout ``applies`` (no queue, nothing
    gathered across ranks); else ``None``."""
    if not applies or x.dtype is not torch.float32 or not holds_bf16_values(*given):
        return None
    return x, kx


def _gathered_views(anchors: Tensor, n: int) -> Tensor:
    """``cat(z1_all, z2_all)``: every rank's first views, then every rank's second views,
    from this rank's ``anchors = cat(z1, z2)`` (gathered with gradient)."""
    a, b = anchors[:n], anchors[n:]
    return torch.cat([distributed.gather_with_grad(a), distributed.gather_with_grad(b)])


def _pair_products(z: Tensor, n: int) -> Tensor:
    """``[2N]`` inner product of each row of ``z = cat(z1, z2)`` with its positive's,
    ``z_i·z_{(i+N) mod 2N}``: the rows times the rows rolled by ``N`` (the same values as
    ``(z1·z2).sum(1)`` twice; backward is two products and one roll, no slice copies)."""
    return (z * z.roll(n, 0)).sum(dim=1)


@float32_compute
def cross_view_negatives(
    query: Tensor,
    key: Tensor,
    queue: Tensor | None = None,
    block_size: int | None = None,
    gather_distributed: bool = False,
    backend: str = DEFAULT_BACKEND,
) -> tuple[Tensor, GramNegatives]:
    """The layout of :func:`cross_view_similarities` without materialising ``neg``.

    Without a queue the negatives of ``q_i`` are the other keys (every rank's, with
    ``gather_distributed``); with a queue they are the queue's rows, constant. ``backend``
    as for :func:`ntxent_negatives`.
    """
    q_in, k_in = check_views(
        query, key, min_rows=1 if queue is not None else 2, names=("query", "key")
    )
    dtype = compute_dtype(q_in, k_in)
    queue = _check_queue(queue, q_in.shape[1], dtype)
    x, kx = in_dtype(q_in, dtype), in_dtype(k_in, dtype)
    q, k = normalize(x), normalize(kx)
    pos = (q * k).sum(dim=1)
    if queue is not None:
        return pos, GramNegatives(q, queue.detach(), None, None, block_size, backend)
    offset, gathered = 0, gather_distributed and distributed.is_distributed()
    if gathered:
        k, offset = distributed.gather_with_grad(k), q.shape[0] * distributed.rank()
    exclude = query_exclude(q.shape[0], offset, q.device)
    source = _bf16_source(x, kx, (q_in, k_in), not gathered)
    return pos, GramNegatives(q, k, None, exclude, block_size, backend, True, source)


@float32_compute
def cross_view_queue_negatives(
    query: Tensor,
    key: Tensor,
    queue: Tensor,
    block_size: int | None = None,
    backend: str = DEFAULT_BACKEND,
) -> tuple[Tensor, GramNegatives]:
    """CMC's layout with a memory: the negatives of ``q_i`` are the other keys of the batch
    and then every row of the constant ``queue`` (the negatives of
    :func:`cross_view_negatives` without a queue, and the queue's rows after them), never
    materialised: :func:`cross_view_negatives`' negatives with the queue's rows as their
    constant ``extra``. ``backend`` as for :func:`ntxent_negatives`."""
    pos, batch = cross_view_negatives.__wrapped__(query, key, None, block_size, False, backend)
    q = batch.anchors
    memory = _check_queue(queue, q.shape[1], q.dtype).detach()
    return pos, GramNegatives(q, batch.keys, memory, batch.exclude, block_size, backend)


@float32_compute
def cross_view_similarities(
    query: Tensor, key: Tensor, queue: Tensor | None = None, gather_distributed: bool = False
) -> tuple[Tensor, Tensor]:
    """One-directional InfoNCE layout: ``pos [N]`` = ``q_i·k_i``, ``neg [N, ·]``.

    * ``queue is None`` (SimCSE, NNCLR, cross-view): the negatives of ``q_i`` are the other
      keys ``k_j, j ≠ i`` of the batch, ``neg [N, N]`` with the diagonal masked; with
      ``gather_distributed``, every rank's keys, ``neg [N, W·N]`` with this rank's own
      columns masked (:mod:`contrastkit.distributed`).
    * ``queue`` given (MoCo): the negatives are the queue's rows only, ``neg [N, Q]``;
      the caller detaches the keys and the queue.
    """
    q, k = check_views(query, key, min_rows=1 if queue is not None else 2, names=("query", "key"))
    dtype = compute_dtype(q, k)
    queue = _check_queue(queue, q.shape[1], dtype)
    q, k = normalize(in_dtype(q, dtype)), normalize(in_dtype(k, dtype))
    pos = (q * k).sum(dim=1)
    if queue is not None:
        return pos, q @ queue.T
    n = q.shape[0]
    if gather_distributed and distributed.is_distributed():
        own = torch.arange(n, device=q.device)
        neg = q @ distributed.gather_with_grad(k).T
        return pos, neg.index_put_(
            (own, own + n * distributed.rank()), neg.new_tensor(float("-inf"))
        )
    eye = torch.eye(n, dtype=torch.bool, device=q.device)
    return pos, (q @ k.T).masked_fill_(eye, float("-inf"))


def multiview_terms(
    views: Tensor,
    t_pos: float,
    t_neg: float,
    detach_pos_weights: bool = False,
    detach_neg_weights: bool = False,
) -> tuple[Tensor, Tensor]:
    """CACR's per-anchor attraction and repulsion ``[V·N]`` over the layout of
    :func:`multiview_negatives` (no queue) in one fused ``autograd.Function``
    (:mod:`.functional._view_terms`): their means are the ``L_CA`` and ``L_CR`` of
    ``cacr_cosine(*multiview_negatives(views), t_pos, t_neg, ...)`` to float32 rounding.
    For calls :func:`fused_pair_terms` accepts at ``τ = 1/(2·t_neg)``."""
    views = check_multiview(views)
    z = in_dtype(views, compute_dtype(views))
    return view_terms(z, t_pos, t_neg, detach_pos_weights, detach_neg_weights)


def multiview_pair_terms(views: Tensor, temperature: float) -> Tensor:
    """CMC's ``-log P`` ``[V(V-1), N]`` (InfoNCE of every ordered pair of views, the other
    samples of the key view as negatives) in one fused ``autograd.Function``
    (:func:`.functional._view_terms.pairwise_terms`); row order: the pairs ``a < b``, then
    their reverses. For calls :func:`fused_pair_terms` accepts."""
    views = check_multiview(views)
    z = in_dtype(views, compute_dtype(views))
    return pairwise_terms(z, temperature, view_pairs(z.shape[0], z.device))


def check_multiview(views: object) -> Tensor:
    v = check_tensor(views, "views", 3, "[V, N, d]")
    if v.shape[0] < 2 or v.shape[1] < 2:
        raise ValueError(
            f"views must have shape [V, N, d] with V >= 2 and N >= 2, got {tuple(v.shape)}"
        )
    return v


@float32_compute
def multiview_sq_distances(views: Tensor, queue: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """Squared Euclidean costs of CACR's V-view layout (CACR §3.2, Eq. 5 extended: its
    empirical π̂⁻ holds the M − 1 other queries, here every view of the other samples).

    Every row ``(view a, sample i)`` of the normalised ``[V, N, d]`` views is a query; its
    ``V - 1`` positives are sample ``i``'s other views and its negatives the ``V·(N-1)``
    views of the other samples, plus the optional ``queue``. Returns
    ``pos_cost [V·N, V-1]`` and ``neg_cost [V·N, V·(N-1) (+ Q)]``.
    """
    views = check_multiview(views)
    v, n, d = views.shape
    dtype = compute_dtype(views)
    queue = _check_queue(queue, d, dtype)
    z = normalize(in_dtype(views, dtype)).reshape(v * n, d)
    sq = (2.0 - 2.0 * (z @ z.T)).clamp(min=0.0)
    pos_idx, neg_idx = multiview_index(v, n, z.device)
    pos_cost, neg_cost = sq.gather(1, pos_idx), sq.gather(1, neg_idx)
    if queue is not None:
        neg_cost = torch.cat([neg_cost, (2.0 - 2.0 * (z @ queue.T)).clamp(min=0.0)], dim=1)
    return pos_cost, neg_cost


@float32_compute
def multiview_negatives(
    views: Tensor,
    queue: Tensor | None = None,
    block_size: int | None = None,
    gather_distributed: bool = False,
    backend: str = DEFAULT_BACKEND,
) -> tuple[Tensor, GramNegatives]:
    """The layout of :func:`multiview_sq_distances` in similarities, without a cost matrix.

    Returns ``pos_sim [V·N, V-1]`` (row ``a·N + i``: sample ``i``'s other views, in view
    order) and a :class:`GramNegatives` over the ``V·(N-1)`` views of the other samples
    (every rank's, with ``gather_distributed``) plus the constant ``queue``;
    :func:`~contrastkit.losses.functional.cacr_cosine` takes both. ``backend`` as for
    :func:`ntxent_negatives`.
    """
    views = check_multiview(views)
    v, n, d = views.shape
    dtype = compute_dtype(views)
    queue = _check_queue(queue, d, dtype)
    x = in_dtype(views, dtype)
    z = normalize(x)
    gram = torch.einsum("and,bnd->nab", z, z)  # [N, V, V] per-sample view similarities
    pos_sim = gram[:, view_rows(v, z.device), other_views(v, z.device)]  # [N, V, V-1]
    pos_sim = pos_sim.transpose(0, 1).reshape(v * n, v - 1)
    anchors, keys, total, offset = z.reshape(v * n, d), None, n, 0
    if gather_distributed and distributed.is_distributed():
        keys = torch.cat([distributed.gather_with_grad(view) for view in z])
        total, offset = n * distributed.world_size(), n * distributed.rank()
    exclude = multiview_exclude(v, n, total, offset, z.device)
    unit = queue is None
    source = _bf16_source(x.reshape(v * n, d), None, (views,), queue is None and keys is None)
    args = (exclude, block_size, backend, unit, source)
    return pos_sim, GramNegatives(anchors, keys, queue, *args)
