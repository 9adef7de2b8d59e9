"""AMCL's adaptive temperature (σ of §3.2) and the AMCL module (Table 2 bases, Fig. 5).

References are slow float64 loops written from the paper's equations, independent of the
vectorised code under test.
"""

from __future__ import annotations

import itertools
import math

import pytest
import torch
from amcl_reference import _module_reference, _unit, omega_ref

from contrastkit import losses
from contrastkit.losses import AMCL, AdaptiveTemperature
from contrastkit.losses import functional as F
from contrastkit.losses.amcl import _ADAPT


def test_temperature_stays_in_bounds_for_any_input():
    temp = AdaptiveTemperature(16, lower=1e-5, upper=2.0)
    with torch.no_grad():
        temp.phi.weight.mul_(100.0)
    g = torch.Generator().manual_seed(0)
    for scale in (0.0, 1e-3, 1.0, 1e3, 1e6):
        za, zb = (scale * torch.randn(64, 16, generator=g) for _ in range(2))
        for a, b in ((za, zb), (za, za), (za, -za)):
            tau = temp(a, b)
            assert tau.shape == (64,)
            assert torch.isfinite(tau).all() and (tau >= 1e-5).all() and (tau <= 2.0).all()
    big = 1e3 * torch.randn(8, 16, generator=g)
    assert torch.allclose(temp(big, big), torch.full((8,), 1e-5), rtol=0, atol=1e-7)  # r → +∞
    assert torch.allclose(temp(big, -big), torch.full((8,), 2.0))  # r → -∞


def test_temperature_formula_and_direction():
    temp = AdaptiveTemperature(4, lower=0.1, upper=3.0).double()
    g = torch.Generator().manual_seed(1)
    za, zb = (torch.randn(5, 4, generator=g, dtype=torch.float64) for _ in range(2))
    w, b = temp.phi.weight.detach(), temp.phi.bias.detach()
    for i in range(5):
        r = float((w @ za[i] + b) @ (w @ zb[i] + b))
        assert temp(za[i], zb[i]).item() == pytest.approx(2.9 / (1 + math.exp(r)) + 0.1, rel=1e-12)
    with torch.no_grad():  # φ = identity: r = ⟨za, zb⟩, and σ decreases in r
        temp.phi.weight.copy_(torch.eye(4))
        temp.phi.bias.zero_()
    u = torch.nn.functional.normalize(za[:1], dim=-1)
    taus = [temp(u, c * u).item() for c in (-2.0, -0.5, 0.0, 0.5, 2.0)]
    assert all(a > b for a, b in itertools.pairwise(taus))


def test_temperature_broadcasts_to_the_pairwise_matrix():
    temp = AdaptiveTemperature(6)
    za, zb = torch.randn(3, 5, 6), torch.randn(3, 4, 6)
    full = temp(za[:, :, None], zb[:, None])
    assert full.shape == (3, 5, 4)
    assert torch.allclose(full, temp.pairwise(za, zb), atol=1e-6)


def test_temperature_bad_arguments():
    with pytest.raises(ValueError, match="0 < lower < upper"):
        AdaptiveTemperature(4, lower=2.0, upper=1.0)
    with pytest.raises(ValueError, match=r"za must have shape \[\.\.\., 4\]"):
        AdaptiveTemperature(4)(torch.randn(3, 5), torch.randn(3, 4))
    with pytest.raises(ValueError, match="must broadcast"):
        AdaptiveTemperature(4)(torch.randn(3, 4), torch.randn(2, 4))


def test_registered_as_features_loss():
    assert losses.info("amcl").inputs == "features"
    assert "amcl" in losses.available(inputs="features")
    loss = losses.get("amcl", in_dim=12, heads=3)
    assert isinstance(loss, AMCL) and loss.heads == 3 and loss.out_dim == 128
    with pytest.raises(ValueError, match="base must be one of"):
        losses.get("amcl", in_dim=12, base="vicreg")


