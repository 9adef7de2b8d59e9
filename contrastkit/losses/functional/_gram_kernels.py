"""Triton kernels of the fused Gram primitives (launched by :mod:`._gram_triton`).

Notation: anchors ``a [M, d]``, keys ``k [K, d]`` (row-major, contiguous), similarities
``s_ij = a_i·k_j``, inverse temperature ``σ`` (``scale``), and for each row the columns
``j`` listed in ``exclude [M, R]`` are absent. Every kernel works on ``[BLOCK_M, BLOCK_N]``
tiles of ``s`` computed on the fly by one ``tl.dot`` of a ``[BLOCK_M, BLOCK_D]`` anchor
tile with a ``[BLOCK_N, BLOCK_D]`` key tile (``BLOCK_D`` = the next power of two >= d, so
one tile holds whole embeddings); no ``[M, K]`` tensor is ever written. Products and
every reduction accumulate in float32 whatever the input dtype.

* :func:`forward_kernel` (one program per ``BLOCK_M`` rows, sweeping all columns): the
  online log-sum-exp of flash attention, a running maximum ``m_i`` and sum
  ``l_i = Σ_j exp(σ s_ij - m_i)`` rescaled by ``exp(m_old - m_new)`` when the maximum
  grows, gives ``lse_i = m_i + log l_i``; with ``WITH_MEAN`` also
  ``E_i = Σ_j exp(σ s_ij - m_i)·s_ij / l_i``, the softmax mean.
* Backward, with the upstream gradient folded into per-row ``u_i, v_i`` by the caller:
  ``∂L/∂s_ij = c_ij = p_ij·(u_i + v_i·s_ij)``, ``p_ij = exp(σ s_ij - lse_i)``
  (``lse``: ``u = g·σ, v = 0``; softmax mean: ``u = g·(1 - σE), v = g·σ``; with detached
  weights ``u = g, v = 0``). :func:`grad_anchors_kernel` (row-parallel) forms
  ``∂a_i = Σ_j c_ij k_j``; :func:`grad_keys_kernel` (column-parallel, over the first
  ``n_own`` key rows: the rest is the constant ``extra``) forms ``∂k_j = Σ_i c_ij a_i``.
  Two kernels, each recomputing its tiles of ``s``, instead of one with atomic adds:
  every output row is written once by one program, so the gradients are deterministic
  (bitwise reproducible runs) and need no float32 scratch buffer or contention on
  ``atomic_add``, at the price of one more ``a·kᵀ`` product in backward.

``SCALED`` (the unit path, :func:`._gram_triton.unit_logsumexp`): ``a`` and ``k`` are raw
bfloat16 rows with per-row scales ``ra [M]``, ``rk [K]`` (their inverse norms), so
``s_ij = ra_i·rk_j·(a_i·k_j)``: a bfloat16 product accumulated in float32, exact, then
scaled in float32. The gradients are those of the scaled rows ``ra_i·a_i`` (the caller
takes them through the normalisation): ``Σ_j c_ij·rk_j·k_j``, the float32 coefficients
``c_ij·rk_j`` split into three bfloat16 parts (:func:`_gdot`: ``hi + mid + lo`` equals the
float32 value to about 2^-24 of it), each multiplied on tensor cores with the exact
bfloat16 rows: three products, about float32's accuracy.

``TWO`` (HCL's two log-sum-exps): a second ``lse2`` at the scale ``σ₂`` from the same
tiles, a second online sum in the same pass; in backward
``c_ij = p_ij·u_i + p2_ij·u2_i`` with ``p2_ij = exp(σ₂ s_ij - lse2_i)``.

For half-precision inputs the coefficients ``c`` are rounded to the input dtype before
the backward products (tensor cores take both operands in one dtype), as flash attention
does with its probabilities; the accumulation stays float32. ``UPCAST`` (set under the
interpreter for bfloat16 only) multiplies in float32 instead: Triton's CPU interpreter
stores bfloat16 as ``uint16`` and its ``tl.dot`` multiplies those bit patterns
(triton-lang/triton#11584); bf16 products are exact in float32, so the result is the same.
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def _load_rows(ptr, idx, n, offs_d, d):
    """``[len(idx), BLOCK_D]`` rows ``idx`` of a row-major ``[n, d]`` matrix, 0-padded."""
    mask = (idx[:, None] < n) & (offs_d[None, :] < d)
    return tl.load(ptr + idx[:, None] * d + offs_d[None, :], mask=mask, other=0.0)


@triton.jit
def _dot(x, y, PRECISION: tl.constexpr, UPCAST: tl.constexpr):
    """``x·y`` accumulated in float32 (``UPCAST``: operands in float32, see above)."""
    if UPCAST:
        return tl.dot(x.to(tl.float32), y.to(tl.float32), input_precision="ieee")
    return tl.dot(x, y, input_precision=PRECISION, out_dtype=tl.float32)


@triton.jit
def _gdot(c, y, SPLIT: tl.constexpr, PRECISION: tl.constexpr, UPCAST: tl.constexpr):
    """``c·y`` for float32 coefficients ``c``: with ``SPLIT`` (bfloat16 ``y``) ``c`` in
    three bfloat16 parts, each product exact, so the sum is ``c·y`` to float32 accuracy;
    else ``c`` rounded to ``y``'s dtype (float32: the ``PRECISION`` product)."""
    if SPLIT:
        hi = c.to(tl.bfloat16)
        rest = c - hi.to(tl.float32)
        mid = rest.to(tl.bfloat16)
        lo = (rest - mid.to(tl.float32)).to(tl.bfloat16)
        out = _dot(hi, y, PRECISION, UPCAST)
        out += _dot(mid, y, PRECISION, UPCAST)
        return out + _dot(lo, y, PRECISION, UPCAST)
    return _dot(c.to(y.dtype), y, PRECISION, UPCAST)


