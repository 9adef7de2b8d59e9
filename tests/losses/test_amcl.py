"""AMCL at the similarity level: Ω (Eq. 4), Eq. (2.1)/(2.4) with top-κ and Eq. (7), gradients.

Values are checked against slow float64 loops written from the paper (amcl_reference.py),
gradients against hand-derived closed forms. With ``ℓ(s, τ) = s/τ − βΩ(τ)``:
``∂ℓ/∂s = 1/τ`` and ``∂ℓ/∂τ = −s/τ² − β(d'/(2τ) − 1/τ²)``.
"""

from __future__ import annotations

import math

import pytest
import torch
from amcl_reference import Inputs, contrast_ref, omega_ref, random_inputs

from contrastkit.losses import functional as F


def _dlogit_dtau(s: torch.Tensor, t: torch.Tensor, dim: int, beta: float) -> torch.Tensor:
    """``∂(s/τ − βΩ(τ))/∂τ = −s/τ² − β(d'/(2τ) − 1/τ²)``; 0 where ``s`` is absent."""
    s = torch.where(torch.isfinite(s), s, torch.zeros_like(s))
    return -s / t**2 - beta * (dim / (2 * t) - 1 / t**2)


def test_omega_matches_eq4_and_is_minimised_at_2_over_d() -> None:
    taus = torch.tensor([1e-5, 0.01, 0.3, 1.0, 2.0, 5.0], dtype=torch.float64)
    for dim in (1, 8, 128):
        got = F.amcl_omega(taus, dim)
        assert got.dtype == torch.float64
        want = torch.tensor([omega_ref(t, dim) for t in taus.tolist()], dtype=torch.float64)
        assert torch.allclose(got, want, rtol=1e-14, atol=0)
    for dim in (8, 128):
        grid = torch.logspace(-4, 1, 200_001, dtype=torch.float64)
        best = grid[F.amcl_omega(grid, dim).argmin()].item()
        assert best == pytest.approx(2 / dim, rel=1e-4)
        at_min = torch.tensor(2 / dim, dtype=torch.float64, requires_grad=True)
        (g,) = torch.autograd.grad(F.amcl_omega(at_min, dim), at_min)
        assert abs(g.item()) < 1e-9 * (dim / 2) ** 2  # scale of the two cancelling terms
        t = torch.tensor([0.003, 0.05, 0.7, 1.9], dtype=torch.float64, requires_grad=True)
        (g,) = torch.autograd.grad(F.amcl_omega(t, dim).sum(), t)
        td = t.detach()
        assert torch.allclose(g, dim / (2 * td) - 1 / td**2, rtol=1e-12)
        assert (g[td < 2 / dim] < 0).all() and (g[td > 2 / dim] > 0).all()