@pytest.mark.parametrize("base", ["ntxent", "infonce"])
@pytest.mark.parametrize("negatives", ["topk", "softmax"])
def test_module_matches_2n_layout_reference(base, negatives):
    torch.manual_seed(0)
    module = AMCL(
        in_dim=10,
        base=base,
        heads=2,
        out_dim=6,
        hidden=12,
        beta=0.5,
        negatives=negatives,
        kappa=3,
        lower=0.05,
        upper=2.0,
    ).double()
    h1, h2 = torch.randn(5, 10, dtype=torch.float64), torch.randn(5, 10, dtype=torch.float64)
    with torch.no_grad():
        got = module(h1, h2).item()
        want = _module_reference(module, h1, h2)
    assert got == pytest.approx(want, rel=1e-9)


def test_module_simsiam_matches_eq_2_2():
    """Eq. (2.2) per head and sample, τ from single-pair calls of φ on the unit vectors."""
    torch.manual_seed(1)
    module = AMCL(in_dim=10, base="simsiam", heads=2, out_dim=8, beta=0.5, lower=0.05).double()
    h1, h2 = torch.randn(4, 10, dtype=torch.float64), torch.randn(4, 10, dtype=torch.float64)
    with torch.no_grad():
        got = module(h1, h2).item()
        z1, z2 = module.projector(h1), module.projector(h2)
        p1, p2 = module.predictor(z1), module.predictor(z2)
        cos = torch.nn.functional.cosine_similarity
        want = 0.0
        for c in range(2):
            for i in range(4):
                for p, t in ((p1[c, i], z2[c, i]), (p2[c, i], z1[c, i])):
                    tau = module.adaptive_temperature(_unit(p), _unit(t)).item()
                    want += -cos(p, t, dim=0).item() / (2 * tau) + 0.5 * omega_ref(tau, 8)
    assert got == pytest.approx(want / 4, rel=1e-9)


def test_module_simsiam_stops_gradient_at_the_targets():
    """Only the predictor path carries gradient: a loss on sg targets gives the same grads."""
    torch.manual_seed(7)
    module = AMCL(in_dim=6, base="simsiam", heads=2, out_dim=8, beta=0.5).double()
    h1, h2 = torch.randn(4, 6, dtype=torch.float64), torch.randn(4, 6, dtype=torch.float64)
    (got,) = torch.autograd.grad(module(h1, h2), module.projector.w1)
    z1, z2 = module.projector(h1), module.projector(h2)
    p1, p2 = _unit(module.predictor(z1)), _unit(module.predictor(z2))
    t1, t2 = _unit(z1).detach(), _unit(z2).detach()
    tau = [module.adaptive_temperature(p, t) for p, t in ((p1, t2), (p2, t1))]
    sims = [(p1 * t2).sum(-1), (p2 * t1).sum(-1)]
    ref = F.amcl_simsiam(*sims, *tau, dim=8, beta=0.5)
    (want,) = torch.autograd.grad(ref, module.projector.w1, retain_graph=True)
    assert torch.allclose(got, want, rtol=1e-10)
    (no_sg,) = torch.autograd.grad(  # the same loss without stop-gradient differs
        F.amcl_simsiam((p1 * _unit(z2)).sum(-1), (p2 * _unit(z1)).sum(-1), *tau, dim=8, beta=0.5),
        module.projector.w1,
    )
    assert not torch.allclose(got, no_sg, rtol=1e-3)


@pytest.mark.parametrize("base", ["ntxent", "infonce", "simsiam"])
def test_gradients_reach_phi_and_every_head(base):
    torch.manual_seed(2)
    module = AMCL(in_dim=12, base=base, heads=3, out_dim=16, kappa=5)
    h1 = torch.randn(6, 12, requires_grad=True)
    module(h1, torch.randn(6, 12)).backward()
    assert h1.grad is not None and h1.grad.abs().sum() > 0
    assert module.adaptive_temperature.phi.weight.grad.abs().sum() > 0
    heads = [module.projector] + ([module.predictor] if base == "simsiam" else [])
    for mlp in heads:
        for p in (mlp.w1, mlp.b1, mlp.w2, mlp.b2):
            assert all(p.grad[c].abs().sum() > 0 for c in range(3))
    owned = {id(p) for p in module.parameters()}
    assert {id(module.adaptive_temperature.phi.weight), id(module.projector.w1)} <= owned