@triton.jit
def _scales(r_ptr, idx, n, SCALED: tl.constexpr):
    """The row scales ``r[idx]`` (0 past ``n``), or 1 without ``SCALED``."""
    if SCALED:
        return tl.load(r_ptr + idx, mask=idx < n, other=0.0)
    return tl.full(idx.shape, 1.0, tl.float32)


@triton.jit
def _tile(
    a,
    k,
    excl_ptr,
    rows,
    cols,
    m,
    n_cols,
    ra,
    rk,
    R: tl.constexpr,
    SCALED: tl.constexpr,
    PRECISION: tl.constexpr,
    UPCAST: tl.constexpr,
):
    """``s = a·kᵀ`` ``[BLOCK_M, BLOCK_N]`` in float32 (``SCALED``: times the row scales
    ``ra`` and column scales ``rk``) and the mask of its present entries: columns <
    n_cols and not among the row's ``R`` excluded columns. Padding rows (>= m) keep their
    columns, so their sums stay finite; they are never stored, and in backward their zero
    ``u`` and zero anchors contribute nothing."""
    s = _dot(a, tl.trans(k), PRECISION, UPCAST)
    if SCALED:  # a scale of 0 (a row whose norm overflowed) makes a zero row, as unit_rows
        zero = (ra[:, None] == 0.0) | (rk[None, :] == 0.0)  # does: not inf·0 = NaN
        s = tl.where(zero, 0.0, s * ra[:, None] * rk[None, :])
    present = (cols[None, :] < n_cols) & (rows[:, None] >= 0)
    for t in tl.static_range(R):
        excluded = tl.load(excl_ptr + rows * R + t, mask=rows < m, other=-1)
        present &= cols[None, :] != excluded[:, None]
    return s, present


@triton.jit
def _coefficients(s, present, lse, u, v, scale, WITH_V: tl.constexpr):
    """``c_ij = p_ij·(u_i + v_i·s_ij)`` with ``p_ij = exp(σ s_ij - lse_i)``, 0 if absent."""
    p = tl.where(present, tl.exp(s * scale - lse[:, None]), 0.0)
    if WITH_V:
        return p * (u[:, None] + v[:, None] * s)
    return p * u[:, None]


@triton.jit
def _second(s, present, lse2, u2, scale2):
    """``p2_ij·u2_i`` with ``p2_ij = exp(σ₂ s_ij - lse2_i)``, 0 if absent (``TWO``)."""
    return tl.where(present, tl.exp(s * scale2 - lse2[:, None]), 0.0) * u2[:, None]


@triton.jit
def _online(run_max, run_sum, logits):
    """One tile's step of the online log-sum-exp: the new maximum and sum, and the
    tile's exponentials and the old sum's decay (for other sums kept alongside)."""
    new_max = tl.maximum(run_max, tl.max(logits, axis=1))
    shift = tl.where(new_max == float("-inf"), 0.0, new_max)  # a row absent so far
    decay = tl.exp(run_max - shift)
    e = tl.exp(logits - shift[:, None])
    return new_max, run_sum * decay + tl.sum(e, axis=1), e, decay


