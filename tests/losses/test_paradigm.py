"""Li, Zhang & Nie (ACL 2024): the paradigm loss Eq. (5) and Table 1 / Eq. (1)-(4) for
InfoNCE, ArcCon, MPT and MET, against loop-based float64 references written here."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable

import pytest
import torch
from torch import Tensor

from contrastkit import losses
from contrastkit.losses import functional as F
from contrastkit.losses.views import cross_view_similarities

U = math.radians(10.0)


def views(n: int = 8, d: int = 16, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Unit-norm views whose positives range from close to far, so that some anchors pass
    the m = 0.3 indicator and some do not."""
    g = torch.Generator().manual_seed(seed)
    h = torch.nn.functional.normalize(torch.randn(n, d, generator=g, dtype=torch.float64), dim=1)
    noise = torch.linspace(0.2, 2.0, n, dtype=torch.float64)[:, None]
    hp = h + noise * torch.randn(n, d, generator=g, dtype=torch.float64) / math.sqrt(d)
    return h, torch.nn.functional.normalize(hp, dim=1)


def dot(x: torch.Tensor, y: torch.Tensor) -> float:
    return sum(float(a) * float(b) for a, b in zip(x, y, strict=True))


Comp = tuple[float, dict[int, float], dict[int, float]]


def ref_components(
    h: Tensor,
    hp: Tensor,
    i: int,
    gd: str,
    weight: str,
    ratio_kind: str,
    m: float = 0.3,
    tau: float = 0.05,
    r: float = 1.0,
) -> Comp:
    """One anchor's (GD, {j: W_ij}, {j: R_ij}) from Table 1, in plain Python."""
    n = len(h)
    pos = dot(h[i], hp[i])
    s = {j: dot(h[i], hp[j]) for j in range(n) if j != i}
    hardest = max(s, key=s.get)
    if gd == "indicator":
        g = 1.0 if pos - s[hardest] < m else 0.0
    elif gd == "fraction":
        g = 1.0 / (1.0 + math.exp(pos / tau) / sum(math.exp(v / tau) for v in s.values()))
    else:
        g = 1.0
    if weight == "softmax":
        z = sum(math.exp(v / tau) for v in s.values())
        w = {j: math.exp(v / tau) / z for j, v in s.items()}
    elif weight == "hardest":
        w = {j: float(j == hardest) for j in s}
    else:
        w = {j: 1.0 / (n - 1) for j in s}
    theta = math.acos(pos)
    if ratio_kind == "static":
        rr = dict.fromkeys(s, r)
    elif ratio_kind == "arccon":
        rr = dict.fromkeys(s, math.sin(theta + U) / math.sin(theta))
    else:
        rr = {j: math.sqrt((1 - v) / (1 - pos)) for j, v in s.items()}
    return g, w, rr


def paradigm_gradient(h: Tensor, hp: Tensor, comps: list[Comp]) -> Tensor:
    """Eq. (4) per anchor: GD Σ_j W_ij (hp_j − R_ij hp_i), from components given as loops."""
    rows = []
    for i, (g, w, rr) in enumerate(comps):
        v = torch.zeros_like(h[i])
        for j in w:
            v += w[j] * (hp[j] - rr[j] * hp[i])
        rows.append(g * v)
    return torch.stack(rows)


def tangent(v: torch.Tensor, at: torch.Tensor) -> torch.Tensor:
    return v - (v * at).sum(dim=1, keepdim=True) * at


def autograd_tangent(fn: Callable[[Tensor, Tensor], Tensor], h: Tensor, hp: Tensor) -> Tensor:
    x = h.clone().requires_grad_(True)
    (g,) = torch.autograd.grad(fn(x, hp), x)
    return tangent(g, h)


KINDS = list(
    itertools.product(
        ("indicator", "fraction", "none"),
        ("softmax", "hardest", "uniform"),
        ("static", "arccon", "met"),
    )
)