def test_temperature_stats_per_head():
    torch.manual_seed(3)
    module = AMCL(in_dim=8, heads=2, out_dim=4)
    assert module.temperature_stats() == {}
    h1, h2 = torch.randn(5, 8), torch.randn(5, 8)
    module(h1, h2)
    stats = module.temperature_stats()
    assert sorted(stats) == ["tau_neg/head0", "tau_neg/head1", "tau_pos/head0", "tau_pos/head1"]
    with torch.no_grad():
        z = _unit(torch.cat([module.projector(h1), module.projector(h2)], 1))
        tau = module.adaptive_temperature.pairwise(z, z)
    idx = torch.arange(10)
    partner = (idx + 5) % 10
    keep = torch.ones(10, 10, dtype=torch.bool)
    keep[idx, idx] = False
    keep[idx, partner] = False
    for c in range(2):
        mean_pos, mean_neg = tau[c, idx, partner].mean().item(), tau[c][keep].mean().item()
        assert stats[f"tau_pos/head{c}"] == pytest.approx(mean_pos, rel=1e-5)
        assert stats[f"tau_neg/head{c}"] == pytest.approx(mean_neg, rel=1e-5)
    simsiam = AMCL(in_dim=8, heads=2, out_dim=4, base="simsiam")
    simsiam(h1, h2)
    assert sorted(simsiam.temperature_stats()) == ["tau_pos/head0", "tau_pos/head1"]


@pytest.mark.parametrize("base", ["ntxent", "infonce", "simsiam"])
def test_module_finite_when_temperatures_saturate(base):
    torch.manual_seed(4)
    module = AMCL(in_dim=16, base=base, heads=3, out_dim=128, beta=10.0)
    with torch.no_grad():
        module.adaptive_temperature.phi.weight.mul_(1e3)  # |r| huge: τ pinned at 1e-5 or 2
    h1 = torch.randn(8, 16, requires_grad=True)
    loss = module(h1, h1.detach() + 0.01 * torch.randn(8, 16))
    loss.backward()
    assert torch.isfinite(loss)
    assert all(torch.isfinite(p.grad).all() for p in module.parameters() if p.grad is not None)
    assert torch.isfinite(h1.grad).all()


def test_module_input_checks():
    module = AMCL(in_dim=8, heads=2)
    with pytest.raises(ValueError, match="h2 must have the shape of h1"):
        module(torch.randn(4, 8), torch.randn(5, 8))
    with pytest.raises(ValueError, match=r"h must have shape \[N, 8\]"):
        module(torch.randn(4, 7), torch.randn(4, 7))
    with pytest.raises(ValueError, match="kappa"):
        AMCL(in_dim=8, kappa=0)


@pytest.mark.parametrize(
    ("base", "reference"), [("ntxent", losses.DCL), ("infonce", losses.NTXent)]
)
def test_module_with_global_temperature_is_the_base_loss(base, reference):
    """adapt="none", one head, softmax: Eq. (2.1) → DCL and Eq. (2.4) → NT-Xent (§4.3)."""
    torch.manual_seed(5)
    module = AMCL(
        in_dim=10,
        base=base,
        heads=1,
        out_dim=6,
        negatives="softmax",
        beta=2.0,
        adapt="none",
        temperature=0.3,
    ).double()
    h1, h2 = torch.randn(6, 10, dtype=torch.float64), torch.randn(6, 10, dtype=torch.float64)
    with torch.no_grad():
        z1, z2 = module.projector(h1)[0], module.projector(h2)[0]
        assert module(h1, h2).item() == pytest.approx(reference(0.3)(z1, z2).item(), rel=1e-10)
    assert module.temperature_stats()["tau_pos/head0"] == pytest.approx(0.3)


