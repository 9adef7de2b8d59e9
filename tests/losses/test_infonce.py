"""InfoNCE family against loop-based float64 references written from the papers."""

from __future__ import annotations

import math

import pytest
import torch

from contrastkit.losses import DCL, DCLW, HCL, MACL, DualTemperature, FlatNCE, InfoNCE, NTXent
from contrastkit.losses import functional as F
from contrastkit.losses.views import ntxent_negatives

SHAPES = [(3, 1), (5, 4), (16, 31)]
TAUS = [0.05, 0.1, 0.5, 2.0]


def random_sims(m: int, k: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return torch.rand(m, generator=g, dtype=torch.float64) * 2 - 1, torch.rand(
        m, k, generator=g, dtype=torch.float64
    ) * 2 - 1


# --- loop references, one anchor at a time ------------------------------------------------


def ref_info_nce(p: float, negs: list[float], tau: float) -> float:
    den = math.exp(p / tau) + sum(math.exp(n / tau) for n in negs)
    return -math.log(math.exp(p / tau) / den)


def ref_dcl(p: float, negs: list[float], tau: float) -> float:
    return -p / tau + math.log(sum(math.exp(n / tau) for n in negs))


def ref_w(p: float, negs: list[float], tau: float) -> float:
    """MACL Eq. (8): W = 1 - P_pos."""
    return 1.0 - math.exp(-ref_info_nce(p, negs, tau))


def ref_hcl(p: float, negs: list[float], tau: float, tau_plus: float, beta: float) -> float:
    k = len(negs)
    imp = [math.exp(beta * n / tau) for n in negs]
    mean_imp = sum(imp) / k
    reweighted = sum(w * math.exp(n / tau) for w, n in zip(imp, negs, strict=True)) / mean_imp
    ng = (-tau_plus * k * math.exp(p / tau) + reweighted) / (1 - tau_plus)
    ng = max(ng, k * math.exp(-1 / tau))
    return -math.log(math.exp(p / tau) / (math.exp(p / tau) + ng))


def per_anchor(fn, pos: torch.Tensor, neg: torch.Tensor, *args: float) -> torch.Tensor:
    return torch.tensor(
        [fn(pos[i].item(), neg[i].tolist(), *args) for i in range(len(pos))], dtype=torch.float64
    )


# --- functional core ----------------------------------------------------------------------


@pytest.mark.parametrize("m,k", SHAPES)
@pytest.mark.parametrize("tau", TAUS)
def test_info_nce_and_dcl_match_loops(m: int, k: int, tau: float) -> None:
    pos, neg = random_sims(m, k, seed=m * 100 + k)
    torch.testing.assert_close(
        F.info_nce(pos, neg, tau, "none"), per_anchor(ref_info_nce, pos, neg, tau)
    )
    torch.testing.assert_close(F.dcl(pos, neg, tau, "none"), per_anchor(ref_dcl, pos, neg, tau))
    torch.testing.assert_close(
        F.info_nce(pos, neg, tau), per_anchor(ref_info_nce, pos, neg, tau).mean()
    )


@pytest.mark.parametrize("m,k", SHAPES)
def test_info_nce_terms_give_the_gradient_scale_w(m: int, k: int) -> None:
    pos, neg = random_sims(m, k, seed=7)
    _, log_w = F.info_nce_terms(pos, neg, 0.2)
    torch.testing.assert_close(log_w.exp(), per_anchor(ref_w, pos, neg, 0.2))


def test_info_nce_terms_take_a_detached_tensor_tau_and_refuse_one_that_needs_grad() -> None:
    pos, neg = random_sims(4, 5, seed=8)
    tau = torch.tensor(0.2, dtype=pos.dtype)
    got, want = F.info_nce_terms(pos, neg, tau), F.info_nce_terms(pos, neg, 0.2)
    torch.testing.assert_close(got, want)
    with pytest.raises(ValueError, match="temperature: info_nce_terms gives τ no gradient"):
        F.info_nce_terms(pos, neg, tau.requires_grad_())


@pytest.mark.parametrize("m,k", SHAPES)
@pytest.mark.parametrize("tau", [0.1, 0.5])
def test_dual_temperature_matches_loop(m: int, k: int, tau: float) -> None:
    pos, neg = random_sims(m, k, seed=3)

    def ref(p: float, negs: list[float]) -> float:
        return ref_w(p, negs, 1.0) / ref_w(p, negs, tau) * ref_info_nce(p, negs, tau)

    expected = torch.tensor(
        [ref(pos[i].item(), neg[i].tolist()) for i in range(m)], dtype=torch.float64
    )
    torch.testing.assert_close(F.dual_temperature(pos, neg, tau, 1.0, "none"), expected)


def test_dual_temperature_gradient_is_infonce_gradient_rescaled() -> None:
    pos, neg = random_sims(6, 5, seed=11)
    pos.requires_grad_(True)
    F.dual_temperature(pos, neg, 0.1, 1.0, "sum").backward()
    g_dual = pos.grad.clone()
    pos.grad = None
    F.info_nce(pos, neg, 0.1, "none").backward(
        per_anchor(ref_w, pos.detach(), neg, 1.0) / per_anchor(ref_w, pos.detach(), neg, 0.1)
    )
    torch.testing.assert_close(g_dual, pos.grad)


@pytest.mark.parametrize("m,k", SHAPES)
@pytest.mark.parametrize("tau,tau_plus,beta", [(0.5, 0.1, 1.0), (0.2, 0.05, 0.5), (1.0, 0.3, 2.0)])
def test_hcl_matches_loop(m: int, k: int, tau: float, tau_plus: float, beta: float) -> None:
    pos, neg = random_sims(m, k, seed=5)
    torch.testing.assert_close(
        F.hcl(pos, neg, tau, tau_plus, beta, "none"),
        per_anchor(ref_hcl, pos, neg, tau, tau_plus, beta),
    )


def test_hcl_clamp_branch_matches_loop() -> None:
    # positive far above the negatives and a large tau_plus: the debiased estimate is negative
    pos = torch.tensor([0.99, 0.9, -0.5], dtype=torch.float64)
    neg = torch.tensor([[-0.9, -0.8], [-0.95, 0.85], [0.2, 0.1]], dtype=torch.float64)
    out = F.hcl(pos, neg, 0.5, 0.45, 1.0, "none")
    torch.testing.assert_close(out, per_anchor(ref_hcl, pos, neg, 0.5, 0.45, 1.0))
    floor = -math.log(math.exp(0.99 / 0.5) / (math.exp(0.99 / 0.5) + 2 * math.exp(-2.0)))
    assert out[0].item() == pytest.approx(floor)  # first anchor sits on the clamp


def test_hcl_without_debiasing_or_hardness_is_info_nce() -> None:
    pos, neg = random_sims(8, 6, seed=9)
    torch.testing.assert_close(F.hcl(pos, neg, 0.5, 0.0, 0.0), F.info_nce(pos, neg, 0.5))


@pytest.mark.parametrize("m,k", SHAPES)
def test_flatnce_value_is_info_nce_and_gradient_is_dcl(m: int, k: int) -> None:
    pos, neg = random_sims(m, k, seed=13)
    pos.requires_grad_(True)
    neg.requires_grad_(True)
    flat = F.flatnce(pos, neg, 0.1)
    torch.testing.assert_close(flat, F.info_nce(pos, neg, 0.1))
    g_flat = torch.autograd.grad(flat, (pos, neg))
    g_dcl = torch.autograd.grad(F.dcl(pos, neg, 0.1), (pos, neg))
    torch.testing.assert_close(g_flat, g_dcl)
    g_nce = torch.autograd.grad(F.info_nce(pos, neg, 0.1), (pos, neg))
    assert not torch.allclose(g_flat[0], g_nce[0])  # and InfoNCE's gradient really differs


def test_dclw_weights_harder_positives_more() -> None:
    pos, neg = random_sims(6, 4, seed=17)
    sigma = 0.5
    w = 2 - 6 * torch.softmax(pos / sigma, 0)
    expected = torch.logsumexp(neg / 0.1, 1) - w * pos / 0.1
    torch.testing.assert_close(F.dclw(pos, neg, 0.1, sigma, "none"), expected)
    assert w[pos.argmin()] == w.max()


def test_dclw_normaliser_of_the_whole_batch_weights_a_subset_as_in_the_batch() -> None:
    g = torch.Generator().manual_seed(4)
    pos, neg = torch.rand(6, generator=g, dtype=torch.float64), torch.rand(6, 5, generator=g)
    whole = F.dclw(pos, neg.double(), 0.1, 0.5, "none")
    part = F.dclw(pos[:2], neg[:2].double(), 0.1, 0.5, "none", batch_pos=pos)
    torch.testing.assert_close(part, whole[:2], rtol=1e-12, atol=1e-12)
    assert not torch.allclose(F.dclw(pos[:2], neg[:2].double(), 0.1, 0.5, "none"), part)


def test_masked_negatives_are_absent() -> None:
    pos, neg = random_sims(4, 5, seed=21)
    masked = torch.cat([neg, torch.full((4, 3), -math.inf, dtype=torch.float64)], 1)
    for fn in (F.info_nce, F.dcl, F.flatnce, F.hcl, F.dual_temperature):
        torch.testing.assert_close(fn(pos, masked), fn(pos, neg))


# --- modules in the 2N layout --------------------------------------------------------------


def ntxent_layout(z1: torch.Tensor, z2: torch.Tensor) -> list[tuple[float, list[float]]]:
    """Every anchor of SimCLR's 2N views with its positive and its 2N - 2 negatives."""
    z = torch.nn.functional.normalize(torch.cat([z1, z2]), dim=1)
    n2 = z.shape[0]
    out = []
    for i in range(n2):
        j = (i + n2 // 2) % n2
        out.append((float(z[i] @ z[j]), [float(z[i] @ z[a]) for a in range(n2) if a not in (i, j)]))
    return out


@pytest.mark.parametrize("n,d", [(2, 3), (5, 8), (12, 16)])
@pytest.mark.parametrize("tau", [0.1, 0.5])
def test_modules_match_loops_over_2n_anchors(n: int, d: int, tau: float) -> None:
    g = torch.Generator().manual_seed(n + d)
    z1, z2 = (
        torch.randn(n, d, generator=g, dtype=torch.float64),
        torch.randn(n, d, generator=g, dtype=torch.float64),
    )
    layout = ntxent_layout(z1, z2)

    def mean(fn, *args: float) -> float:
        return sum(fn(p, negs, *args) for p, negs in layout) / len(layout)

    assert NTXent(tau)(z1, z2).item() == pytest.approx(mean(ref_info_nce, tau))
    assert DCL(tau)(z1, z2).item() == pytest.approx(mean(ref_dcl, tau))
    assert FlatNCE(tau)(z1, z2).item() == pytest.approx(mean(ref_info_nce, tau))
    assert HCL(tau, 0.1, 1.0)(z1, z2).item() == pytest.approx(mean(ref_hcl, tau, 0.1, 1.0))
    dual = sum(ref_w(p, ng, 1.0) / ref_w(p, ng, tau) * ref_info_nce(p, ng, tau) for p, ng in layout)
    assert DualTemperature(tau, 1.0)(z1, z2).item() == pytest.approx(dual / len(layout))
    pos = torch.tensor([p for p, _ in layout], dtype=torch.float64)
    w = 2 - 2 * n * torch.softmax(pos / 0.5, 0)
    dclw = sum(
        -w[i].item() * p / tau + math.log(sum(math.exp(x / tau) for x in ng))
        for i, (p, ng) in enumerate(layout)
    )
    assert DCLW(tau, 0.5)(z1, z2).item() == pytest.approx(dclw / len(layout))


def test_ntxent_queue_adds_negatives() -> None:
    g = torch.Generator().manual_seed(0)
    z1, z2, queue = (torch.randn(s, 6, generator=g, dtype=torch.float64) for s in (4, 4, 7))
    qn = torch.nn.functional.normalize(queue, dim=1)
    z = torch.nn.functional.normalize(torch.cat([z1, z2]), dim=1)
    layout = [
        (p, negs + (z[i] @ qn.T).tolist()) for i, (p, negs) in enumerate(ntxent_layout(z1, z2))
    ]
    expected = sum(ref_info_nce(p, ng, 0.2) for p, ng in layout) / len(layout)
    assert NTXent(0.2)(z1, z2, queue=queue).item() == pytest.approx(expected)


def test_infonce_cross_view_and_queue_layouts() -> None:
    g = torch.Generator().manual_seed(1)
    q, k, queue = (torch.randn(s, 5, generator=g, dtype=torch.float64) for s in (6, 6, 9))
    qn, kn, un = (torch.nn.functional.normalize(t, dim=1) for t in (q, k, queue))
    cross = [
        ref_info_nce(float(qn[i] @ kn[i]), [float(qn[i] @ kn[j]) for j in range(6) if j != i], 0.1)
        for i in range(6)
    ]
    moco = [ref_info_nce(float(qn[i] @ kn[i]), (qn[i] @ un.T).tolist(), 0.1) for i in range(6)]
    assert InfoNCE(0.1)(q, k).item() == pytest.approx(sum(cross) / 6)
    assert InfoNCE(0.1)(q, k, queue).item() == pytest.approx(sum(moco) / 6)


def test_the_terms_keep_float32_accuracy_where_the_positive_dominates() -> None:
    """``-log P`` near 1e-3 at ``p = pos/τ`` near 10: formed as ``logaddexp(p, l) - p`` it
    lost ``eps·p`` to cancellation (relative error up to ~1e-3 in float32), which MACL's
    weight ``1/W`` multiplies back into the loss; as ``softplus(l - p)`` it keeps ~1e-6."""
    g = torch.Generator().manual_seed(0)
    z1 = torch.randn(9, 6, generator=g)
    z2 = z1 + 0.05 * torch.randn(9, 6, generator=g)
    exact = F.info_nce_terms(*ntxent_negatives(z1.double(), z2.double()), temperature=0.1)
    got = F.info_nce_terms(*ntxent_negatives(z1, z2), temperature=0.1)
    assert float(exact[0].median()) < 2e-2  # most positives dominate
    for term, want in zip(got, exact, strict=True):
        assert float(((term.double() - want) / want).abs().max()) < 2e-5
    for module in (MACL(), MACL(adaptive=False)):
        general = module.similarity_loss(*ntxent_negatives(z1, z2)).item()
        want = module.similarity_loss(*ntxent_negatives(z1.double(), z2.double())).item()
        assert abs(general - want) < 2e-6 * want and abs(module(z1, z2).item() - want) < 2e-6 * want
