"""contrastkit.analysis: closed-form components (Tables 1-2, Eqs. 16-19) against autograd,
and gradient_anatomy recovering them from autograd alone."""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest
import torch
from torch import Tensor

from contrastkit.analysis import NAMES, components, gradient_anatomy, paradigm_gradient, tangent
from contrastkit.losses import functional as F
from contrastkit.losses.views import cross_view_similarities


def views(n: int = 8, d: int = 20, seed: int = 0) -> tuple[Tensor, Tensor]:
    g = torch.Generator().manual_seed(seed)
    h = torch.nn.functional.normalize(torch.randn(n, d, generator=g, dtype=torch.float64), dim=1)
    noise = torch.linspace(0.2, 2.0, n, dtype=torch.float64)[:, None]
    hp = h + noise * torch.randn(n, d, generator=g, dtype=torch.float64) / math.sqrt(d)
    return h, torch.nn.functional.normalize(hp, dim=1)


def one_way(fn: Callable[..., Tensor], **kw: object) -> Callable[[Tensor, Tensor], Tensor]:
    return lambda a, b: fn(a, b, symmetric=False, **kw)


LOSSES: dict[str, tuple[Callable[[Tensor, Tensor], Tensor], dict[str, object]]] = {
    "infonce": (
        lambda a, b: F.info_nce(*cross_view_similarities(a, b), temperature=0.1),
        {"temperature": 0.1},
    ),
    "arccon": (one_way(F.arccon, temperature=0.1, margin=0.2), {"temperature": 0.1, "margin": 0.2}),
    "mpt": (one_way(F.mpt, margin=0.4), {"margin": 0.4}),
    "met": (one_way(F.met, margin=0.4), {"margin": 0.4}),
    "paradigm": (
        one_way(F.paradigm, gd="fraction", weight="softmax", ratio_kind="met"),
        {"gd": "fraction", "weight": "softmax", "ratio_kind": "met"},
    ),
    "mhe": (one_way(F.mhe, nu=0.5), {"nu": 0.5}),
    "barlow": (one_way(F.barlow_l2, nu=0.01), {"nu": 0.01}),
    "mhs": (one_way(F.mhs, nu=0.7), {"nu": 0.7}),
    "vicreg": (lambda a, b: vicreg_uncentred(a, b, 0.3), {"nu": 0.3}),
    "mmhe": (one_way(F.mmhe, ratio=1.2), {"ratio": 1.2}),
    "mmhs": (one_way(F.mmhs), {}),
    "mbarlow": (one_way(F.mbarlow, temperature=0.1), {"temperature": 0.1}),
    "mvicreg": (one_way(F.mvicreg, margin=0.35), {"margin": 0.35}),
}


def vicreg_uncentred(a: Tensor, b: Tensor, nu: float) -> Tensor:
    """Alignment + (ν/D)‖aᵀa/(N−1)‖_F² on L2-normalised views: the objective whose exact
    gradient is Table 2's VICReg column (Tao et al.'s Eq. 11)."""
    a, b = torch.nn.functional.normalize(a, dim=1), torch.nn.functional.normalize(b, dim=1)
    n, d = a.shape
    return (a - b).pow(2).sum(1).mean() + nu / d * (a.T @ a / (n - 1)).pow(2).sum()


def autograd_tangent(fn: Callable[[Tensor, Tensor], Tensor], h: Tensor, hp: Tensor) -> Tensor:
    x = h.clone().requires_grad_(True)
    (g,) = torch.autograd.grad(fn(x, hp), x)
    return tangent(g, h)


