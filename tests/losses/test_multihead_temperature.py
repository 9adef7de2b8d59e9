"""AMCL Table 4's baselines (TaU, cosine temperature schedule) and Fig. 5's "τ from head 1",
against float64 loops written from the formulas."""

from __future__ import annotations

import math

import pytest
import torch

from contrastkit import losses
from contrastkit.losses import AMCL, CosineTemperature, TemperatureAsUncertainty


def ntxent_loop(z1: torch.Tensor, z2: torch.Tensor, tau: list[float]) -> float:
    """Mean over the 2N anchors of -s_ip/τ_i + log Σ_{j≠i} exp(s_ij/τ_i), one head."""
    z = torch.cat([z1, z2]).tolist()
    n2 = len(z)
    unit = [[x / math.sqrt(sum(v * v for v in row)) for x in row] for row in z]
    total = 0.0
    for i in range(n2):
        s = [sum(a * b for a, b in zip(unit[i], unit[j], strict=True)) for j in range(n2)]
        partner = (i + n2 // 2) % n2
        lse = math.log(sum(math.exp(s[j] / tau[i]) for j in range(n2) if j != i))
        total += lse - s[partner] / tau[i]
    return total / n2


def test_tau_uncertainty_matches_the_loop_per_head() -> None:
    torch.manual_seed(0)
    loss = TemperatureAsUncertainty(in_dim=6, heads=2, out_dim=4, lower=0.1, upper=0.9).double()
    h1, h2 = torch.randn(5, 6, dtype=torch.float64), torch.randn(5, 6, dtype=torch.float64)
    value = loss(h1, h2)
    p1, p2 = loss.projector(h1), loss.projector(h2)
    expected = 0.0
    for c in range(2):
        u = torch.cat([p1[c, :, -1], p2[c, :, -1]]).tolist()
        tau = [0.1 + 0.8 / (1 + math.exp(-x)) for x in u]
        expected += ntxent_loop(p1[c, :, :-1], p2[c, :, :-1], tau)
    assert value.item() == pytest.approx(expected, rel=1e-12)
    u = torch.cat([p1[..., -1], p2[..., -1]], dim=1)
    mean_tau = (0.1 + 0.8 * torch.sigmoid(u)).mean().item()
    assert loss.diagnostics() == {"temperature": pytest.approx(mean_tau, rel=1e-12)}


def test_cosine_schedule_values_step_counter_and_loss() -> None:
    torch.manual_seed(1)
    loss = CosineTemperature(in_dim=6, heads=3, out_dim=4, period=4).double()
    assert [loss.temperature(t) for t in (0, 1, 2, 3, 4)] == pytest.approx(
        [1.0, 0.55, 0.1, 0.55, 1.0]
    )
    h1, h2 = torch.randn(4, 6, dtype=torch.float64), torch.randn(4, 6, dtype=torch.float64)
    first = loss(h1, h2)  # step 0: τ = 1
    p1, p2 = loss.projector(h1), loss.projector(h2)
    expected = sum(ntxent_loop(p1[c], p2[c], [1.0] * 8) for c in range(3))
    assert first.item() == pytest.approx(expected, rel=1e-12)
    assert int(loss.step) == 1 and loss.diagnostics() == {"temperature": 1.0}
    loss(h1, h2)
    assert loss.diagnostics()["temperature"] == pytest.approx(0.55)
    loss.eval()
    loss(h1, h2)
    assert int(loss.step) == 2  # evaluation calls do not advance the schedule
    assert "step" in loss.state_dict()  # resumed runs continue the schedule


def test_float32_inputs_stay_float32_and_registry_builds_them() -> None:
    for name in ("tau_uncertainty", "cosine_temperature"):
        info = losses.info(name)
        assert info.inputs == "features" and info.diagnostics  # their τ reaches the logs
        loss = losses.get(name, in_dim=8)
        assert loss.diagnostics() == {}  # before the first call
        out = loss(torch.randn(6, 8), torch.randn(6, 8))
        assert out.dtype == torch.float32 and torch.isfinite(out)
    with pytest.raises(ValueError, match="period"):
        CosineTemperature(in_dim=4, period=0)
    with pytest.raises(ValueError, match="lower < upper"):
        TemperatureAsUncertainty(in_dim=4, lower=1.0, upper=0.5)


def test_amcl_head1_copies_the_first_heads_temperatures() -> None:
    torch.manual_seed(2)
    each = AMCL(in_dim=6, heads=3, out_dim=4).double()
    head1 = AMCL(in_dim=6, heads=3, out_dim=4, temperature_source="head1").double()
    head1.load_state_dict(each.state_dict())
    h1, h2 = torch.randn(5, 6, dtype=torch.float64), torch.randn(5, 6, dtype=torch.float64)
    each(h1, h2)
    head1(h1, h2)
    stats_each, stats_head1 = each.temperature_stats(), head1.temperature_stats()
    for c in range(3):  # every head now reports head 0's temperatures
        assert stats_head1[f"tau_pos/head{c}"] == pytest.approx(stats_each["tau_pos/head0"])
    assert stats_each["tau_pos/head1"] != pytest.approx(stats_each["tau_pos/head0"])
    with pytest.raises(ValueError, match="temperature_source"):
        AMCL(in_dim=6, base="simsiam", temperature_source="head1")


@pytest.mark.parametrize("name", ["tau_uncertainty", "cosine_temperature", "amcl"])
def test_the_loss_comes_in_the_embeddings_dtype_whatever_the_heads(name: str) -> None:
    """float32 for float32 embeddings with heads cast to bfloat16 (as every registered
    loss promises), float64 for float64 ones (TaU returned its heads' dtype)."""
    for module_dtype, input_dtype in ((torch.bfloat16, torch.float32), (None, torch.float64)):
        loss = losses.get(name, in_dim=8)
        loss = loss if module_dtype is None else loss.to(module_dtype)
        h = torch.randn(2, 6, 8, dtype=input_dtype)
        assert loss(h[0], h[1]).dtype == input_dtype
