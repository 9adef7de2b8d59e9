"""Per-anchor losses from the raw views, each in one ``autograd.Function``: InfoNCE's terms
over SimCLR's 2N layout (:class:`_PairTerms`: NT-Xent, DCL, FlatNCE, MACL) and over
queries and keys (:class:`_CrossTerms`: InfoNCE's in-batch and MoCo's queue layouts), and
LASCon-out's over the 2N layout (:class:`_SupervisedTerms`: SupCon, LASCon). The torch
backend's path for those losses where it applies (issue #38).

For views ``z1, z2 [N, d]``: ``u = unit rows of cat(z1, z2)`` ``[2N, d]``, ``s = u·uᵀ``,
``σ = 1/τ``; anchor ``i``'s positive is row ``π(i) = (i + N) mod 2N`` and its negatives the
rows ``j ∉ {i, π(i)}``. With ``l_i = log Σ_{j ∉ {i, π(i)}} exp(σ·s_ij)`` and
``p_i = σ·s_iπ(i)``:

* ``-log P_i = log(1 + exp(l_i - p_i))`` (NT-Xent's per-anchor loss, MACL Eq. 1),
* ``log W_i = log(1 - P_i)`` (MACL Eq. 8),

the same pair as :func:`.infonce.info_nce_terms` on the layout of
:func:`contrastkit.losses.views.ntxent_negatives`; DCL's per-anchor loss is
``l_i - p_i = -log P_i + log W_i``.

Why one Function: from a few hundred to a few thousand pairs a loss call is bound by host
time, not arithmetic. The general path (normalisation, Gram log-sum-exp and terms, three
Functions over a :class:`~._negatives.Negatives`) took about twice the host time of the
ten-line NT-Xent most code uses (``benchmarks/call_overhead.py``); this path does the
whole computation in one node with fewer operators.

Numerics. Rows are unit vectors, so every logit is at most ``σ``: the logits are shifted by
that bound (``σ·(s_ij - 1)``, the bias of the one matrix product), never overflow, and for
``2σ < log(eps/tiny)`` (every ``τ > 0.028`` in float32) no row sum can underflow; callers
check that with :func:`._gram_torch.needs_guard` and take the general path otherwise.
Both terms are formed from the gap ``l - p`` of the shifted values (the shift cancels) as
``softplus`` and ``logsigmoid`` (:func:`.infonce.terms_of_gap`). Rows of norm
<= ``NORM_EPS`` are zero rows with a zero gradient, as :func:`._unit_rows.unit_rows` makes them.

Backward in closed form. With upstream gradients ``g`` (of ``-log P``) and ``h`` (of
``log W``): ``δ_i = g_i·W_i + h_i·P_i`` is the gradient of ``l_i`` and ``-δ_i`` that of
``p_i``. Let ``c_i = Σ_j e_ij`` over the negatives (``e`` the exponentials) and keep
``E``: ``e_ij`` at the negatives, ``-c_i`` at the positive ``j = π(i)``, 0 at ``j = i``.
With ``r = σ·δ / c``, ``r_i·E_ij`` is ``∂L/∂s_ij`` everywhere (``σ·δ_i·q_ij`` for a
negative, ``q`` its softmax; ``-σ·δ_i`` for the positive), so

``∂u = diag(r)·E·u + Eᵀ·diag(r)·u``, ``∂z = (∂u - u·(u·∂u)) / ‖z‖``:

two products and no separate term for the positives. Double backward: exact; a backward
run with grad mode on (``create_graph=True``) differentiates a recomputation from the
saved views with plain differentiable operations (:func:`_recomputed`), so autograd
records it.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import Tensor

from ._gram_grad import differentiating_backward
from ._precision import no_autocast
from ._unit_rows import unit_and_norm, unit_grad, unit_rows
from .infonce import terms_of_gap

Temperature = float | Callable[[Tensor], Tensor]  # τ, or the alignment A -> τ (MACL Eq. 7)


class _PairTerms(torch.autograd.Function):
    """``(-log P [2N], log W [2N], τ, A, log W')`` from ``z1, z2 [N, d]`` (see the module
    docstring); ``exclude [2N, 2]`` holds each anchor's own and positive column, in that
    order. A number ``temperature`` is τ (then ``τ`` and ``A`` come back ``None``); a
    callable maps the batch's alignment ``A = mean_i u_i·u_π(i)`` (0-d, no gradient) to a
    0-d τ, and both are returned (no gradient; MACL's adaptive temperature). ``also_at``
    (with a number τ): ``log W'`` is ``log W`` at that temperature τ', without gradient,
    from the same product (the dual-temperature loss's weights); else ``None``."""

    @staticmethod
    def forward(  # type: ignore[override]
        ctx,
        z1: Tensor,
        z2: Tensor,
        temperature: Temperature,
        exclude: Tensor,
        also_at: float | None = None,
    ) -> tuple[Tensor, Tensor, Tensor | None, Tensor | None, Tensor | None]:
        n = z1.shape[0]
        u, norm = unit_and_norm(torch.cat([z1, z2]))
        tau = alignment = None
        if callable(temperature):
            alignment = torch.dot(u[:n].reshape(-1), u[n:].reshape(-1)) / n  # one kernel
            tau = temperature(alignment)
            scale = tau.reciprocal()  # σ·(s - 1), a tensor σ on the [2N, d] rows
            logits = torch.addmm(scale.neg(), u * scale, u.T)
            ctx.mark_non_differentiable(tau, alignment)
        else:
            scale = 1.0 / temperature
            logits = torch.addmm(u.new_full((), -scale), u, u.T, alpha=scale)
        p = logits.gather(1, exclude[:, 1:]).squeeze(1)
        log_w_at = None
        if also_at is not None:  # σ'·(s - 1) = (σ'/σ)·logits: the same shift, no product
            ratio = 1.0 / (also_at * scale)
            e_at = (logits * ratio).exp_().scatter_(1, exclude, 0.0)
            log_w_at = terms_of_gap(e_at.sum(dim=1).log_() - p * ratio)[1]
            ctx.mark_non_differentiable(log_w_at)
        e = logits.exp_().scatter_(1, exclude, 0.0)
        row_sum = e.sum(dim=1)
        nll, log_w = terms_of_gap(row_sum.log() - p)
        coef = e.scatter_(1, exclude[:, 1:], row_sum.neg()[:, None])  # E of the docstring
        ctx.save_for_backward(z1, z2, exclude, u, norm, coef, row_sum, nll, log_w)
        ctx.scale = scale
        ctx.set_materialize_grads(False)
        return nll, log_w, tau, alignment, log_w_at

    @staticmethod
    def backward(ctx, grad_nll: Tensor | None, grad_log_w: Tensor | None, *_: None) -> tuple:  # type: ignore[override]
        z1, z2, exclude, u, norm, coef, row_sum, nll, log_w = ctx.saved_tensors
        scale, n = ctx.scale, z1.shape[0]
        if differentiating_backward():
            upstream = (grad_nll, grad_log_w)
            grads = _recomputed_grads(ctx, (z1, z2), upstream, _recomputed, scale, exclude)
            return *grads, None, None, None
        delta = _delta(grad_nll, grad_log_w, nll, log_w)
        if delta is None:
            return None, None, None, None, None
        r = (delta.mul_(scale) / row_sum)[:, None]
        with no_autocast(u.device.type):  # a backward inside autocast keeps float32 products
            grad_u = torch.addmm(r * (coef @ u), coef.T, r * u)
        return *_unit_backward(grad_u, u, norm, n), None, None, None


class _CrossTerms(torch.autograd.Function):
    """``(-log P [N], log W [N])`` of the query-key layouts from queries and keys
    ``[N, d]``: anchor ``i``'s positive is key ``i``, ``p_i = σ·u_i·v_i`` (``u, v`` the unit
    rows), and its negatives ``w`` are

    * the other keys ``v_j, j ≠ i`` without a queue (SimCSE's cross-view layout; they take
      gradients), or
    * the rows of a constant ``queue [Q, d]`` (MoCo's; normalised, no gradient),

    with ``l_i = log Σ_j exp(σ·u_i·w_j)``: the same terms as :class:`_PairTerms`.

    Backward, with ``δ`` as there, ``e`` the kept exponentials (0 at the excluded
    positive) and ``r = σ·δ/Σ_j e``: ``∂u = r∘(e·w) - σ·δ∘v`` and
    ``∂v = -σ·δ∘u (+ eᵀ·(r∘u) for in-batch keys)``, then the normalisations' backward.
    Double backward as :class:`_PairTerms`."""

    @staticmethod
    def forward(  # type: ignore[override]
        ctx, query: Tensor, key: Tensor, queue: Tensor | None, temperature: float
    ) -> tuple[Tensor, Tensor]:
        scale, n = 1.0 / temperature, query.shape[0]
        uv, norm = unit_and_norm(torch.cat([query, key]))  # both normalised at once
        u, v = uv[:n], uv[n:]
        w = v if queue is None else unit_and_norm(queue)[0]
        p = torch.linalg.vecdot(u, v).sub_(1.0).mul_(scale)  # σ·(s - 1), the shift of l
        e = torch.addmm(u.new_full((), -scale), u, w.T, alpha=scale).exp_()
        if queue is None:
            e.diagonal().zero_()  # a query's own key is its positive, not a negative
        row_sum = e.sum(dim=1)
        nll, log_w = terms_of_gap(row_sum.log() - p)
        ctx.save_for_backward(query, key, queue, uv, norm, w, e, row_sum, nll, log_w)
        ctx.scale = scale
        ctx.set_materialize_grads(False)
        return nll, log_w

    @staticmethod
    def backward(ctx, grad_nll: Tensor | None, grad_log_w: Tensor | None) -> tuple:  # type: ignore[override]
        query, key, queue, uv, norm, w, e, row_sum, nll, log_w = ctx.saved_tensors
        scale, n = ctx.scale, query.shape[0]
        u, v = uv[:n], uv[n:]
        if differentiating_backward():
            upstream = (grad_nll, grad_log_w)
            inputs = (query, key)
            grads = _recomputed_grads(ctx, inputs, upstream, _cross_recomputed, queue, scale)
            return *grads, None, None
        delta = _delta(grad_nll, grad_log_w, nll, log_w)
        if delta is None:
            return None, None, None, None
        delta = delta.mul_(scale)[:, None]
        r = delta / row_sum[:, None]
        with no_autocast(u.device.type):  # a backward inside autocast keeps float32 products
            grad_u = torch.mm(e, w).mul_(r).sub_(delta * v)
            if not ctx.needs_input_grad[1]:
                return unit_grad(grad_u, u, norm[:n]), None, None, None
            grad_v = (delta * u).neg_()
            if queue is None:
                grad_v = torch.addmm(grad_v, e.T, r * u)
        grad = unit_grad(torch.cat([grad_u, grad_v]), uv, norm)  # both rows' backward at once
        return grad[:n], grad[n:], None, None


def _delta(
    grad_nll: Tensor | None, grad_log_w: Tensor | None, nll: Tensor, log_w: Tensor
) -> Tensor | None:
    """``δ = g·W + h·P``, the gradient of ``l`` (and ``-δ`` that of ``p``) for upstream
    gradients ``g`` of ``-log P`` and ``h`` of ``log W`` (``None``: absent); a new tensor."""
    delta = None
    if grad_nll is not None:
        delta = grad_nll * log_w.exp()
    if grad_log_w is not None:
        prob = nll.neg().exp_()
        delta = grad_log_w * prob if delta is None else delta.addcmul_(grad_log_w, prob)
    return delta


def _cross_recomputed(
    query: Tensor, key: Tensor, queue: Tensor | None, scale: float
) -> tuple[Tensor, Tensor]:
    """:class:`_CrossTerms` by plain differentiable operations."""
    u, v = unit_rows(query), unit_rows(key)
    p = scale * (u * v).sum(dim=1)
    if queue is not None:
        return terms_of_gap((scale * (u @ unit_rows(queue).T)).logsumexp(dim=1) - p)
    own = torch.eye(u.shape[0], dtype=torch.bool, device=u.device)
    return terms_of_gap((scale * (u @ v.T)).masked_fill(own, -math.inf).logsumexp(dim=1) - p)


class _SupervisedTerms(torch.autograd.Function):
    """LASCon-out's (and SupCon's) per-anchor loss ``[2N]`` from ``z1, z2 [N, d]`` and the
    target similarities ``E [N, N]`` of the samples (LASCon Eq. 5/6; ``1[y_i = y_j]`` for
    SupCon): ``lse_i - σ·(Σ_{j≠i} S_ij·s_ij)/m_i``, 0 for an anchor with no target mass
    ``m_i = Σ_{j≠i} S_ij``, where ``lse_i = log Σ_{j≠i} exp(σ·s_ij)`` (LASCon Eq. 3's
    denominator over ``A(i)``) and ``S = [[E, E], [E, E]]`` over the 2N rows, its diagonal
    left out (an anchor is not its own target). ``S`` is never formed: sums over it fold
    the two views' columns, ``Σ_j S_ij·x_ij = Σ_j E_i'j·(x_ij + x_i,N+j) - E_i'i'·x_ii``
    with ``i' = i mod N``.

    In the shifted logits ``L = σ·(s - 1)`` of the one matrix product the target term is
    ``σ·Σ S s / m = σ + (Σ S L)/m``, so the loss is ``log Σ_j e_ij - (Σ_j S_ij·L_ij)/m_i``
    (``e = exp(L)``, 0 on the diagonal; the shift cancels).

    Backward: with ``r = σ·g / Σ_j e_ij`` and ``k = σ·g/m`` (both 0 without targets),
    ``∂L/∂s_ij = G_ij = r_i·e_ij - k_i·S_ij``, built in one ``[2N, 2N]`` matrix (``E``
    added to its four blocks through a broadcast view; what that adds on the diagonal,
    where ``S`` has nothing, reaches no gradient: ``s_ii = |u_i|²`` is constant under the
    normalisation), and ``∂u = G·u + Gᵀ·u``: two products; then the normalisation's
    backward. Double backward as :class:`_PairTerms`."""

    @staticmethod
    def forward(  # type: ignore[override]
        ctx, z1: Tensor, z2: Tensor, temperature: float, exclude: Tensor, targets: Tensor
    ) -> Tensor:
        n = z1.shape[0]
        u, norm = unit_and_norm(torch.cat([z1, z2]))
        scale = 1.0 / temperature
        logits = torch.addmm(u.new_full((), -scale), u, u.T, alpha=scale)  # σ·(s - 1)
        own = torch.diagonal(targets)  # E_i'i': S leaves it out of both views' rows
        mass = targets.sum(dim=1).mul_(2.0).sub_(own).repeat(2)
        folded = (logits[:, :n] + logits[:, n:]).view(2, n, n).mul_(targets).sum(dim=2)
        target_sum = folded.sub_(own * torch.diagonal(logits).view(2, n)).view(2 * n)
        e = logits.exp_().scatter_(1, exclude, 0.0)
        row_sum = e.sum(dim=1)
        has = mass > 0
        inv_mass = has / mass.clamp(min=torch.finfo(mass.dtype).tiny)  # 0 without targets
        per_anchor = row_sum.log().sub_(target_sum * inv_mass).mul_(has)
        ctx.save_for_backward(z1, z2, exclude, targets, u, norm, e, row_sum, inv_mass, has)
        ctx.scale = scale
        return per_anchor

    @staticmethod
    def backward(ctx, grad: Tensor) -> tuple:  # type: ignore[override]
        z1, z2, exclude, targets, u, norm, e, row_sum, inv_mass, has = ctx.saved_tensors
        scale, n = ctx.scale, z1.shape[0]
        if differentiating_backward():
            grads = _recomputed_grads(ctx, (z1, z2), (grad,), _supervised, scale, exclude, targets)
            return *grads, None, None, None
        r = torch.where(has, grad * scale / row_sum, 0.0)[:, None]
        k = (grad * inv_mass).mul_(-scale)  # -k of the docstring
        coef = e * r
        # E added to the four blocks, its diagonal too: S has none, but s_ii = |u_i|² is 1
        # for every row (0 for a zero row), so no diagonal entry reaches ∂z
        coef.view(2, n, 2, n).addcmul_(targets.reshape(1, n, 1, n), k.view(2, n, 1, 1))
        with no_autocast(u.device.type):  # a backward inside autocast keeps float32 products
            grad_u = torch.addmm(coef @ u, coef.T, u)
        return *_unit_backward(grad_u, u, norm, n), None, None, None


def _supervised(z1: Tensor, z2: Tensor, scale: float, exclude: Tensor, targets: Tensor) -> Tensor:
    """:class:`_SupervisedTerms` by plain differentiable operations (``S`` formed)."""
    u = unit_rows(torch.cat([z1, z2]))
    lse = (scale * (u @ u.T)).scatter(1, exclude, -math.inf).logsumexp(dim=1)
    s = targets.repeat(2, 2).scatter(1, exclude, 0.0)
    mass = s.sum(dim=1)
    weighted_sim = (u * (s @ u)).sum(dim=1) / mass.clamp(min=torch.finfo(mass.dtype).tiny)
    return torch.where(mass > 0, lse - scale * weighted_sim, 0.0)


def _unit_backward(grad_u: Tensor, u: Tensor, norm: Tensor, n: int) -> tuple[Tensor, Tensor]:
    """:func:`unit_grad` of ``cat(z1, z2)``, split into the two views."""
    grad_z = unit_grad(grad_u, u, norm)
    return grad_z[:n], grad_z[n:]


def _recomputed(
    z1: Tensor, z2: Tensor, scale: float | Tensor, exclude: Tensor
) -> tuple[Tensor, Tensor]:
    """The two terms by plain differentiable operations (the double-backward path)."""
    u = unit_rows(torch.cat([z1, z2]))
    logits = scale * (u @ u.T)
    p = logits.gather(1, exclude[:, 1:]).squeeze(1)
    return terms_of_gap(logits.scatter(1, exclude, -math.inf).logsumexp(dim=1) - p)


def _recomputed_grads(
    ctx: torch.autograd.function.FunctionCtx,
    inputs: tuple[Tensor, ...],
    upstream: tuple[Tensor | None, ...],
    recompute: Callable[..., Tensor | tuple[Tensor, ...]],
    *args: object,
) -> tuple[Tensor | None, ...]:
    """``∂/∂inputs`` (the Function's first ``len(inputs)`` arguments) of ``Σ_k g_k·t_k`` for
    the outputs ``t = recompute(*inputs, *args)`` (plain differentiable operations; one
    tensor or a tuple) and their upstream gradients ``g`` (``None``: unused), recorded by
    autograd."""
    needs = ctx.needs_input_grad[: len(inputs)]  # type: ignore[attr-defined]
    wanted = [z for z, need in zip(inputs, needs, strict=True) if need]
    outputs = recompute(*inputs, *args)
    outputs = (outputs,) if isinstance(outputs, Tensor) else outputs
    pairs = [(t, g) for t, g in zip(outputs, upstream, strict=True) if g is not None]
    if not wanted or not pairs:
        return (None,) * len(inputs)
    found_outputs, grads = zip(*pairs, strict=True)
    found = iter(torch.autograd.grad(found_outputs, wanted, grads, create_graph=True))
    return tuple(next(found) if need else None for need in needs)


def pair_terms(
    z1: Tensor, z2: Tensor, temperature: Temperature, exclude: Tensor
) -> tuple[Tensor, Tensor, Tensor | None, Tensor | None]:
    """``(-log P, log W)`` ``[2N]`` over the 2N layout of ``z1, z2`` ``[N, d]`` (one dtype;
    no autocast: the caller applies the precision rule), then ``τ`` and the alignment ``A``
    when ``temperature`` is a callable ``A -> τ`` (else ``None, None``);
    ``exclude [2N, 2]``: each anchor's own and positive column. Valid only where no row sum
    can underflow (see the module docstring)."""
    return _PairTerms.apply(z1, z2, temperature, exclude)[:4]


def dual_pair_terms(
    z1: Tensor, z2: Tensor, temperature: float, inter_temperature: float, exclude: Tensor
) -> tuple[Tensor, Tensor, Tensor]:
    """``(-log P, log W)`` ``[2N]`` at ``temperature``, as :func:`pair_terms`, and
    ``log W`` at ``inter_temperature`` without gradient, from the same matrix product (one
    more exponential of it instead of a second call). Valid only where no row sum can
    underflow at the lower of the two temperatures."""
    nll, log_w, _, _, log_w_inter = _PairTerms.apply(
        z1, z2, temperature, exclude, inter_temperature
    )
    return nll, log_w, log_w_inter


def supervised_pair_terms(
    z1: Tensor, z2: Tensor, temperature: float, exclude: Tensor, targets: Tensor
) -> Tensor:
    """LASCon-out's per-anchor loss ``[2N]`` over the 2N views ``z1, z2 [N, d]`` (one
    dtype, no autocast) with the target similarities ``targets [N, N]`` of the samples
    (constant, the views' dtype; :func:`contrastkit.losses.functional.label_similarity`);
    ``exclude [2N, 1]``: each anchor's own column. Valid only where no row sum can
    underflow. Memory: two ``[2N, 2N]`` matrices at the peak of backward, one kept."""
    return _SupervisedTerms.apply(z1, z2, temperature, exclude, targets.detach())


def cross_terms(
    query: Tensor, key: Tensor, queue: Tensor | None, temperature: float
) -> tuple[Tensor, Tensor]:
    """``(-log P, log W)`` ``[N]`` of the query-key layouts: queries and keys ``[N, d]``
    (one dtype, no autocast; normalised inside) with the other keys as the negatives, or
    the constant ``queue [Q, d]``'s rows (MoCo; detached here). Valid only where no row
    sum can underflow."""
    return _CrossTerms.apply(query, key, None if queue is None else queue.detach(), temperature)
