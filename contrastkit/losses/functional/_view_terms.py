"""Losses over V views ``[V, N, d]``, each in one ``autograd.Function``: CACR's per-anchor
attraction and repulsion (:class:`_ViewTerms`) and CMC's InfoNCE over every ordered pair of
views (:class:`_PairwiseTerms`). The torch backend's path for
:class:`contrastkit.losses.CACR` (conditional negative weights, the Euclidean cost) and
:class:`contrastkit.losses.CMC`, with no queue, no ``block_size`` and nothing gathered
(issue #38; the same reasons as :mod:`._pair_terms`).

CACR (:class:`_ViewTerms`; CMC's terms are described on :class:`_PairwiseTerms`). Layout
(that of :func:`contrastkit.losses.views.multiview_negatives`): row ``m = a·N + n``
is view ``a`` of sample ``n``, ``u`` the unit rows ``[M, d]`` (``M = V·N``), ``s = u·uᵀ``.
Anchor ``m``'s positives are sample ``n``'s ``K = V - 1`` other views, its negatives the
``V·(N - 1)`` views of the other samples. With ``c = 2 - 2s`` (CACR §3.1) and
``a = 2·t⁻``:

* attraction ``A_m = Σ_k π⁺_mk·c_mk``, ``π⁺ = softmax_k(t⁺·c)`` (Eq. 3);
* repulsion ``R_m = 2·E_m - 2`` with ``E_m = Σ_j π⁻_mj·s_mj``, ``π⁻ = softmax_j(a·s)``
  over the negatives (Eq. 4 in similarities, as :func:`.cacr.cacr_cosine`).

CACR's loss is ``mean_m A_m + mean_m R_m``.

Numerics. The one matrix product gives the shifted logits ``L = a·(s - 1) <= 0`` (the
shift as its bias), so no exponential overflows, and for ``2a < log(eps/tiny)`` (every
``t⁻ < 17`` in float32) no row sum underflows; callers check that with
:func:`._gram_torch.needs_guard`. The repulsion is formed as ``R = (2/a)·L̄`` with
``L̄_m = Σ_j π⁻_mj·L_mj = a·(E_m - 1)``, and the costs as ``c = -(2/a)·L``: neither
subtracts two numbers near 1.

Backward in closed form. ``∂E_m/∂s_mj = π⁻_mj·(1 + L_mj - L̄_m)`` (``π⁻_mj`` alone when
π⁻ is detached) and ``∂A_m/∂s_mk = -2·π⁺_mk·(1 + t⁺·(c_mk - A_m))`` (``-2·π⁺_mk``
detached). Forward keeps ``Γ = e∘(1 + L - L̄)`` (``e`` the exponentials, 0 off the
negatives), so with ``r = 2·g_R/Σ_j e`` the repulsion's gradient is
``diag(r)·Γ·u + Γᵀ·diag(r)·u``, two products; the attraction's is a ``[V, V]`` product per
sample. Then the normalisation's backward. Double backward: exact, by differentiating a
recomputation (:func:`_recomputed`), as in :mod:`._pair_terms`.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from ._gram_grad import differentiating_backward
from ._pair_terms import _recomputed_grads
from ._precision import no_autocast
from ._unit_rows import unit_and_norm, unit_grad, unit_rows
from .infonce import terms_of_gap


class _ViewTerms(torch.autograd.Function):
    """``(A [V·N], R [V·N])`` from ``views [V, N, d]`` (see the module docstring) for t⁺
    ``t_pos``, ``a = 2·t⁻`` ``scale`` and the two detach flags."""

    @staticmethod
    def forward(  # type: ignore[override]
        ctx, views: Tensor, t_pos: float, scale: float, detach_pos: bool, detach_neg: bool
    ) -> tuple[Tensor, Tensor]:
        v, n, d = views.shape
        u, norm = unit_and_norm(views.reshape(v * n, d))
        logits = torch.addmm(u.new_full((), -scale), u, u.T, alpha=scale)  # L = a·(s - 1)
        cost = torch.diagonal(logits.view(v, n, v, n), 0, 1, 3).mul(-2.0 / scale)  # [V, V, N]
        sharp = cost.mul(t_pos)
        sharp.diagonal(0, 0, 1).fill_(-math.inf)  # a view is not its own positive
        pos_w = torch.softmax(sharp, dim=1)
        attraction = torch.linalg.vecdot(pos_w, cost, dim=1)  # [V, N]
        e = logits.exp()
        torch.diagonal(e.view(v, n, v, n), 0, 1, 3).zero_()  # only the negatives count
        row_sum = e.sum(dim=1)
        # L̄ = a·(E - 1); row dot products as a batched product, with no [M, M] temporary
        mean_logit = torch.bmm(e[:, None], logits[:, :, None]).view(-1).div_(row_sum)
        repulsion = mean_logit.mul(2.0 / scale)
        coef = e if detach_neg else logits.sub_((mean_logit - 1.0)[:, None]).mul_(e)  # Γ
        ctx.save_for_backward(views, u, norm, coef, row_sum, pos_w, cost, attraction)
        ctx.setting = (t_pos, scale, detach_pos, detach_neg)
        ctx.set_materialize_grads(False)
        return attraction.reshape(v * n), repulsion

    @staticmethod
    def backward(ctx, grad_a: Tensor | None, grad_r: Tensor | None) -> tuple:  # type: ignore[override]
        views, u, norm, coef, row_sum, pos_w, cost, attraction = ctx.saved_tensors
        setting = ctx.setting
        t_pos, detach_pos = setting[0], setting[2]
        nothing = (None,) * 4
        if differentiating_backward():
            upstream = (grad_a, grad_r)
            return *_recomputed_grads(ctx, (views,), upstream, _recomputed, *setting), *nothing
        v, n, d = views.shape
        grad_u = None
        with no_autocast(u.device.type):  # a backward inside autocast keeps float32 products
            if grad_r is not None:
                r = (grad_r * 2.0 / row_sum)[:, None]
                grad_u = torch.addmm(r * (coef @ u), coef.T, r * u)
            if grad_a is not None:
                pull = pos_w  # ∂A/∂c, then ∂L/∂s of the positives
                if not detach_pos:
                    pull = (cost - attraction[:, None]).mul_(t_pos).add_(1.0).mul_(pos_w)
                pull = pull * (-2.0 * grad_a.view(v, 1, n))
                pull = (pull + pull.transpose(0, 1))[..., None]  # [V, V, N, 1], symmetric
                near = (pull * u.view(1, v, n, d)).sum(dim=1).view(v * n, d)
                grad_u = near if grad_u is None else grad_u.add_(near)
        if grad_u is None:
            return None, *nothing
        return unit_grad(grad_u, u, norm).view(v, n, d), *nothing


def _recomputed(
    views: Tensor, t_pos: float, scale: float, detach_pos: bool, detach_neg: bool
) -> tuple[Tensor, Tensor]:
    """:class:`_ViewTerms` by plain differentiable operations (the double-backward path)."""
    v, n, d = views.shape
    u = unit_rows(views.reshape(v * n, d))
    sim = u @ u.T
    cost = 2.0 - 2.0 * torch.diagonal(sim.view(v, n, v, n), 0, 1, 3)  # [V, V, N]
    own = torch.eye(v, dtype=torch.bool, device=views.device)[:, :, None]
    pos_w = torch.softmax((t_pos * cost).masked_fill(own, -math.inf), dim=1)
    attraction = ((pos_w.detach() if detach_pos else pos_w) * cost).sum(dim=1)
    sample = torch.arange(n, device=views.device).repeat(v)
    same = sample[:, None] == sample[None, :]
    neg_w = torch.softmax((scale * sim).masked_fill(same, -math.inf), dim=1)
    repulsion = 2.0 * ((neg_w.detach() if detach_neg else neg_w) * sim).sum(dim=1) - 2.0
    return attraction.reshape(v * n), repulsion


class _PairwiseTerms(torch.autograd.Function):
    """CMC's full-graph terms (Tian et al., ECCV 2020, Eq. 8): ``-log P [2P, N]`` of InfoNCE
    for every ordered pair of views, from ``views [V, N, d]`` and the ``P`` unordered pairs
    ``pairs [2, P]`` (``a < b``). Row ``k < P`` is pair ``k`` with queries from view ``a``
    and keys from view ``b``; row ``P + k`` the reverse. With ``u`` the unit rows, one
    batched product per unordered pair, ``G_k = u_a·u_bᵀ`` ``[N, N]`` (σ-scaled and shifted
    by ``σ``, as :class:`._pair_terms._PairTerms`), serves both directions: its rows for
    ``a → b``, its columns for ``b → a``; the positives are its diagonal and the negatives
    the rest of the row or column. The terms come from the gap ``l - p`` (softplus).

    Backward in closed form: with ``δ = g·W`` per direction and ``r = σ·δ/Σ e`` (``e`` the
    exponentials, 0 on the diagonal), the coefficients of ``G_k`` are
    ``e_ij·(r^ab_i + r^ba_j)``, and ``-σ·(δ^ab_i + δ^ba_i)`` on the diagonal; then
    ``∂u_a += C·u_b``, ``∂u_b += Cᵀ·u_a`` (two batched products) and the normalisation's
    backward. Double backward: by differentiating a recomputation, as :mod:`._pair_terms`."""

    @staticmethod
    def forward(  # type: ignore[override]
        ctx, views: Tensor, temperature: float, pairs: Tensor
    ) -> Tensor:
        v, n, d = views.shape
        scale = 1.0 / temperature
        u, norm = unit_and_norm(views.reshape(v * n, d))
        u3 = u.view(v, n, d)
        first, second = u3[pairs[0]], u3[pairs[1]]  # [P, N, d]
        e = torch.baddbmm(u.new_full((), -scale), first, second.transpose(1, 2), alpha=scale)
        p = torch.diagonal(e, 0, 1, 2).clone()  # σ·(s - 1) of the positives, [P, N]
        e = e.exp_()
        torch.diagonal(e, 0, 1, 2).zero_()
        sums = torch.cat([e.sum(dim=2), e.sum(dim=1)])  # [2P, N]: a → b, then b → a
        nll, log_w = terms_of_gap(sums.log() - p.repeat(2, 1))
        ctx.save_for_backward(views, pairs, u, norm, first, second, e, sums, log_w)
        ctx.scale = scale
        return nll

    @staticmethod
    def backward(ctx, grad: Tensor) -> tuple:  # type: ignore[override]
        views, pairs, u, norm, first, second, e, sums, log_w = ctx.saved_tensors
        scale = ctx.scale
        if differentiating_backward():
            grads = _recomputed_grads(ctx, (views,), (grad,), _pairwise_recomputed, scale, pairs)
            return *grads, None, None
        v, n, d = views.shape
        count = pairs.shape[1]
        delta = log_w.exp().mul_(grad).mul_(scale)  # σ·δ, [2P, N]
        r = delta / sums
        with no_autocast(u.device.type):  # a backward inside autocast keeps float32 products
            coef = e * (r[:count, :, None] + r[count:, None, :])
            torch.diagonal(coef, 0, 1, 2).copy_(-(delta[:count] + delta[count:]))
            grad_u = u.new_zeros(v, n, d).index_add_(0, pairs[0], torch.bmm(coef, second))
            grad_u.index_add_(0, pairs[1], torch.bmm(coef.transpose(1, 2), first))
        return unit_grad(grad_u.view(v * n, d), u, norm).view(v, n, d), None, None


def _pairwise_recomputed(views: Tensor, scale: float, pairs: Tensor) -> Tensor:
    """:class:`_PairwiseTerms` by plain differentiable operations."""
    v, n, d = views.shape
    u = unit_rows(views.reshape(v * n, d)).view(v, n, d)
    logits = scale * torch.bmm(u[pairs[0]], u[pairs[1]].transpose(1, 2))
    own = torch.eye(n, dtype=torch.bool, device=views.device)
    p = torch.diagonal(logits, 0, 1, 2)
    masked = logits.masked_fill(own, -math.inf)
    lse = torch.cat([masked.logsumexp(dim=2), masked.logsumexp(dim=1)])
    return terms_of_gap(lse - p.repeat(2, 1))[0]


def pairwise_terms(views: Tensor, temperature: float, pairs: Tensor) -> Tensor:
    """CMC's ``-log P`` ``[2P, N]`` over every ordered pair of ``views [V, N, d]`` (one
    dtype, no autocast; normalised inside): rows ``k`` and ``P + k`` are the two directions
    of the unordered pair ``pairs[:, k]`` (``pairs [2, P]``, ``a < b``). Valid only where no
    row sum can underflow (``needs_guard(1/temperature, True, dtype)`` is false)."""
    return _PairwiseTerms.apply(views, temperature, pairs)


def view_terms(
    views: Tensor,
    t_pos: float,
    t_neg: float,
    detach_pos_weights: bool = False,
    detach_neg_weights: bool = False,
) -> tuple[Tensor, Tensor]:
    """CACR's per-anchor attraction and repulsion ``[V·N]`` over the V-view layout of
    ``views [V, N, d]`` (one dtype, no autocast: the caller applies the precision rule;
    normalised inside), with t⁺ ``t_pos >= 0`` (0: uniform π⁺, CACR Table 8's w/o π⁺) and
    t⁻ ``t_neg > 0``. Valid only where no row sum can underflow
    (``needs_guard(2·t_neg, True, dtype)`` is false)."""
    return _ViewTerms.apply(views, t_pos, 2.0 * t_neg, detach_pos_weights, detach_neg_weights)