@pytest.mark.parametrize("adapt", ["pos", "neg"])
def test_fig5_ablations_fix_one_side(adapt):
    torch.manual_seed(6)
    module = AMCL(in_dim=8, heads=2, out_dim=4, adapt=adapt, temperature=0.2)
    module(torch.randn(5, 8), torch.randn(5, 8))
    stats = module.temperature_stats()
    fixed, learned = ("tau_neg", "tau_pos") if adapt == "pos" else ("tau_pos", "tau_neg")
    assert stats[f"{fixed}/head1"] == pytest.approx(0.2)
    assert stats[f"{learned}/head1"] != pytest.approx(0.2, abs=1e-3)
    with pytest.raises(ValueError, match="adapt must be one of"):
        AMCL(in_dim=8, adapt="half")


def test_runaway_diagnostic_counts_the_negatives_below_their_critical_temperature():
    """τ⁻ set to half or twice each pair's ``τ_c = 2(β − s)/(βd')`` by a known pattern: the
    diagnostic is the pattern's share of the present negatives, per head."""
    torch.manual_seed(7)
    beta, dim, n = 10.0, 16, 6
    module = AMCL(in_dim=8, heads=2, out_dim=dim, beta=beta)
    below = torch.rand(2, 2 * n, 2 * n) < 0.3

    def pairwise(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        critical = 2 * (beta - a @ b.transpose(1, 2)) / (beta * dim)
        return critical * torch.where(below, 0.5, 2.0)

    module.adaptive_temperature.pairwise = pairwise
    module(torch.randn(n, 8), torch.randn(n, 8))
    idx = torch.arange(2 * n)
    present = torch.ones(2 * n, 2 * n, dtype=torch.bool)
    present[idx, idx] = present[idx, (idx + n) % (2 * n)] = False
    stats = module.diagnostics()
    for c in range(2):
        want = (below[c] & present).sum().item() / present.sum().item()
        assert stats[f"tau_neg_runaway/head{c}"] == pytest.approx(want)
    assert stats["tau_neg_runaway_mean"] == pytest.approx(below[:, present].float().mean().item())
    fixed = AMCL(in_dim=8, heads=2, out_dim=dim, adapt="pos")
    fixed(torch.randn(n, 8), torch.randn(n, 8))
    assert not any(k.startswith("tau_neg_runaway") for k in fixed.diagnostics())


@pytest.mark.parametrize(
    ("base", "adapt"), list(itertools.product(("ntxent", "simsiam", "barlow_twins"), _ADAPT))
)
def test_every_trainable_parameter_gets_a_gradient(base: str, adapt: str) -> None:
    """DDP (the trainer wraps the framework, loss included) fails at the next step when a
    parameter that requires grad got none; so φ is frozen where no temperature is learned
    (``adapt="none"``, and SimSiam's ``"neg"``), and learns where one is."""
    torch.manual_seed(0)
    amcl = AMCL(in_dim=6, heads=2, out_dim=4, hidden=5, base=base, adapt=adapt)
    amcl(torch.randn(8, 6), torch.randn(8, 6)).backward()
    missing = [n for n, p in amcl.named_parameters() if p.requires_grad and p.grad is None]
    assert not missing
    learns = adapt != "none" and not (base == "simsiam" and adapt == "neg")
    assert all(p.requires_grad == learns for p in amcl.adaptive_temperature.parameters())


def test_temperature_bounds_are_checked_where_they_apply() -> None:
    """With ``adapt="both"`` no fixed τ is used, so a default one outside a user's
    ``[lower, upper]`` is no error (``lower=0.2`` was refused over the unused 0.1);
    inverted bounds name the bounds; a fixed τ that is used, or given, is checked."""
    assert losses.get("amcl", in_dim=8, lower=0.2).adaptive_temperature.lower == 0.2
    with pytest.raises(ValueError, match="loss 'amcl': lower must be below upper"):
        losses.get("amcl", in_dim=8, lower=1.0, upper=0.5)
    with pytest.raises(ValueError, match=r"loss 'amcl': temperature must lie in .* got 0.1"):
        losses.get("amcl", in_dim=8, lower=0.2, adapt="pos")
    with pytest.raises(ValueError, match=r"temperature must lie in .* got 5.0"):
        losses.get("amcl", in_dim=8, temperature=5.0)
