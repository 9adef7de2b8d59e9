"""The Triton unit path for bfloat16 embeddings (issue #38): embeddings that the precision
rule cast from bfloat16 to float32 are remembered as holding bfloat16 values, the layouts
without a queue hand their rows to :func:`~contrastkit.losses.functional._gram_triton.
unit_logsumexp`, and its bfloat16 products (exact) with split-coefficient gradients give
the float32 values and gradients of the torch path, and of a float64 reference.

Without a GPU the kernels run in Triton's CPU interpreter (``tests/conftest.py``), which
multiplies bfloat16 tiles in float32 (``UPCAST``): the same numbers, since each product of
two bfloat16 values is exact in float32; the splitting of the coefficients is checked on
its own below.
"""

from __future__ import annotations

import pytest
import torch

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
pytest.importorskip("triton", reason="the Triton backend needs the gpu extra (triton)")

from contrastkit import losses  # noqa: E402
from contrastkit.losses import views  # noqa: E402
from contrastkit.losses.functional import _gram_triton  # noqa: E402
from contrastkit.losses.functional._negatives import (  # noqa: E402
    GramNegatives,
    gram_logsumexp,
    gram_softmax_mean,
)
from contrastkit.losses.functional._precision import (  # noqa: E402
    holds_bf16_values,
    in_dtype,
    same_values,
    upcast_tensor,
)
from contrastkit.losses.functional._unit_rows import unit_rows  # noqa: E402

TILES = (16, 16)
SCALE = 5.0