@pytest.mark.parametrize("gd,weight,ratio_kind", KINDS)
def test_paradigm_value_and_eq4_gradient(gd: str, weight: str, ratio_kind: str) -> None:
    h, hp = views()
    n = len(h)
    comps = [ref_components(h, hp, i, gd, weight, ratio_kind, r=1.3) for i in range(n)]
    if gd == "indicator":
        assert 0 < sum(c[0] for c in comps) < n  # both GD = 0 and GD = 1 anchors occur
    per_anchor = [
        g * sum(w[j] * (dot(h[i], hp[j]) - rr[j] * dot(h[i], hp[i])) for j in w)
        for i, (g, w, rr) in enumerate(comps)
    ]

    def loss(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return F.paradigm(
            a, b, ratio=1.3, gd=gd, weight=weight, ratio_kind=ratio_kind, symmetric=False
        )

    assert loss(h, hp).item() == pytest.approx(sum(per_anchor) / n, rel=1e-10, abs=1e-12)
    expected = tangent(paradigm_gradient(h, hp, comps), h) / n
    torch.testing.assert_close(autograd_tangent(loss, h, hp), expected, rtol=1e-9, atol=1e-12)


def test_infonce_gradient_is_table_1() -> None:
    """SimCSE-layout InfoNCE (negatives hp_j, j ≠ i): GD = 1/(1 + e^{pos/τ}/Σ e^{neg/τ}),
    W = e^{s_ij/τ}/(τ Σ_k e^{s_ik/τ}), R = 1 (Eq. 1, Table 1)."""
    h, hp = views(seed=1)
    tau = 0.05
    comps = []
    for i in range(len(h)):
        g, w, _ = ref_components(h, hp, i, "fraction", "softmax", "static", tau=tau)
        comps.append((g, {j: v / tau for j, v in w.items()}, dict.fromkeys(w, 1.0)))

    def loss(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return F.info_nce(*cross_view_similarities(a, b), temperature=tau)

    expected = tangent(paradigm_gradient(h, hp, comps), h) / len(h)
    torch.testing.assert_close(autograd_tangent(loss, h, hp), expected, rtol=1e-9, atol=1e-12)


def ref_arccon(h: Tensor, hp: Tensor, tau: float, u: float) -> list[float]:
    out = []
    for i in range(len(h)):
        pos = math.cos(math.acos(dot(h[i], hp[i])) + u) / tau
        negs = [dot(h[i], hp[j]) / tau for j in range(len(h)) if j != i]
        out.append(-pos + math.log(math.exp(pos) + sum(math.exp(v) for v in negs)))
    return out


@pytest.mark.parametrize("tau,u", [(0.05, U), (0.1, 0.3)])
def test_arccon_value_and_eq2_gradient(tau: float, u: float) -> None:
    h, hp = views(seed=2)
    n = len(h)
    assert F.arccon(h, hp, tau, u, symmetric=False).item() == pytest.approx(
        sum(ref_arccon(h, hp, tau, u)) / n, rel=1e-10
    )
    comps = []
    for i in range(n):
        pos = dot(h[i], hp[i])
        theta = math.acos(pos)
        s = {j: dot(h[i], hp[j]) for j in range(n) if j != i}
        z = sum(math.exp(v / tau) for v in s.values())
        g = 1.0 / (1.0 + math.exp(math.cos(theta + u) / tau) / z)
        w = {j: math.exp(v / tau) / (tau * z) for j, v in s.items()}
        comps.append((g, w, dict.fromkeys(s, math.sin(theta + u) / math.sin(theta))))
    expected = tangent(paradigm_gradient(h, hp, comps), h) / n
    got = autograd_tangent(lambda a, b: F.arccon(a, b, tau, u, symmetric=False), h, hp)
    torch.testing.assert_close(got, expected, rtol=1e-9, atol=1e-12)


def test_mpt_value_and_eq3_gradient() -> None:
    h, hp = views(seed=3)
    n, m = len(h), 0.3
    values, comps = [], []
    for i in range(n):
        pos = dot(h[i], hp[i])
        s = {j: dot(h[i], hp[j]) for j in range(n) if j != i}
        hard = max(s, key=s.get)
        values.append(max(0.0, s[hard] - pos + m))
        comps.append((float(pos - s[hard] < m), {hard: 1.0}, {hard: 1.0}))
    assert 0 < sum(c[0] for c in comps) < n
    assert F.mpt(h, hp, m, symmetric=False).item() == pytest.approx(sum(values) / n, rel=1e-10)
    expected = tangent(paradigm_gradient(h, hp, comps), h) / n
    got = autograd_tangent(lambda a, b: F.mpt(a, b, m, symmetric=False), h, hp)
    torch.testing.assert_close(got, expected, rtol=1e-9, atol=1e-12)


def test_met_value_and_eq3_gradient() -> None:
    h, hp = views(seed=4)
    n, m = len(h), 0.3
    values, comps = [], []
    for i in range(n):
        d_pos = float((h[i] - hp[i]).norm())
        dist = {j: float((h[i] - hp[j]).norm()) for j in range(n) if j != i}
        near = min(dist, key=dist.get)
        values.append(max(0.0, d_pos - dist[near] + m))
        gd = float(dist[near] - d_pos < m)
        comps.append((gd, {near: 1.0 / dist[near]}, {near: dist[near] / d_pos}))
    assert 0 < sum(c[0] for c in comps) < n
    assert F.met(h, hp, m, symmetric=False).item() == pytest.approx(sum(values) / n, rel=1e-10)
    expected = tangent(paradigm_gradient(h, hp, comps), h) / n
    got = autograd_tangent(lambda a, b: F.met(a, b, m, symmetric=False), h, hp)
    torch.testing.assert_close(got, expected, rtol=1e-9, atol=1e-12)


FUNCS = {
    "paradigm": F.paradigm,
    "arccon": F.arccon,
    "mpt": F.mpt,
    "met": F.met,
}


@pytest.mark.parametrize("name", sorted(FUNCS))
def test_symmetric_adds_the_swapped_direction(name: str) -> None:
    h, hp = views(seed=5)
    fn = FUNCS[name]
    both = fn(h, hp).item()
    assert both == pytest.approx(
        fn(h, hp, symmetric=False).item() + fn(hp, h, symmetric=False).item(), rel=1e-12
    )


@pytest.mark.parametrize("name", ["paradigm", "mpt", "met"])
def test_no_selected_anchor_gives_exact_zero_not_nan(name: str) -> None:
    h, hp = views(seed=6)
    x = h.clone().requires_grad_(True)
    loss = FUNCS[name](x, hp, margin=-10.0)
    loss.backward()
    assert loss.item() == 0.0
    assert torch.equal(x.grad, torch.zeros_like(h))


def test_gd_zero_rows_contribute_exactly_zero() -> None:
    h, hp = views(seed=7)
    per_dir = F.paradigm(h, hp, gd="indicator", symmetric=False).item() * len(h)
    selected = [
        i
        for i in range(len(h))
        if ref_components(h, hp, i, "indicator", "softmax", "static")[0] == 1.0
    ]
    sub = sum(
        sum(w[j] * (dot(h[i], hp[j]) - dot(h[i], hp[i])) for j in w)
        for i in selected
        for _, w, _ in [ref_components(h, hp, i, "indicator", "softmax", "static")]
    )
    assert per_dir == pytest.approx(sub, rel=1e-10)


@pytest.mark.parametrize("name", sorted(FUNCS))
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_identical_views_keep_values_and_gradients_finite(name: str, dtype: torch.dtype) -> None:
    h, _ = views(seed=8)
    x = h.to(dtype).requires_grad_(True)
    kwargs = {"ratio_kind": "met"} if name == "paradigm" else {}
    loss = FUNCS[name](x, x.detach().clone(), **kwargs)
    loss.backward()
    assert loss.dtype == torch.float32  # half inputs give a float32 loss (the precision rule)
    assert torch.isfinite(loss) and torch.isfinite(x.grad).all()
    if name == "paradigm":
        loss = F.paradigm(x, x.detach().clone(), ratio_kind="arccon")
        assert torch.isfinite(loss)


@pytest.mark.parametrize("name", sorted(FUNCS))
def test_bad_inputs_raise_clear_errors(name: str) -> None:
    fn = FUNCS[name]
    h, hp = views(n=4, d=3)
    with pytest.raises(ValueError, match=r"h must have shape \[N, d\]"):
        fn(h[0], hp)
    with pytest.raises(ValueError, match="hp must have the shape of h"):
        fn(h, hp[:3])
    with pytest.raises(ValueError, match="N >= 2"):
        fn(h[:1], hp[:1])
    with pytest.raises(TypeError, match="floating-point"):
        fn(h.long(), hp.long())


def test_bad_hyper_parameters_raise() -> None:
    h, hp = views(n=4, d=3)
    with pytest.raises(ValueError, match="gd must be one of"):
        F.paradigm(h, hp, gd="soft")
    with pytest.raises(ValueError, match="weight must be one of"):
        losses.get("paradigm", weight="max")
    with pytest.raises(ValueError, match="temperature must be a finite number > 0"):
        F.arccon(h, hp, temperature=0.0)


@pytest.mark.parametrize("name", sorted(FUNCS))
def test_registry_modules_match_functional(name: str) -> None:
    h, hp = views(seed=9)
    assert losses.info(name).inputs == "pair"
    module = losses.get(name)
    assert module(h, hp).item() == pytest.approx(FUNCS[name](h, hp).item(), rel=1e-12)


def test_defaults_are_the_papers() -> None:
    import inspect

    p = inspect.signature(F.paradigm).parameters
    assert (p["margin"].default, p["temperature"].default, p["ratio"].default) == (0.3, 0.05, 1.0)
    assert (p["gd"].default, p["weight"].default, p["ratio_kind"].default) == (
        "indicator",
        "softmax",
        "static",
    )
    a = inspect.signature(F.arccon).parameters
    assert a["margin"].default == pytest.approx(math.radians(10))
    assert inspect.signature(F.mpt).parameters["margin"].default == 0.3
    assert inspect.signature(F.met).parameters["margin"].default == 0.3


def test_indicator_switches_exactly_at_the_margin() -> None:
    """GD = 1[s_ii − max_k s_ik < m] (MPT) and 1[min_k d_ik − d_ii < m] (MET): an anchor's
    gradient appears exactly when m crosses its own gap."""
    h, hp = views(seed=10)
    n = len(h)
    for i in range(n):
        s = [dot(h[i], hp[j]) for j in range(n)]
        gap_cos = s[i] - max(s[j] for j in range(n) if j != i)
        d = [float((h[i] - hp[j]).norm()) for j in range(n)]
        gap_dist = min(d[j] for j in range(n) if j != i) - d[i]
        for fn, gap in ((F.paradigm, gap_cos), (F.mpt, gap_cos), (F.met, gap_dist)):
            below = autograd_tangent(
                lambda a, b, f=fn, m=gap: f(a, b, margin=m - 1e-9, symmetric=False), h, hp
            )
            above = autograd_tangent(
                lambda a, b, f=fn, m=gap: f(a, b, margin=m + 1e-9, symmetric=False), h, hp
            )
            assert torch.equal(below[i], torch.zeros_like(below[i]))
            assert above[i].norm() > 1e-6