@triton.jit
def forward_kernel(
    a_ptr,
    k_ptr,
    excl_ptr,
    ra_ptr,
    rk_ptr,
    lse_ptr,
    mean_ptr,
    lse2_ptr,
    m,
    n_cols,
    d,
    scale,
    scale2,
    R: tl.constexpr,
    SCALED: tl.constexpr,
    WITH_MEAN: tl.constexpr,
    TWO: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_D: tl.constexpr,
    PRECISION: tl.constexpr,
    UPCAST: tl.constexpr,
):
    """``lse [M]`` (and, ``WITH_MEAN``, the softmax mean ``E [M]``; ``TWO``, ``lse2 [M]``
    at ``scale2``) of ``BLOCK_M`` rows."""
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, BLOCK_D)
    a = _load_rows(a_ptr, rows, m, offs_d, d)
    ra = _scales(ra_ptr, rows, m, SCALED)
    run_max = tl.full([BLOCK_M], float("-inf"), tl.float32)
    run_sum = tl.zeros([BLOCK_M], tl.float32)
    run_dot = tl.zeros([BLOCK_M], tl.float32)  # Σ_j exp(σ s_ij - m_i)·s_ij
    run_max2 = tl.full([BLOCK_M], float("-inf"), tl.float32)
    run_sum2 = tl.zeros([BLOCK_M], tl.float32)
    for c0 in range(0, n_cols, BLOCK_N):
        cols = c0 + tl.arange(0, BLOCK_N)
        k = _load_rows(k_ptr, cols, n_cols, offs_d, d)
        rk = _scales(rk_ptr, cols, n_cols, SCALED)
        s, present = _tile(
            a, k, excl_ptr, rows, cols, m, n_cols, ra, rk, R, SCALED, PRECISION, UPCAST
        )
        logits = tl.where(present, s * scale, float("-inf"))
        run_max, run_sum, e, decay = _online(run_max, run_sum, logits)
        if WITH_MEAN:
            run_dot = run_dot * decay + tl.sum(e * s, axis=1)
        if TWO:
            logits2 = tl.where(present, s * scale2, float("-inf"))
            run_max2, run_sum2, _, _ = _online(run_max2, run_sum2, logits2)
    tl.store(lse_ptr + rows, run_max + tl.log(run_sum), mask=rows < m)
    if TWO:
        tl.store(lse2_ptr + rows, run_max2 + tl.log(run_sum2), mask=rows < m)
    if WITH_MEAN:
        tl.store(mean_ptr + rows, run_dot / run_sum, mask=rows < m)


@triton.jit
def grad_anchors_kernel(
    a_ptr,
    k_ptr,
    excl_ptr,
    ra_ptr,
    rk_ptr,
    lse_ptr,
    u_ptr,
    v_ptr,
    lse2_ptr,
    u2_ptr,
    da_ptr,
    m,
    n_cols,
    d,
    scale,
    scale2,
    R: tl.constexpr,
    SCALED: tl.constexpr,
    WITH_V: tl.constexpr,
    TWO: tl.constexpr,
    OWN: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_D: tl.constexpr,
    PRECISION: tl.constexpr,
    UPCAST: tl.constexpr,
):
    """``∂a_i = Σ_j c_ij k_j`` for ``BLOCK_M`` rows, over all ``n_cols`` keys.

    With ``OWN`` the first ``m`` keys are the anchors, and the kernel also adds their
    part as keys, ``Σ_{j<m} c_ji a_j``: ``s`` is symmetric on those columns
    (``s_ji = s_ij``), so the same tile gives the transposed coefficients ``c_ji`` (from
    column ``j``'s ``lse_j, u_j, v_j`` and exclusions) and ``k_j = a_j``. One recomputed
    product and one gradient product per tile, instead of two of each with
    :func:`grad_keys_kernel`; still one program per output row block, no atomics."""
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, BLOCK_D)
    a = _load_rows(a_ptr, rows, m, offs_d, d)
    ra = _scales(ra_ptr, rows, m, SCALED)
    lse = tl.load(lse_ptr + rows, mask=rows < m, other=0.0)
    u = tl.load(u_ptr + rows, mask=rows < m, other=0.0)
    v = tl.load(v_ptr + rows, mask=rows < m, other=0.0) if WITH_V else u
    lse2 = tl.load(lse2_ptr + rows, mask=rows < m, other=0.0) if TWO else lse
    u2 = tl.load(u2_ptr + rows, mask=rows < m, other=0.0) if TWO else u
    acc = tl.zeros([BLOCK_M, BLOCK_D], tl.float32)
    for c0 in range(0, n_cols, BLOCK_N):
        cols = c0 + tl.arange(0, BLOCK_N)
        k = _load_rows(k_ptr, cols, n_cols, offs_d, d)
        rk = _scales(rk_ptr, cols, n_cols, SCALED)
        s, present = _tile(
            a, k, excl_ptr, rows, cols, m, n_cols, ra, rk, R, SCALED, PRECISION, UPCAST
        )
        c = _coefficients(s, present, lse, u, v, scale, WITH_V)
        if TWO:
            c += _second(s, present, lse2, u2, scale2)
        if OWN:  # noqa: SIM102 - a compile-time branch around a run-time one
            if c0 < m:  # the transposed part: columns that are anchors too
                mine = cols < m
                lse_c = tl.load(lse_ptr + cols, mask=mine, other=0.0)
                u_c = tl.load(u_ptr + cols, mask=mine, other=0.0)
                present_t = mine[None, :] & (rows[:, None] < m)
                for t in tl.static_range(R):
                    excluded = tl.load(excl_ptr + cols * R + t, mask=mine, other=-1)
                    present_t &= rows[:, None] != excluded[None, :]
                p_t = tl.where(present_t, tl.exp(s * scale - lse_c[None, :]), 0.0)
                if WITH_V:
                    v_c = tl.load(v_ptr + cols, mask=mine, other=0.0)
                    c += p_t * (u_c[None, :] + v_c[None, :] * s)
                else:
                    c += p_t * u_c[None, :]
                if TWO:
                    lse2_c = tl.load(lse2_ptr + cols, mask=mine, other=0.0)
                    u2_c = tl.load(u2_ptr + cols, mask=mine, other=0.0)
                    p2_t = tl.where(present_t, tl.exp(s * scale2 - lse2_c[None, :]), 0.0)
                    c += p2_t * u2_c[None, :]
        if SCALED:  # the gradient of the scaled rows: Σ_j c_ij·rk_j·k_j
            c = c * rk[None, :]
        acc += _gdot(c, k, SCALED, PRECISION, UPCAST)
    mask = (rows[:, None] < m) & (offs_d[None, :] < d)
    out = da_ptr + rows[:, None] * d + offs_d[None, :]
    tl.store(out, acc.to(da_ptr.dtype.element_ty), mask=mask)


