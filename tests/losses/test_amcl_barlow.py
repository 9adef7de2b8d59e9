"""AMCL's Barlow Twins row, Eq. (2.3), with Eq. (3)'s Ω terms (channels as anchors).

With ``C = corr[c]`` and ``τ = tau[c]`` per head, the loss under test is
``Σ_l (1 − C_ll/τ_ll)² + λ Σ_{l≠m} C_lm²/τ_lm + β Σ_l [Ω(τ_ll) − mean_{m≠l} Ω(τ_lm)]``,
summed over heads. References are float64 loops written from that formula; gradients are
checked against hand-derived closed forms. The last tests pin the known weakness of the
row: a learned τ⁺ can take the invariance term's place.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch
from amcl_reference import omega_ref

from contrastkit import losses
from contrastkit.cli import main
from contrastkit.losses import AMCL, AdaptiveTemperature
from contrastkit.losses import functional as F


def barlow_ref(corr: torch.Tensor, tau: torch.Tensor, dim: int, lambd: float, beta: float) -> float:
    """Eq. (2.3) + β·Σ_l [Ω(τ⁺_l) − mean_{m≠l} Ω(τ⁻_lm)], summed over heads, by loops."""
    c_l, t_l = corr.double().tolist(), tau.double().tolist()
    total = 0.0
    for c_head, t_head in zip(c_l, t_l, strict=True):
        width = len(c_head)
        for i in range(width):
            total += (1.0 - c_head[i][i] / t_head[i][i]) ** 2 + beta * omega_ref(t_head[i][i], dim)
            for j in range(width):
                if j != i:
                    total += lambd * c_head[i][j] ** 2 / t_head[i][j]
                    total -= beta * omega_ref(t_head[i][j], dim) / (width - 1)
    return total


def random_corr_tau(
    heads: int, width: int, seed: int, dtype: torch.dtype = torch.float64
) -> tuple[torch.Tensor, torch.Tensor]:
    """Correlations in (−1, 1) and temperatures in (0.05, 2)."""
    g = torch.Generator().manual_seed(seed)
    corr = 2 * torch.rand(heads, width, width, generator=g, dtype=torch.float64) - 1
    tau = 0.05 + 1.95 * torch.rand(heads, width, width, generator=g, dtype=torch.float64)
    return corr.to(dtype), tau.to(dtype)


def standardise(z: torch.Tensor) -> torch.Tensor:
    """Barlow Twins' batch standardisation of ``[N, d]`` (mean 0, biased std + 1e-5)."""
    return (z - z.mean(0)) / (z.std(0, unbiased=False) + 1e-5)


@pytest.mark.parametrize("beta", [0.0, 0.01, 2.0])
@pytest.mark.parametrize("lambd", [0.0, 5e-3, 0.3])
@pytest.mark.parametrize(("heads", "width"), [(1, 2), (3, 5), (2, 8)])
def test_matches_loop_reference(heads: int, width: int, lambd: float, beta: float) -> None:
    for seed in (0, 1):
        corr, tau = random_corr_tau(heads, width, seed)
        got = F.amcl_barlow_twins(corr, tau, dim=width, lambd=lambd, beta=beta)
        assert got.dtype == torch.float64 and got.shape == ()
        want = barlow_ref(corr, tau, width, lambd, beta)
        assert got.item() == pytest.approx(want, rel=1e-12, abs=1e-12)
    other_dim = F.amcl_barlow_twins(corr, tau, dim=128, lambd=lambd, beta=beta)
    assert other_dim.item() == pytest.approx(barlow_ref(corr, tau, 128, lambd, beta), rel=1e-12)


@pytest.mark.parametrize("beta", [0.0, 3.0])
def test_unit_temperature_one_head_is_barlow_twins(beta: float) -> None:
    """τ ≡ 1: the Ω terms cancel for any β and Eq. (2.3) is Eq. (1.3) on one head."""
    g = torch.Generator().manual_seed(2)
    z1 = torch.randn(16, 6, generator=g, dtype=torch.float64)
    z2 = z1 + 0.5 * torch.randn(16, 6, generator=g, dtype=torch.float64)
    corr = (standardise(z1).T @ standardise(z2) / 16)[None]
    for lambd in (5e-3, 0.2):
        got = F.amcl_barlow_twins(corr, torch.ones_like(corr), dim=6, lambd=lambd, beta=beta)
        assert got.item() == pytest.approx(F.barlow_twins(z1, z2, lambd).item(), rel=1e-12)


