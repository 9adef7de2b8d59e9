"""HCL's two log-sum-exps from one pass of the Triton kernels (``_gram_triton.logsumexp2``
and its unit form for bfloat16 embeddings) against two calls at one scale each: values,
gradients and second derivatives; and HCL's Triton backend takes the one pass. In Triton's
CPU interpreter without a GPU (``tests/conftest.py``)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
pytest.importorskip("triton", reason="the Triton backend needs the gpu extra (triton)")

from contrastkit import losses  # noqa: E402
from contrastkit.losses.functional import _gram_triton  # noqa: E402
from contrastkit.losses.functional._precision import upcast_tensor  # noqa: E402

TILES = (16, 16)
SCALES = (4.0, 2.0)  # HCL's (1 + β)/τ and β/τ for τ = 0.5, β = 1


def _rows(n: int, d: int, g: torch.Generator, unit: bool) -> torch.Tensor:
    x = 2.0 * torch.randn(n, d, generator=g)
    return (F.normalize(x, dim=1) if unit else x.bfloat16().float()).to(DEVICE)


def _both(fn, leaves: list[torch.Tensor], weights: torch.Tensor, create_graph: bool = False):
    """Both log-sum-exps, and the gradients of ``Σ w₁·lse₁ + w₂·lse₂`` w.r.t. ``leaves``."""
    lse1, lse2 = fn()
    total = (lse1 * weights[0]).sum() + (lse2 * weights[1]).sum()
    grads = torch.autograd.grad(total, leaves, create_graph=create_graph)
    return [lse1, lse2], list(grads)


@pytest.mark.parametrize(
    ("layout", "unit"),
    [("own", False), ("keys+queue", False), ("own", True)],  # the unit path takes no queue
    ids=["own-float32", "keys+queue-float32", "own-bf16-unit"],
)
def test_one_pass_matches_two_calls(layout: str, unit: bool) -> None:
    g = torch.Generator().manual_seed(0)
    a = _rows(35, 12, g, not unit).requires_grad_()
    keys = None if layout == "own" else _rows(21, 12, g, True).requires_grad_()
    extra = None if layout == "own" else _rows(9, 12, g, True)
    width = 35 if layout == "own" else 30
    exclude = torch.randint(0, width, (35, 2), generator=g).to(DEVICE)
    weights = torch.randn(2, 35, generator=g).to(DEVICE)
    leaves = [t for t in (a, keys) if t is not None]
    if unit:
        one = _both(
            lambda: _gram_triton.unit_logsumexp2(a, SCALES, None, exclude, TILES), leaves, weights
        )
        two = _both(
            lambda: [_gram_triton.unit_logsumexp(a, c, None, exclude, TILES) for c in SCALES],
            leaves,
            weights,
        )
    else:
        one = _both(
            lambda: _gram_triton.logsumexp2(a, SCALES, keys, extra, exclude, TILES), leaves, weights
        )
        two = _both(
            lambda: [_gram_triton.logsumexp(a, c, keys, extra, exclude, TILES) for c in SCALES],
            leaves,
            weights,
        )
    for x, y in zip([*one[0], *one[1]], [*two[0], *two[1]], strict=True):
        torch.testing.assert_close(x, y, rtol=1e-6, atol=1e-6)


def test_second_derivatives_of_the_one_pass() -> None:
    g = torch.Generator().manual_seed(1)
    x = _rows(13, 8, g, True)
    weights = torch.randn(2, 13, generator=g).to(DEVICE)
    second = []
    for one_pass in (True, False):
        leaf = x.clone().requires_grad_()
        _, (grad,) = _both(_pair_of(leaf, one_pass), [leaf], weights, create_graph=True)
        second.append(torch.autograd.grad((grad**2).sum(), leaf)[0])
    torch.testing.assert_close(second[0], second[1], rtol=1e-5, atol=1e-5)


def _pair_of(leaf: torch.Tensor, one_pass: bool):
    """Both log-sum-exps of ``leaf``'s own keys: one pass, or one call per scale."""
    if one_pass:
        return lambda: _gram_triton.logsumexp2(leaf, SCALES, tiles=TILES)
    return lambda: [_gram_triton.logsumexp(leaf, c, tiles=TILES) for c in SCALES]


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["float32", "bf16"])
def test_hcl_on_the_triton_backend_takes_one_pass(
    dtype: torch.dtype, monkeypatch: pytest.MonkeyPatch
) -> None:
    """HCL with ``backend="triton"``: one Function call for both scales, and the torch
    backend's value and gradients."""
    seen = []
    # the scales' place among each Function's arguments
    for cls, at in ((_gram_triton._GramStatistic, 4), (_gram_triton._UnitGramStatistic, 3)):
        apply = cls.apply
        spy = lambda *a, _f=apply, _at=at: seen.append(a[_at]) or _f(*a)  # noqa: E731
        monkeypatch.setattr(cls, "apply", spy)
    g = torch.Generator().manual_seed(2)
    halves = [torch.randn(11, 16, generator=g).to(DEVICE, dtype) for _ in range(2)]
    results = {}
    for backend in ("torch", "triton"):
        inputs = [upcast_tensor(h).requires_grad_() for h in halves]
        value = losses.get("hcl", backend=backend)(*inputs)
        value.backward()
        results[backend] = (value.detach(), [t.grad for t in inputs])
    assert seen == [(4.0, 2.0)]  # (1 + β)/τ and β/τ at the defaults, one call
    (v0, g0), (v1, g1) = results["torch"], results["triton"]
    torch.testing.assert_close(v1, v0, rtol=2e-6, atol=2e-6)
    for x, y in zip(g1, g0, strict=True):
        torch.testing.assert_close(x, y, rtol=1e-5, atol=2e-7)