def _bf16_rows(rows: int, d: int, seed: int) -> torch.Tensor:
    """Float32 rows holding bfloat16 values (what the precision rule makes of bfloat16
    embeddings), not normalised, one of them zero."""
    g = torch.Generator().manual_seed(seed)
    x = (3.0 * torch.randn(rows, d, generator=g)).to(DEVICE).bfloat16().float()
    x[rows // 2] = 0.0
    return x


def test_only_tensors_cast_from_bfloat16_are_known_to_hold_its_values() -> None:
    half = torch.randn(4, 3).bfloat16()
    up, to = upcast_tensor(half), in_dtype(half, torch.float32)
    assert holds_bf16_values(up) and holds_bf16_values(up, to)
    assert not holds_bf16_values(up * 2.0)  # derived: not known (even where it would be)
    assert not holds_bf16_values(torch.randn(4, 3), up)
    assert not holds_bf16_values(upcast_tensor(torch.randn(4, 3).half()))


def test_a_tensor_changed_in_place_after_its_cast_is_no_longer_known() -> None:
    """A loss of the user's that scales its input in place (``z.mul_(3.7)``) must not
    have the result rounded to bfloat16 by the unit path; nor a part of a known tensor
    whose base changed."""
    up = upcast_tensor(torch.randn(4, 3).bfloat16())
    up.requires_grad_()  # not a change of values: still known
    assert holds_bf16_values(up)
    up.detach().mul_(3.7)
    assert not holds_bf16_values(up)
    base = upcast_tensor(torch.randn(4, 3).bfloat16())
    (first,) = same_values(base, [base[:2]])
    assert holds_bf16_values(first)
    base.add_(0.1)
    assert not holds_bf16_values(first) and not holds_bf16_values(base)
    with torch.inference_mode():  # no version counter to watch: not remembered
        half = torch.randn(6, 4).bfloat16()
        assert not holds_bf16_values(upcast_tensor(half))
        assert torch.isfinite(losses.get("ntxent")(half, half.flip(0)))


def test_layouts_without_a_queue_hand_over_their_bfloat16_rows() -> None:
    z1, z2 = (upcast_tensor(torch.randn(6, 8).bfloat16()) for _ in range(2))
    assert views.ntxent_negatives(z1, z2)[1].source is not None
    assert views.ntxent_negatives(z1.clone(), z2)[1].source is None  # float32 embeddings
    assert views.ntxent_negatives(z1, z2, queue=torch.randn(5, 8))[1].source is None
    source = views.cross_view_negatives(z1, z2)[1].source
    assert source is not None and source[1] is not None
    stacked = upcast_tensor(torch.randn(3, 6, 8).bfloat16())
    assert views.multiview_negatives(stacked)[1].source is not None
    negatives = views.ntxent_negatives(z1, z2)[1]
    with pytest.raises(ValueError, match="not with extra"):  # its rows would be dropped
        GramNegatives(negatives.anchors, extra=torch.randn(5, 8), source=negatives.source)


def _unit_statistic(mode: str, x, kx, exclude, triton: bool):
    """The statistic over the unit rows of ``x`` (and ``kx``): the Triton unit path, or
    the torch path of the same formula on ``unit_rows``."""
    if triton:
        if mode == "lse":
            return _gram_triton.unit_logsumexp(x, SCALE, kx, exclude, TILES)
        detach = mode == "mean_detached"
        return _gram_triton.unit_softmax_mean(x, SCALE, kx, exclude, detach, TILES)
    u, ku = unit_rows(x), None if kx is None else unit_rows(kx)
    if mode == "lse":
        return gram_logsumexp(u, SCALE, ku, exclude=exclude, backend="torch")
    detach = mode == "mean_detached"
    return gram_softmax_mean(u, SCALE, ku, exclude=exclude, detach_weights=detach, backend="torch")


def _value_and_grads(mode, x, kx, exclude, weight, triton: bool, dtype=torch.float32):
    leaves = [None if t is None else t.detach().to(dtype).requires_grad_() for t in (x, kx)]
    out = _unit_statistic(mode, leaves[0], leaves[1], exclude, triton)
    (out * weight.to(dtype)).sum().backward()
    return [out.detach().double()] + [t.grad.double() for t in leaves if t is not None]


@pytest.mark.parametrize("mode", ["lse", "mean", "mean_detached"])
@pytest.mark.parametrize("own", [True, False], ids=["own-keys", "keys"])
def test_unit_path_matches_the_torch_path_and_float64(mode: str, own: bool) -> None:
    x = _bf16_rows(37, 12, seed=1)
    kx = None if own else _bf16_rows(29, 12, seed=2)
    g = torch.Generator().manual_seed(3)
    exclude = torch.randint(0, 37 if own else 29, (37, 2), generator=g).to(DEVICE)
    weight = torch.randn(37, generator=g).to(DEVICE)
    got = _value_and_grads(mode, x, kx, exclude, weight, triton=True)
    torch32 = _value_and_grads(mode, x, kx, exclude, weight, triton=False)
    ref = _value_and_grads(mode, x, kx, exclude, weight, triton=False, dtype=torch.float64)
    for a, b, c in zip(got, torch32, ref, strict=True):
        scale = max(c.abs().max().item(), 1.0)
        assert (a - c).abs().max().item() <= 2e-6 * scale
        assert (a - b).abs().max().item() <= 2e-6 * scale
    assert got[1][18].abs().max() == 0  # the zero row: a zero gradient, as unit_rows gives


@pytest.mark.parametrize("mode", ["lse", "mean", "mean_detached"])
def test_a_row_whose_norm_overflows_is_a_zero_row_as_on_the_torch_path(mode: str) -> None:
    """bfloat16 holds values up to 3.4e38, so a row of entries near 1e19 has a float32
    norm of inf. ``unit_rows`` scales it by 0 (a zero row); the unit path multiplies the
    raw products first, and inf·0 must not leak a NaN into the finite rows."""
    x = _bf16_rows(21, 8, seed=7)
    x[4] = (x[4] * 1e19).bfloat16().float()
    assert torch.isinf(x[4].norm())
    weight = torch.randn(21, generator=torch.Generator().manual_seed(8)).to(DEVICE)
    got = _value_and_grads(mode, x, None, None, weight, triton=True)
    torch32 = _value_and_grads(mode, x, None, None, weight, triton=False)
    for a, b in zip(got, torch32, strict=True):
        assert torch.isfinite(a).all()
        torch.testing.assert_close(a, b, rtol=2e-6, atol=2e-6)


def test_three_bfloat16_parts_hold_a_float32_coefficient() -> None:
    """The kernels' ``SPLIT``: ``hi + mid + lo`` of float32 coefficients, each rounded to
    bfloat16, is the float32 value to about 2^-24 of it (here in torch, the same casts),
    plus half of bf16's subnormal spacing 2^-133: below about 7.7e-34 the third part is
    subnormal (an unseeded draw met such values under some test orders; seeded now)."""
    g = torch.Generator().manual_seed(11)
    c = torch.randn(10_000, generator=g, dtype=torch.float32) * torch.logspace(-30, 3, 10_000)
    hi = c.bfloat16()
    rest = c - hi.float()
    mid = rest.bfloat16()
    lo = (rest - mid.float()).bfloat16()
    total = hi.double() + mid.double() + lo.double()
    assert ((total - c.double()).abs() <= 2.0**-24 * c.double().abs() + 2.0**-133).all()
    assert ((hi.double() - c.double()).abs() > 2.0**-12 * c.double().abs()).any()  # one part is not


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("ntxent", "pair"),
        ("infonce", "pair"),
        ("dcl", "pair"),
        ("macl", "pair"),
        ("supcon", "labeled"),
        ("cacr", "views"),
        ("cmc", "views"),
    ],
)
def test_losses_take_the_unit_path_for_bfloat16_embeddings(
    name: str, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """bfloat16 embeddings, cast by the precision rule (the float32 casts kept to read
    their gradients): the Triton backend takes the unit path and matches the torch
    backend's values and float32 gradients."""
    calls = []
    apply = _gram_triton._UnitGramStatistic.apply
    monkeypatch.setattr(
        _gram_triton._UnitGramStatistic, "apply", lambda *a: calls.append(1) or apply(*a)
    )
    g = torch.Generator().manual_seed(4)
    shape = (3, 11, 16) if kind == "views" else (11, 16)
    halves = [torch.randn(*shape, generator=g).to(DEVICE).bfloat16() for _ in range(2)]
    if kind == "views":
        halves = halves[:1]
    labels = [(torch.arange(11) % 3).to(DEVICE)] if kind == "labeled" else []
    results = {}
    for backend in ("torch", "triton"):
        inputs = [upcast_tensor(h) for h in halves]
        for t in inputs:
            t.requires_grad_()
        value = losses.get(name, backend=backend)(*inputs, *labels)
        value.backward()
        results[backend] = (value.detach(), [t.grad for t in inputs])
    assert calls, "the Triton backend did not take the unit path"
    (v0, g0), (v1, g1) = results["torch"], results["triton"]
    torch.testing.assert_close(v1, v0, rtol=2e-6, atol=2e-6)
    for a, b in zip(g1, g0, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=2e-7)


def test_second_derivatives_of_the_unit_path() -> None:
    """``create_graph`` through the unit path: its backward falls back to the gradient
    formula through ``unit_rows``, so the second derivatives are the torch path's."""
    x = _bf16_rows(13, 8, seed=5)
    w = torch.randn(13, generator=torch.Generator().manual_seed(6)).to(DEVICE)
    second = []
    for triton in (True, False):
        leaf = x.clone().requires_grad_()
        out = _unit_statistic("mean", leaf, None, None, triton)
        (grad,) = torch.autograd.grad((out * w).sum(), leaf, create_graph=True)
        second.append(torch.autograd.grad((grad**2).sum(), leaf)[0])
    torch.testing.assert_close(second[0], second[1], rtol=1e-5, atol=1e-5)