def test_module_with_unit_temperature_is_barlow_twins_on_the_head() -> None:
    torch.manual_seed(3)
    module = AMCL(
        in_dim=10, base="barlow_twins", heads=1, out_dim=6, adapt="none", beta=0.0
    ).double()
    assert module.fixed_temperature == 1.0  # the base's default constant
    h1, h2 = torch.randn(12, 10, dtype=torch.float64), torch.randn(12, 10, dtype=torch.float64)
    with torch.no_grad():
        want = F.barlow_twins(module.projector(h1)[0], module.projector(h2)[0]).item()
        assert module(h1, h2).item() == pytest.approx(want, rel=1e-12)
    assert module.temperature_stats() == {"tau_pos/head0": 1.0, "tau_neg/head0": 1.0}


def test_constant_temperature_closed_form() -> None:
    """τ ≡ t: Σ(1 − C_ll/t)² + λΣ C_lm²/t over heads, whatever β (the Ω terms cancel)."""
    corr, _ = random_corr_tau(3, 5, seed=4)
    diag = torch.diagonal(corr, dim1=1, dim2=2)
    off_sq = corr.pow(2).sum() - diag.pow(2).sum()
    for t in (0.07, 0.5, 1.7):
        want = ((1 - diag / t) ** 2).sum() + 0.01 * off_sq / t
        for beta in (0.0, 5.0):
            got = F.amcl_barlow_twins(corr, torch.full_like(corr, t), dim=5, lambd=0.01, beta=beta)
            assert got.item() == pytest.approx(want.item(), rel=1e-12)


@pytest.mark.parametrize("beta", [0.0, 0.7])
def test_gradients_closed_form(beta: float) -> None:
    """∂/∂C_ll = −2(1 − C_ll/τ_ll)/τ_ll, ∂/∂C_lm = 2λC_lm/τ_lm, and for the temperatures
    ∂/∂τ_ll = 2(1 − C/τ)C/τ² + βΩ'(τ), ∂/∂τ_lm = −λC²/τ² − βΩ'(τ)/(d' − 1)."""
    width, lambd = 5, 0.3
    corr, tau = (x.requires_grad_(True) for x in random_corr_tau(2, width, seed=5))
    loss = F.amcl_barlow_twins(corr, tau, dim=width, lambd=lambd, beta=beta)
    g_corr, g_tau = torch.autograd.grad(loss, (corr, tau))
    c, t = corr.detach(), tau.detach()
    eye = torch.eye(width, dtype=torch.bool)
    d_omega = width / (2 * t) - 1 / t**2
    want_corr = torch.where(eye, -2 * (1 - c / t) / t, 2 * lambd * c / t)
    want_tau = torch.where(
        eye,
        2 * (1 - c / t) * c / t**2 + beta * d_omega,
        -lambd * c**2 / t**2 - beta * d_omega / (width - 1),
    )
    assert torch.allclose(g_corr, want_corr, rtol=1e-12, atol=1e-14)
    assert torch.allclose(g_tau, want_tau, rtol=1e-12, atol=1e-14)