@pytest.mark.parametrize("beta", [0.0, 0.7])
@pytest.mark.parametrize("kappa", [1, 3, 50])
@pytest.mark.parametrize("include_positive", [False, True])
@pytest.mark.parametrize("negatives", ["topk", "softmax"])
def test_contrast_matches_loop_reference(
    negatives: str, include_positive: bool, kappa: int, beta: float
) -> None:
    for seed in (0, 1):
        pos, neg, tp, tn = random_inputs(heads=2, m=6, k=7, seed=seed)
        got = F.amcl_contrast(
            pos,
            neg,
            tp,
            tn,
            dim=8,
            beta=beta,
            negatives=negatives,
            kappa=kappa,
            include_positive=include_positive,
        )
        want = contrast_ref(pos, neg, tp, tn, 8, beta, negatives, kappa, include_positive)
        assert got.dtype == torch.float64
        assert got.item() == pytest.approx(want, rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("include_positive", [False, True])
def test_softmax_is_eq7_at_beta_one(include_positive: bool) -> None:
    """Eq. (7) literally: −s⁺/τ⁺ + Ω(τ⁺) + log Σ_n τ_n^{−d'/2}·exp((s_n − 1)/τ_n).

    For Eq. (9) (include_positive) the sum runs over n = 1..N+1, the positive included.
    """
    d = 4
    pos, neg, tp, tn = random_inputs(heads=3, m=4, k=6, seed=3)
    present = torch.isfinite(neg)
    terms = torch.where(present, tn ** (-d / 2) * torch.exp((neg - 1) / tn), 0.0).sum(2)
    if include_positive:
        terms = terms + tp ** (-d / 2) * torch.exp((pos - 1) / tp)
    omega_pos = (d / 2) * torch.log(tp) + 1 / tp
    eq7 = (-pos / tp + omega_pos + torch.log(terms)).sum(0).mean()
    got = F.amcl_contrast(
        pos, neg, tp, tn, dim=d, beta=1.0, negatives="softmax", include_positive=include_positive
    )
    assert got.item() == pytest.approx(eq7.item(), rel=1e-12)
    other = F.amcl_contrast(
        pos, neg, tp, tn, dim=d, beta=2.0, negatives="softmax", include_positive=include_positive
    )
    assert other.item() != pytest.approx(eq7.item(), rel=1e-3)  # β enters the sum


@pytest.mark.parametrize("negatives", ["topk", "softmax"])
def test_reductions_sum_heads_mean_anchors(negatives: str) -> None:
    heads, m = 3, 4
    pos, neg, tp, tn = random_inputs(heads=heads, m=m, k=5, seed=4)
    kw = dict(dim=8, beta=0.7, negatives=negatives, kappa=2)
    none = F.amcl_contrast(pos, neg, tp, tn, reduction="none", **kw)
    assert none.shape == (heads, m)
    for c in range(heads):
        for i in range(m):
            one = contrast_ref(
                pos[c : c + 1, i : i + 1],
                neg[c : c + 1, i : i + 1],
                tp[c : c + 1, i : i + 1],
                tn[c : c + 1, i : i + 1],
                8,
                0.7,
                negatives,
                2,
                False,
            )
            assert none[c, i].item() == pytest.approx(one, rel=1e-12, abs=1e-12)
    mean = F.amcl_contrast(pos, neg, tp, tn, reduction="mean", **kw)
    total = F.amcl_contrast(pos, neg, tp, tn, reduction="sum", **kw)
    assert mean.item() == pytest.approx(none.sum(0).mean().item(), rel=1e-12)
    assert mean.item() == pytest.approx(heads * none.mean().item(), rel=1e-12)
    assert total.item() == pytest.approx(none.sum().item(), rel=1e-12)
    assert total.item() == pytest.approx(m * mean.item(), rel=1e-12)
    default = F.amcl_contrast(pos, neg, tp, tn, **kw)
    assert default.item() == mean.item()


@pytest.mark.parametrize("include_positive", [False, True])
@pytest.mark.parametrize("beta", [0.0, 1.0, 3.0])
def test_constant_temperature_reduces_to_infonce_and_dcl(
    beta: float, include_positive: bool
) -> None:
    """§4.3: one head, one constant t — AMCL minus InfoNCE(t) / DCL(t) is one constant.

    The constant is 0: +βΩ(t) of the positive cancels −βΩ(t) factored out of the sum.
    """
    t = 0.2
    base = F.info_nce if include_positive else F.dcl
    diffs = []
    for seed in range(5):
        pos, neg, _, _ = random_inputs(heads=1, m=6, k=5, seed=10 + seed)
        got = F.amcl_contrast(
            pos,
            neg,
            torch.full_like(pos, t),
            torch.full_like(neg, t),
            dim=128,
            beta=beta,
            negatives="softmax",
            include_positive=include_positive,
        )
        diffs.append(got.item() - base(pos[0], neg[0], t).item())
    assert max(diffs) - min(diffs) < 1e-10
    assert diffs[0] == pytest.approx(0.0, abs=1e-10)


def _topk_selection(
    pos: torch.Tensor, neg: torch.Tensor, kappa: int, include_positive: bool
) -> tuple[torch.Tensor, torch.Tensor]:
    """Weights 1/κ' of the selected candidates (positive [C, M], negatives [C, M, K])."""
    w_pos, w_neg = torch.zeros_like(pos), torch.zeros_like(neg)
    heads, m, k = neg.shape
    for c in range(heads):
        for i in range(m):
            cands = [(neg[c, i, n].item(), n) for n in range(k) if math.isfinite(neg[c, i, n])]
            if include_positive:
                cands.append((pos[c, i].item(), -1))
            chosen = sorted(cands, reverse=True)[:kappa]
            for _, n in chosen:
                if n < 0:
                    w_pos[c, i] = 1 / len(chosen)
                else:
                    w_neg[c, i, n] = 1 / len(chosen)
    return w_pos, w_neg


def _check_closed_form_grads(
    inputs: Inputs, w_pos: torch.Tensor, w_neg: torch.Tensor, beta: float, **kwargs: object
) -> None:
    """Autograd vs ``∂L/∂x = (1/M)·Σ weight·∂ℓ/∂x`` with weight −1 (+ w⁺) on the positive."""
    pos, neg, tp, tn = (x.clone().requires_grad_(True) for x in inputs)
    d, m = 8, pos.shape[1]
    loss = F.amcl_contrast(pos, neg, tp, tn, dim=d, beta=beta, **kwargs)
    g_pos, g_neg, g_tp, g_tn = torch.autograd.grad(loss, (pos, neg, tp, tn))
    p, n, t_p, t_n = (x.detach() for x in (pos, neg, tp, tn))
    a_pos = (w_pos - 1) / m
    assert torch.allclose(g_pos, a_pos / t_p, rtol=1e-10, atol=1e-12)
    assert torch.allclose(g_tp, a_pos * _dlogit_dtau(p, t_p, d, beta), rtol=1e-10, atol=1e-12)
    assert torch.allclose(g_neg, w_neg / (m * t_n), rtol=1e-10, atol=1e-12)
    assert torch.allclose(g_tn, w_neg / m * _dlogit_dtau(n, t_n, d, beta), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("include_positive", [False, True])
@pytest.mark.parametrize("kappa", [1, 3])
def test_topk_gradients_closed_form(kappa: int, include_positive: bool) -> None:
    inputs = random_inputs(heads=2, m=5, k=6, seed=8)
    w_pos, w_neg = _topk_selection(inputs[0], inputs[1], kappa, include_positive)
    if include_positive:
        assert (w_pos > 0).any()  # the positive is selected somewhere
    _check_closed_form_grads(
        inputs, w_pos, w_neg, 0.7, kappa=kappa, include_positive=include_positive
    )


@pytest.mark.parametrize("include_positive", [False, True])
def test_softmax_gradients_closed_form(include_positive: bool) -> None:
    """Weights are the softmax of the logits ℓ over the candidates."""
    inputs = random_inputs(heads=2, m=5, k=6, seed=9)
    pos, neg, tp, tn = inputs
    beta = 0.7
    l_pos = pos / tp - beta * F.amcl_omega(tp, 8)
    l_neg = torch.where(torch.isfinite(neg), neg / tn - beta * F.amcl_omega(tn, 8), -math.inf)
    logits = torch.cat([l_pos[..., None], l_neg], 2) if include_positive else l_neg
    weights = torch.softmax(logits, dim=2)
    if include_positive:
        w_pos, w_neg = weights[..., 0], weights[..., 1:]
    else:
        w_pos, w_neg = torch.zeros_like(pos), weights
    _check_closed_form_grads(
        inputs, w_pos, w_neg, beta, negatives="softmax", include_positive=include_positive
    )


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
@pytest.mark.parametrize("include_positive", [False, True])
@pytest.mark.parametrize("negatives", ["topk", "softmax"])
def test_finite_at_temperature_bounds(
    negatives: str, include_positive: bool, dtype: torch.dtype
) -> None:
    """τ at the paper's bounds 1e-5 and 2, d' = 128, β = 10: finite loss and gradients.

    The loss is computed and returned in float32. Gradients land in the leaves' dtype: the
    similarity gradients (<= 1/(Mτ) ≈ 1.7e4) are finite in float16 too, but
    ``|∂L/∂τ| ≈ |s⁺ − β|/(Mτ²) ≈ 1e10`` at τ = 1e-5 exceeds float16's 65504, so there a
    float16 τ-gradient can only be the rounding of the exact value: ±inf, never NaN.
    """
    pos, neg, _, _ = random_inputs(heads=3, m=6, k=8, seed=11, dtype=dtype)
    g = torch.Generator().manual_seed(12)
    tp = torch.where(torch.rand(pos.shape, generator=g) < 0.5, 1e-5, 2.0).to(dtype)
    tn = torch.where(torch.rand(neg.shape, generator=g) < 0.5, 1e-5, 2.0).to(dtype)
    tp[0], tn[0] = 1e-5, 1e-5  # one head entirely at the lower bound
    kw = dict(dim=128, beta=10.0, negatives=negatives, kappa=3, include_positive=include_positive)
    leaves = [x.clone().requires_grad_(True) for x in (pos, neg, tp, tn)]
    loss = F.amcl_contrast(*leaves, **kw)
    assert loss.dtype == torch.float32
    assert torch.isfinite(loss)
    want = contrast_ref(pos, neg, tp, tn, 128, 10.0, negatives, 3, include_positive)
    assert loss.item() == pytest.approx(want, rel=1e-6)  # terms reach ~1e6
    grads = torch.autograd.grad(loss, leaves)
    exact_leaves = [x.detach().double().requires_grad_(True) for x in (pos, neg, tp, tn)]
    exact = torch.autograd.grad(F.amcl_contrast(*exact_leaves, **kw), exact_leaves)
    for name, got, ref in zip(("pos", "neg", "tau_pos", "tau_neg"), grads, exact, strict=True):
        assert got.dtype == dtype
        assert not torch.isnan(got).any(), name
        if dtype == torch.float32 or not name.startswith("tau"):
            assert torch.isfinite(got).all(), name
        rounded = ref.to(dtype)  # the exact gradient rounded to the leaves' dtype
        assert torch.equal(torch.isfinite(got), torch.isfinite(rounded)), name
        assert torch.allclose(got.double(), rounded.double(), rtol=1e-3, atol=1e-2), name
    if dtype == torch.float16:  # the large τ = 2 temperatures keep finite gradients
        assert torch.isfinite(grads[3][tn == 2.0]).all() and (grads[3][tn == 2.0] != 0).any()


@pytest.mark.parametrize(("dim", "beta"), [(8, 0.0), (8, 0.7), (128, 10.0)])
def test_runaway_is_where_descending_the_negative_logit_lowers_its_temperature(
    dim: int, beta: float
) -> None:
    """``amcl_runaway`` against autograd: ``∂ℓ/∂τ > 0`` for ``ℓ = s/τ − βΩ(τ)`` (Eq. 4)."""
    g = torch.Generator().manual_seed(13)
    s = 2 * torch.rand(4000, generator=g, dtype=torch.float64) - 1
    tau = torch.logspace(-5, 0.3, 4000, dtype=torch.float64)[torch.randperm(4000, generator=g)]
    tau.requires_grad_(True)
    (grad,) = torch.autograd.grad((s / tau - beta * F.amcl_omega(tau, dim)).sum(), tau)
    got = F.amcl_runaway(s, tau.detach(), dim=dim, beta=beta)
    assert got.dtype == torch.bool and torch.equal(got, grad > 0)
    assert 0 < got.sum() < got.numel()  # both sides of τ_c = 2(β − s)/(βd') are sampled
    absent = F.amcl_runaway(torch.tensor([-math.inf]), torch.tensor([1e-5]), dim=dim, beta=beta)
    assert not absent.item()


def test_bad_inputs_raise_clear_errors() -> None:
    pos, neg, tp, tn = random_inputs(heads=2, m=3, k=4, seed=13)
    good = dict(pos_sim=pos, neg_sim=neg, tau_pos=tp, tau_neg=tn, dim=8)
    zero_col = tn.index_fill(2, torch.tensor([1]), 0.0)
    inf_col = tn.index_fill(2, torch.tensor([1]), math.inf)
    no_neg = neg.index_fill(1, torch.tensor([2]), -math.inf)  # anchor 2 has no negative
    cases: list[tuple[type[Exception], str, dict]] = [
        (TypeError, "pos_sim", dict(pos_sim=pos.tolist())),
        (TypeError, "neg_sim", dict(neg_sim=neg.long())),
        (ValueError, "pos_sim", dict(pos_sim=pos[0])),
        (ValueError, "neg_sim", dict(neg_sim=neg[:, :2])),
        (ValueError, "tau_pos", dict(tau_pos=tp[:, :2])),
        (ValueError, "tau_neg", dict(tau_neg=tn[..., :3])),
        (ValueError, "tau_pos", dict(tau_pos=-tp)),
        (ValueError, "tau_neg", dict(tau_neg=zero_col)),
        (ValueError, "tau_neg", dict(tau_neg=inf_col)),
        *((ValueError, "kappa", dict(kappa=kappa)) for kappa in (0, -2, 2.0, True)),
        (ValueError, "negatives", dict(negatives="max")),
        *((ValueError, "dim", dict(dim=dim)) for dim in (0, 2.5, True)),
        *((ValueError, "beta", dict(beta=beta)) for beta in (-0.1, math.inf, math.nan)),
        (TypeError, "beta", dict(beta="1")),
        (ValueError, "reduction", dict(reduction="avg")),
        (ValueError, "neg_sim must hold at least one finite negative", dict(neg_sim=no_neg)),
    ]
    for exc, match, change in cases:
        with pytest.raises(exc, match=match):
            F.amcl_contrast(**{**good, **change})
    with pytest.raises(TypeError, match="tau"):
        F.amcl_omega([0.1], 8)
    with pytest.raises(ValueError, match="dim"):
        F.amcl_omega(tp, 0)
    with pytest.raises(ValueError, match="sim_b"):
        F.amcl_simsiam(pos, pos[:, :2], tp, tp, dim=8)
    with pytest.raises(ValueError, match="tau_a"):
        F.amcl_simsiam(pos, pos, torch.zeros_like(tp), tp, dim=8)