def test_every_name_is_covered() -> None:
    assert set(LOSSES) == set(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_closed_form_components_rebuild_autograd(name: str) -> None:
    h, hp = views()
    fn, kw = LOSSES[name]
    c = components(name, h, hp, **kw)
    assert c.gd.shape == (8,) and c.weight.shape == (8, 8) and c.ratio.shape == (8, 8)
    assert torch.equal(torch.diagonal(c.weight), torch.zeros(8, dtype=h.dtype))
    torch.testing.assert_close(
        paradigm_gradient(c, h, hp), autograd_tangent(fn, h, hp), rtol=1e-9, atol=1e-12
    )


@pytest.mark.parametrize("name", [n for n in NAMES if n != "barlow"])
def test_anatomy_recovers_weight_and_ratio_from_autograd(name: str) -> None:
    h, hp = views(seed=1)
    fn, kw = LOSSES[name]
    c = components(name, h, hp, **kw)
    out = gradient_anatomy(fn, h, hp, negatives=c.negatives)
    gw = c.scale * c.gd[:, None] * c.weight
    torch.testing.assert_close(out.weight, gw, rtol=1e-7, atol=1e-10)
    active = c.gd > 0
    assert torch.equal(out.active, active)
    mean_ratio = (c.weight * c.ratio).sum(1) / c.weight.sum(1)
    torch.testing.assert_close(out.ratio[active], mean_ratio[active], rtol=1e-7, atol=1e-9)
    assert torch.equal(out.ratio[~active], torch.zeros_like(out.ratio[~active]))
    assert out.residual.max() < 1e-8


def test_anatomy_reports_barlow_matrix_ratio_as_residual() -> None:
    """Barlow Twins' ratio is the matrix A = I − (1 − ν) C_diag (Eq. 10), not a scalar: the
    scalar-ratio paradigm cannot express it exactly, and the residual says so."""
    h, hp = views(seed=2)
    out = gradient_anatomy(LOSSES["barlow"][0], h, hp, negatives="same")
    assert out.residual.min() > 1e-4


def test_anatomy_and_components_reject_bad_arguments() -> None:
    h, hp = views(n=8, d=8)
    with pytest.raises(ValueError, match="N < d"):
        gradient_anatomy(LOSSES["mpt"][0], h, hp)
    h, hp = views()
    with pytest.raises(ValueError, match="negatives must be"):
        gradient_anatomy(LOSSES["mpt"][0], h, hp, negatives="both")
    with pytest.raises(TypeError, match="scalar"):
        gradient_anatomy(lambda a, b: a.sum(1), h, hp)
    with pytest.raises(ValueError, match="name must be one of"):
        components("simclr", h, hp)
    with pytest.raises(ValueError, match="gd must be one of"):
        components("paradigm", h, hp, gd="soft")
    with pytest.raises(ValueError, match="bad hyper-parameters for 'mhe'"):
        components("mhe", h, hp, temperature=0.1)


def test_summarize_reads_the_three_components() -> None:
    from contrastkit.analysis import summarize

    h, hp = views(seed=3)
    out = gradient_anatomy(LOSSES["mpt"][0], h, hp)
    s = summarize(out, h, hp)
    c = components("mpt", h, hp, margin=0.4)
    assert s["active"] == pytest.approx(float(c.gd.mean()))
    assert s["hardest_share"] == pytest.approx(1.0, abs=1e-9)  # MPT: one-hot on the hardest
    assert s["ratio_mean"] == pytest.approx(1.0, abs=1e-9)
    fn, kw = LOSSES["paradigm"]
    out = gradient_anatomy(fn, h, hp)
    s = summarize(out, h, hp)
    c = components("paradigm", h, hp, **kw)
    sims = (h @ hp.T).fill_diagonal_(-2.0)
    hard = sims.argmax(dim=1)
    expected = c.weight[torch.arange(8), hard] / c.weight.sum(1)
    assert s["hardest_share"] == pytest.approx(float(expected.mean()), rel=1e-7)
    none = summarize(gradient_anatomy(one_way(F.mpt, margin=-5.0), h, hp), h, hp)
    assert none["active"] == 0.0 and math.isnan(none["ratio_mean"])
    # Barlow Twins' W is signed: no share of the hardest negative (it read -0.66 to 0.71)
    signed = gradient_anatomy(LOSSES["barlow"][0], h, hp, negatives="same")
    assert bool((signed.weight < 0).any())
    assert math.isnan(summarize(signed, h, hp, negatives="same")["hardest_share"])