def test_channelwise_temperature_formula_bounds_and_batch_size() -> None:
    temp = AdaptiveTemperature(4, lower=0.1, upper=3.0).double()
    g = torch.Generator().manual_seed(6)
    za, zb = (torch.randn(7, 4, generator=g, dtype=torch.float64) for _ in range(2))
    tau = temp.channelwise(za, zb)
    assert tau.shape == (4, 4)
    fa, fb = temp.phi(za), temp.phi(zb)
    for lo in range(4):
        for m in range(4):
            r = sum(fa[n, lo].item() * fb[n, m].item() for n in range(7)) / 7
            assert tau[lo, m].item() == pytest.approx(2.9 / (1 + math.exp(r)) + 0.1, rel=1e-12)
    twice = temp.channelwise(torch.cat([za, za]), torch.cat([zb, zb]))  # a mean over N
    assert torch.allclose(twice, tau, rtol=1e-12)
    batched = temp.channelwise(torch.stack([za, zb]), torch.stack([zb, za]))
    assert torch.allclose(batched[0], tau, rtol=1e-12)
    with torch.no_grad():
        temp.phi.weight.mul_(1e3)
    for scale in (0.0, 1.0, 1e3):
        t = temp.channelwise(scale * za, scale * zb)
        assert torch.isfinite(t).all() and (t >= 0.1).all() and (t <= 3.0).all()
    # R_ll is the batch mean of φ_l(a)·φ_l(±a), about ±mean (W_l·a)² here (the bias is small
    # beside 1e6-scaled rows): far above 0 for (za, za), far below for (za, -za), whatever
    # φ's random initial weights (off the diagonal the sign depends on them)
    agree, oppose = temp.channelwise(1e3 * za, 1e3 * za), temp.channelwise(1e3 * za, -1e3 * za)
    assert agree.diagonal().max().item() == pytest.approx(0.1)
    assert oppose.diagonal().min().item() == pytest.approx(3.0)
    with pytest.raises(ValueError, match="za and zb must have the same shape"):
        temp.channelwise(za, zb[:5])


def test_module_matches_loop_reference() -> None:
    """Standardisation, C and τ built entry by entry, φ applied to one sample at a time."""
    torch.manual_seed(7)
    heads, n, width = 2, 6, 4
    module = AMCL(
        in_dim=5, base="barlow_twins", heads=heads, out_dim=width, beta=0.3, lambd=0.05, lower=0.05
    ).double()
    h1, h2 = torch.randn(n, 5, dtype=torch.float64), torch.randn(n, 5, dtype=torch.float64)
    temp = module.adaptive_temperature
    with torch.no_grad():
        got = module(h1, h2).item()
        za, zb = module.projector(h1), module.projector(h2)
        corr = torch.empty(heads, width, width, dtype=torch.float64)
        tau = torch.empty_like(corr)
        for c in range(heads):
            a, b = standardise(za[c]), standardise(zb[c])
            pa, pb = [temp.phi(a[i]) for i in range(n)], [temp.phi(b[i]) for i in range(n)]
            for lo in range(width):
                for m in range(width):
                    corr[c, lo, m] = sum(a[i, lo] * b[i, m] for i in range(n)) / n
                    r = sum(pa[i][lo] * pb[i][m] for i in range(n)) / n
                    tau[c, lo, m] = temp.squash(r)
    assert got == pytest.approx(barlow_ref(corr, tau, width, 0.05, 0.3), rel=1e-10)
    # on standardised (mean-0) inputs the channel products reduce to R = W C Wᵀ + b bᵀ:
    # τ is a learned function of the very correlation matrix it divides
    w, bias = temp.phi.weight.detach(), temp.phi.bias.detach()
    assert torch.allclose(
        tau, temp.squash(w @ corr @ w.T + torch.outer(bias, bias)), rtol=1e-9, atol=1e-12
    )
    stats = module.temperature_stats()
    off = ~torch.eye(width, dtype=torch.bool)
    for c in range(heads):
        assert stats[f"tau_pos/head{c}"] == pytest.approx(tau[c].diagonal().mean().item())
        assert stats[f"tau_neg/head{c}"] == pytest.approx(tau[c][off].mean().item())


@pytest.mark.parametrize("adapt", ["pos", "neg"])
def test_ablations_fix_one_side(adapt: str) -> None:
    torch.manual_seed(8)
    module = AMCL(in_dim=8, base="barlow_twins", heads=2, out_dim=6, adapt=adapt, temperature=0.6)
    module(torch.randn(10, 8), torch.randn(10, 8))
    stats = module.temperature_stats()
    fixed, learned = ("tau_neg", "tau_pos") if adapt == "pos" else ("tau_pos", "tau_neg")
    assert stats[f"{fixed}/head1"] == pytest.approx(0.6)
    assert stats[f"{learned}/head1"] != pytest.approx(0.6, abs=1e-3)


