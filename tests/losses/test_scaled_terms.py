"""The positives and multi-scale log-sum-exps from the views
(:mod:`contrastkit.losses.functional._scaled_terms`): HCL's and DCLW's fused path.

The modules take it where :func:`~contrastkit.losses.views.fused_pair_terms` allows (at the
largest scale); they must give the general path's values and gradients (their
``similarity_loss`` on :func:`~contrastkit.losses.views.ntxent_negatives`) to rounding, and
the statistics must have exact first and second derivatives of their own.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
from torch import Tensor

from contrastkit import losses
from contrastkit.losses import infonce
from contrastkit.losses._indices import pair_exclude
from contrastkit.losses.functional._scaled_terms import hcl_anchors, scaled_terms
from contrastkit.losses.functional.infonce import hcl_parts
from contrastkit.losses.views import ntxent_negatives


def _views(n: int, d: int, dtype: torch.dtype, seed: int) -> tuple[Tensor, Tensor]:
    g = torch.Generator().manual_seed(seed)
    z1, z2 = (torch.randn(n, d, generator=g, dtype=torch.float64).to(dtype) for _ in range(2))
    return z1.requires_grad_(), z2.requires_grad_()


@pytest.fixture
def taken(count_calls: Callable[[object, str], list[int]]) -> list[int]:
    """Counts the calls that take the fused path."""
    return count_calls(infonce, "ntxent_statistics")


CASES = [
    ("hcl", {}),
    ("hcl", {"beta": 0.0}),  # the debiased loss: one scale is 0
    ("hcl", {"tau_plus": 0.0, "temperature": 0.3, "beta": 2.0}),
    ("dclw", {}),
    ("dclw", {"temperature": 0.2, "sigma": 1.0}),
]


@pytest.mark.parametrize(("name", "setting"), CASES)
@pytest.mark.parametrize(
    ("dtype", "tol"), [(torch.float64, 1e-12), (torch.float32, 2e-6), (torch.bfloat16, 2e-6)]
)
@pytest.mark.parametrize("n", [2, 9])
def test_the_fused_path_gives_the_general_paths_loss_and_gradients(
    name: str, setting: dict, dtype: torch.dtype, tol: float, n: int, taken: list[int]
) -> None:
    z1, z2 = _views(n, 5, dtype, seed=n + len(setting))
    with torch.no_grad():
        z2[n // 2] = 0.0  # a zero row: zero gradient
    module = losses.get(name, **setting, backend="torch")
    fused = module(z1, z2)
    fused_grads = torch.autograd.grad(fused, (z1, z2))
    assert taken == [1]
    a, b = (z.float() for z in (z1, z2)) if dtype == torch.bfloat16 else (z1, z2)
    want = module.similarity_loss(*ntxent_negatives(a, b))
    want_grads = torch.autograd.grad(want, (z1, z2))
    assert abs((fused - want).item()) <= tol * max(1.0, abs(want.item()))
    for got, ref in zip(fused_grads, want_grads, strict=True):
        assert got.dtype == dtype
        assert float((got.double() - ref.double()).abs().max()) <= tol * float(ref.abs().max())
    assert float(fused_grads[1][n // 2].abs().max()) == 0.0


@pytest.mark.parametrize("scales", [(2.5,), (4.0, 2.0), (3.0, 0.0), (0.5,)])
def test_the_statistics_are_the_negatives_log_sum_exps_with_exact_derivatives(
    scales: tuple[float, ...],
) -> None:
    z1, z2 = _views(5, 4, torch.float64, seed=3)
    exclude = pair_exclude(5, 5, 0, z1.device)
    pos, lse = scaled_terms(z1, z2, scales, exclude)
    want_pos, neg = ntxent_negatives(z1, z2)
    torch.testing.assert_close(pos, want_pos, rtol=1e-12, atol=1e-12)
    for k, scale in enumerate(scales):
        torch.testing.assert_close(lse[k], neg.logsumexp(scale), rtol=1e-12, atol=1e-12)

    def both(a: Tensor, b: Tensor) -> tuple[Tensor, ...]:
        pos, lse = scaled_terms(a, b, scales, exclude)
        return pos, *lse

    assert torch.autograd.gradcheck(both, (z1, z2))
    assert torch.autograd.gradgradcheck(both, (z1, z2))
    for k in (0, 1):  # one output alone: the other's gradient is absent
        assert torch.autograd.gradcheck(lambda a, b, k=k: both(a, b)[k], (z1, z2))


def test_calls_the_fused_path_cannot_take_go_the_general_way(taken: list[int]) -> None:
    z1, z2 = _views(6, 4, torch.float32, seed=1)

    class Halved(losses.HCL):
        def similarity_loss(self, pos: Tensor, neg) -> Tensor:
            return 0.5 * super().similarity_loss(pos, neg)

    cases = [
        (losses.get("hcl", block_size=4), (z1, z2)),
        (losses.get("hcl", temperature=0.05, beta=1.0), (z1, z2)),  # (1 + β)/τ = 40: underflow
        (losses.get("dclw"), (z1, z2, torch.randn(5, 4))),  # a queue
        (Halved(), (z1, z2)),
    ]
    for module, args in cases:
        assert torch.isfinite(module(*args))
    assert taken == []
    assert Halved()(z1, z2).item() == pytest.approx(0.5 * losses.HCL()(z1, z2).item(), rel=1e-6)


@pytest.mark.parametrize("tau_plus", [0.0, 0.1, 0.5])
def test_hcl_per_anchor_loss_has_the_formulas_values_and_exact_derivatives(
    tau_plus: float,
) -> None:
    """The fused path's per-anchor loss (:func:`hcl_anchors`, closed-form backward) is the
    formula's (:func:`hcl_parts`) bit for bit, with its gradients, and passes
    gradcheck and gradgradcheck; the inputs include anchors whose debiased estimate is
    floored and, for τ⁺ = 0.5, whose debiasing term exceeds the reweighted sum (``t >= 0``),
    where the floor passes no gradient."""
    g = torch.Generator().manual_seed(0)
    m, count, temperature = 40, 38, 0.5
    pos = (torch.rand(m, generator=g, dtype=torch.float64) * 2 - 1).requires_grad_()
    lse_hard = (torch.randn(m, generator=g, dtype=torch.float64) + 4).requires_grad_()
    lse_soft = (torch.randn(m, generator=g, dtype=torch.float64) + 3).requires_grad_()
    inputs = (pos, lse_hard, lse_soft)
    parts = hcl_parts(*inputs, count, temperature, tau_plus)
    if tau_plus > 0:
        assert not (parts.debiased >= parts.floor).all()
    if tau_plus == 0.5:
        assert bool((parts.t == -1).any())  # -1 marks t >= 0

    def fused(*args: Tensor) -> Tensor:
        return hcl_anchors(*args, count, temperature, tau_plus)

    want = hcl_parts(*inputs, count, temperature, tau_plus).loss
    assert torch.equal(fused(*inputs), want)
    upstream = torch.rand(m, generator=g, dtype=torch.float64)
    got = torch.autograd.grad(fused(*inputs), inputs, upstream)
    for a, b in zip(got, torch.autograd.grad(want, inputs, upstream), strict=True):
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-14)
    assert torch.autograd.gradcheck(fused, inputs)
    assert torch.autograd.gradgradcheck(fused, inputs)
