"""Slow float64 references of AMCL, written from the paper's equations, and the random
inputs the tests feed them (no tests here).

Shared by ``test_amcl.py`` and ``test_amcl_topk.py`` (functional) and
``test_amcl_module.py`` (module); pytest puts
``tests/losses`` on ``sys.path`` (``pythonpath`` in pyproject.toml).

Notation (Eq. 4, Eq. 8): ``Ω(τ) = (d'/2)·log τ + 1/τ`` and, per pair, the Gaussian
log-likelihood up to a constant ``ℓ(s, τ) = s/τ − β·Ω(τ)``. Per head and anchor the loss
is ``−ℓ⁺ + T`` where ``T`` is, over the candidate set (the present negatives, plus the
positive for Eq. 2.4):

* top-κ (§4.1): the average of ``ℓ`` over the κ candidates of largest *similarity*,
  κ clamped to the number of candidates (κ = 1 is the max of Eq. 2.1 / 2.4);
* softmax (Eq. 7 / Eq. 9): ``log Σ_n exp ℓ_n``.

Eq. (3) sums over heads; the batch loss is the mean over anchors.
"""

from __future__ import annotations

import math

import torch

from contrastkit.losses import AMCL

Inputs = tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]


def random_inputs(
    heads: int = 2,
    m: int = 5,
    k: int = 7,
    seed: int = 0,
    absent: bool = True,
    dtype: torch.dtype = torch.float64,
) -> Inputs:
    """``(pos [C, M], neg [C, M, K], tau_pos, tau_neg)``: cosines in (−1, 1), τ in (0.05, 1.5).

    With ``absent``, about a third of the negatives are ``-inf``; anchor 0 keeps exactly
    one present negative and anchor 1 two (so κ = 3 is clamped), every row at least one.
    """
    g = torch.Generator().manual_seed(seed)
    pos = 2 * torch.rand(heads, m, generator=g, dtype=torch.float64) - 1
    neg = 2 * torch.rand(heads, m, k, generator=g, dtype=torch.float64) - 1
    tp = 0.05 + 1.45 * torch.rand(heads, m, generator=g, dtype=torch.float64)
    tn = 0.05 + 1.45 * torch.rand(heads, m, k, generator=g, dtype=torch.float64)
    if absent:
        drop = torch.rand(heads, m, k, generator=g) < 0.35
        order = torch.rand(heads, m, k, generator=g).argsort(dim=2)  # random column order
        drop[:, 0] = True
        drop[:, 0].scatter_(1, order[:, 0, :1], False)
        if m > 1 and k > 1:
            drop[:, 1] = True
            drop[:, 1].scatter_(1, order[:, 1, :2], False)
        drop.scatter_(2, order[..., -1:], False)  # >= 1 present in every row
        neg = neg.masked_fill(drop, float("-inf"))
    return pos.to(dtype), neg.to(dtype), tp.to(dtype), tn.to(dtype)


def _unit(x: torch.Tensor) -> torch.Tensor:
    """L2-normalise the last dimension."""
    return torch.nn.functional.normalize(x, dim=-1)


def omega_ref(t: float, dim: int) -> float:
    """Eq. (4): ``Ω(τ) = (d'/2)·log τ + 1/τ`` in plain Python floats."""
    return 0.5 * dim * math.log(t) + 1.0 / t


def _loglik(s: float, t: float, dim: int, beta: float) -> float:
    """``s/τ − β·Ω(τ)``, the pair's Gaussian log-likelihood up to a constant."""
    return s / t - beta * omega_ref(t, dim)


def _logsumexp(values: list[float]) -> float:
    top = max(values)
    return top + math.log(sum(math.exp(v - top) for v in values))


def contrast_ref(
    pos: torch.Tensor,
    neg: torch.Tensor,
    tp: torch.Tensor,
    tn: torch.Tensor,
    dim: int,
    beta: float,
    negatives: str,
    kappa: int,
    include_positive: bool,
) -> float:
    """Loop reference of ``amcl_contrast`` (reduction "mean"): Σ over heads, mean over anchors.

    ``pos, tp: [C, M]``, ``neg, tn: [C, M, K]``; ``-inf`` in ``neg`` is an absent negative.
    """
    pos_l, neg_l = pos.double().tolist(), neg.double().tolist()
    tp_l, tn_l = tp.double().tolist(), tn.double().tolist()
    heads, anchors = len(pos_l), len(pos_l[0])
    total = 0.0
    for i in range(anchors):
        for c in range(heads):
            s_pos, t_pos = pos_l[c][i], tp_l[c][i]
            # candidates as (similarity, temperature), absent negatives dropped
            cands = [
                (s, t) for s, t in zip(neg_l[c][i], tn_l[c][i], strict=True) if math.isfinite(s)
            ]
            if include_positive:
                cands.append((s_pos, t_pos))
            if negatives == "topk":
                chosen = sorted(cands, key=lambda pair: pair[0], reverse=True)
                chosen = chosen[: min(kappa, len(cands))]
                term = sum(_loglik(s, t, dim, beta) for s, t in chosen) / len(chosen)
            elif negatives == "softmax":
                term = _logsumexp([_loglik(s, t, dim, beta) for s, t in cands])
            else:
                raise ValueError(negatives)
            total += -_loglik(s_pos, t_pos, dim, beta) + term
    return total / anchors


def _module_reference(module: AMCL, h1: torch.Tensor, h2: torch.Tensor) -> float:
    """The 2N layout built anchor by anchor, with τ from single-pair calls (float64).

    Anchor ``i`` of the 2N views ``[h1; h2]`` has its other view ``(i + N) mod 2N`` as
    positive and the remaining 2N − 2 views as negatives, in every head.
    """
    n = h1.shape[0]
    z = _unit(torch.cat([module.projector(h1), module.projector(h2)], 1))
    heads, two_n, _ = z.shape
    pos = torch.empty(heads, two_n, dtype=z.dtype)
    tp = torch.empty_like(pos)
    neg = torch.empty(heads, two_n, two_n - 2, dtype=z.dtype)
    tn = torch.empty_like(neg)
    for c in range(heads):
        for i in range(two_n):
            j = (i + n) % two_n
            pos[c, i] = z[c, i] @ z[c, j]
            tp[c, i] = module.adaptive_temperature(z[c, i], z[c, j])
            others = [k for k in range(two_n) if k not in (i, j)]
            for col, k in enumerate(others):
                neg[c, i, col] = z[c, i] @ z[c, k]
                tn[c, i, col] = module.adaptive_temperature(z[c, i], z[c, k])
    return contrast_ref(
        pos,
        neg,
        tp,
        tn,
        module.out_dim,
        module.beta,
        module.negatives,
        module.kappa,
        module.base == "infonce",
    )