def test_gradients_reach_phi_and_every_head() -> None:
    torch.manual_seed(9)
    module = AMCL(in_dim=12, base="barlow_twins", heads=3, out_dim=16)
    h1 = torch.randn(8, 12, requires_grad=True)
    module(h1, torch.randn(8, 12)).backward()
    assert h1.grad is not None and h1.grad.abs().sum() > 0
    assert module.adaptive_temperature.phi.weight.grad.abs().sum() > 0
    for p in (module.projector.w1, module.projector.b1, module.projector.w2):
        assert all(p.grad[c].abs().sum() > 0 for c in range(3))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_finite_at_temperature_bounds(dtype: torch.dtype) -> None:
    """τ ∈ {1e-5, 2}, d' = 128, β = 10: computed and returned in float32, finite."""
    corr, _ = random_corr_tau(2, 128, seed=10)
    g = torch.Generator().manual_seed(11)
    tau = torch.where(torch.rand(corr.shape, generator=g) < 0.5, 1e-5, 2.0).double()
    tau[0] = 1e-5
    leaves = [x.to(dtype).requires_grad_(True) for x in (corr, tau)]
    loss = F.amcl_barlow_twins(*leaves, dim=128, beta=10.0)
    assert loss.dtype == torch.float32 and torch.isfinite(loss)
    want = barlow_ref(leaves[0].detach(), leaves[1].detach(), 128, 5e-3, 10.0)
    assert loss.item() == pytest.approx(want, rel=1e-5)
    for grad in torch.autograd.grad(loss, leaves):
        assert grad.dtype == dtype and torch.isfinite(grad).all()
    module = AMCL(in_dim=16, base="barlow_twins", heads=2, out_dim=128, beta=10.0)
    with torch.no_grad():
        module.adaptive_temperature.phi.weight.mul_(1e3)  # τ pinned at the bounds
    h1 = torch.randn(32, 16, requires_grad=True)
    value = module(h1, h1.detach() + 0.1 * torch.randn(32, 16))
    value.backward()
    assert torch.isfinite(value) and torch.isfinite(h1.grad).all()


def test_bad_inputs_name_the_argument() -> None:
    corr, tau = random_corr_tau(2, 4, seed=12)
    cases: list[tuple[type[Exception], str, dict]] = [
        (TypeError, "corr", dict(corr=corr.tolist())),
        (TypeError, "corr", dict(corr=corr.long())),
        (TypeError, "tau", dict(tau=2.0)),
        (ValueError, r"corr must have shape \[C, d', d'\]", dict(corr=corr[0])),
        (ValueError, r"corr must have shape \[C, d', d'\]", dict(corr=corr[:, :3])),
        (ValueError, "d' >= 2", dict(corr=corr[:, :1, :1], tau=tau[:, :1, :1])),
        (ValueError, "tau must have corr's shape", dict(tau=tau[:1])),
        (ValueError, "tau must hold finite temperatures > 0", dict(tau=-tau)),
        (ValueError, "dim", dict(dim=0)),
        (ValueError, "lambd", dict(lambd=-1.0)),
        (ValueError, "beta", dict(beta=math.inf)),
    ]
    for exc, match, change in cases:
        with pytest.raises(exc, match=match):
            F.amcl_barlow_twins(**{"corr": corr, "tau": tau, "dim": 4, **change})
    with pytest.raises(ValueError, match="lambd"):
        AMCL(in_dim=4, base="barlow_twins", lambd=-0.1)


def test_registry_defaults_per_base() -> None:
    bt = losses.get("amcl", in_dim=12, base="barlow_twins")
    assert (bt.beta, bt.lambd, bt.fixed_temperature) == (0.0, 5e-3, 1.0)
    for base in ("ntxent", "infonce", "simsiam"):
        other = losses.get("amcl", in_dim=12, base=base)
        assert (other.beta, other.fixed_temperature) == (10.0, 0.1)
    assert losses.get("amcl", in_dim=12, base="barlow_twins", beta=2.0).beta == 2.0
    with pytest.raises(ValueError, match="'barlow_twins'"):  # the message lists it
        losses.get("amcl", in_dim=12, base="vicreg")


def _invariance(corr: torch.Tensor, tau: torch.Tensor) -> torch.Tensor:
    return (1 - corr.diagonal(dim1=-2, dim2=-1) / tau.diagonal(dim1=-2, dim2=-1)).pow(2).sum()