@triton.jit
def grad_keys_kernel(
    a_ptr,
    k_ptr,
    excl_ptr,
    ra_ptr,
    rk_ptr,
    lse_ptr,
    u_ptr,
    v_ptr,
    lse2_ptr,
    u2_ptr,
    dk_ptr,
    m,
    n_own,
    d,
    scale,
    scale2,
    R: tl.constexpr,
    SCALED: tl.constexpr,
    WITH_V: tl.constexpr,
    TWO: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_D: tl.constexpr,
    PRECISION: tl.constexpr,
    UPCAST: tl.constexpr,
):
    """``∂k_j = Σ_i c_ij a_i`` for ``BLOCK_N`` of the first ``n_own`` keys, over all rows."""
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, BLOCK_D)
    k = _load_rows(k_ptr, cols, n_own, offs_d, d)
    rk = _scales(rk_ptr, cols, n_own, SCALED)
    acc = tl.zeros([BLOCK_N, BLOCK_D], tl.float32)
    for r0 in range(0, m, BLOCK_M):
        rows = r0 + tl.arange(0, BLOCK_M)
        a = _load_rows(a_ptr, rows, m, offs_d, d)
        ra = _scales(ra_ptr, rows, m, SCALED)
        lse = tl.load(lse_ptr + rows, mask=rows < m, other=0.0)
        u = tl.load(u_ptr + rows, mask=rows < m, other=0.0)
        v = tl.load(v_ptr + rows, mask=rows < m, other=0.0) if WITH_V else u
        s, present = _tile(
            a, k, excl_ptr, rows, cols, m, n_own, ra, rk, R, SCALED, PRECISION, UPCAST
        )
        c = _coefficients(s, present, lse, u, v, scale, WITH_V)
        if TWO:
            lse2 = tl.load(lse2_ptr + rows, mask=rows < m, other=0.0)
            u2 = tl.load(u2_ptr + rows, mask=rows < m, other=0.0)
            c += _second(s, present, lse2, u2, scale2)
        if SCALED:  # the gradient of the scaled keys: Σ_i c_ij·ra_i·a_i
            c = c * ra[:, None]
        acc += _gdot(tl.trans(c), a, SCALED, PRECISION, UPCAST)
    mask = (cols[:, None] < n_own) & (offs_d[None, :] < d)
    out = dk_ptr + cols[:, None] * d + offs_d[None, :]
    tl.store(out, acc.to(dk_ptr.dtype.element_ty), mask=mask)


def block_d(d: int) -> int:
    """``BLOCK_D``: the next power of two >= d, at least 16 (``tl.dot``'s minimum)."""
    return max(16, triton.next_power_of_2(d))