def test_pathology_learned_tau_absorbs_the_invariance_term() -> None:
    """β = 0, embeddings fixed, only φ trained: the on-diagonal term collapses with C
    unchanged, because τ⁺_l moves onto C_ll. Plain Barlow Twins cannot lower it this way."""
    torch.manual_seed(13)
    n, width = 128, 8
    z1 = torch.randn(n, width)
    z2 = 0.6 * z1 + 0.8 * torch.randn(n, width)  # C_ll around 0.6, not 1
    a, b = standardise(z1)[None], standardise(z2)[None]
    corr = a.transpose(1, 2) @ b / n
    temp = AdaptiveTemperature(width)
    with torch.no_grad():
        before = _invariance(corr, temp.channelwise(a, b)).item()
    optimizer = torch.optim.Adam(temp.parameters(), lr=0.02)
    for _ in range(300):
        loss = F.amcl_barlow_twins(corr, temp.channelwise(a, b), dim=width, beta=0.0)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    with torch.no_grad():
        tau = temp.channelwise(a, b)
    after = _invariance(corr, tau).item()
    plain = (1 - corr.diagonal(dim1=1, dim2=2)).pow(2).sum().item()
    assert before > 0.5 and after < before / 100 and after < plain / 100
    assert torch.allclose(tau[0].diagonal(), corr[0].diagonal(), atol=0.01)
    # at C_ll = τ⁺_l the invariance gradient −2(1 − C/τ)/τ is exactly 0, so nothing
    # pushes C_ll up toward 1
    on_tau = corr.detach().clone().requires_grad_(True)
    tied = torch.where(torch.eye(width, dtype=torch.bool), on_tau.detach(), 1.0)
    (grad,) = torch.autograd.grad(F.amcl_barlow_twins(on_tau, tied, dim=width), on_tau)
    assert torch.equal(grad.diagonal(dim1=1, dim2=2), torch.zeros(1, width))


def test_pathology_omega_moves_the_invariance_target_to_2_over_d() -> None:
    """β > 0: minimising jointly over C_ll and τ⁺_l ends at C_ll = τ⁺_l = 2/d', not at
    C_ll = 1 (Ω is minimised at 2/d', and (1 − C/τ)² then wants C = τ)."""
    width = 8
    eye = torch.eye(width, dtype=torch.bool)
    diag_c = torch.full((width,), 0.5, requires_grad=True)
    log_tau = torch.zeros(width, requires_grad=True)  # τ⁺ = 1 to start
    # lr 0.03: converged to ~1e-7 of 2/d' within 800 steps (lr 0.01 needed 3000)
    optimizer = torch.optim.Adam([diag_c, log_tau], lr=0.03)
    for _ in range(800):
        corr = torch.diag_embed(diag_c)[None]
        tau = torch.where(eye, torch.diag_embed(log_tau.exp()), 1.0)[None]
        loss = F.amcl_barlow_twins(corr, tau, dim=width, beta=1.0)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    assert torch.allclose(log_tau.exp(), torch.full((width,), 2 / width), rtol=0.02)
    assert torch.allclose(diag_c, torch.full((width,), 2 / width), rtol=0.02)


def test_train_cli_runs_amcl_barlow_twins(tmp_path: Path) -> None:
    out = tmp_path / "run"
    argv = [
        "train",
        "--framework",
        "simclr",
        "--loss",
        "amcl",
        "--heads",
        "2",
        "--loss-arg",
        "base=barlow_twins",
        "--loss-arg",
        "out_dim=16",
        "--dataset",
        "digits",
        "--batch-size",
        "128",
        "--feature-dim",
        "16",
        "--width",
        "4",
        "--threads",
        "1",
        "--no-progress",
        "--knn-k",
        "50",
        "--epochs",
        "1",
        "--out",
        str(out),
    ]
    assert main(argv) == 0
    final = json.loads((out / "final.json").read_text())
    assert final["config"]["loss_args"] == {"heads": 2, "base": "barlow_twins", "out_dim": 16}
    assert 0.0 <= final["knn_accuracy"] <= 1.0
    record = json.loads((out / "metrics.jsonl").read_text().splitlines()[-1])
    assert math.isfinite(record["loss"])
    assert {"tau_pos/head1", "tau_neg/head1", "tau_pos_mean"} <= set(record)
