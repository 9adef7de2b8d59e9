"""Second derivatives through the losses (``create_graph=True``: gradient penalties, MAML,
influence functions) are exact.

The fused ``autograd.Function``s of :mod:`contrastkit.losses.functional` (L2
normalisation, the InfoNCE terms, the Gram log-sum-exp and softmax mean) have hand-written
backward passes; recorded as they are, their double backward would be wrong. Checked two
ways, in float64: ``gradgradcheck`` (finite differences of the gradient) on the Functions
and on the losses without stop-gradients, and, for every registered loss, the
Hessian-vector product against the same loss with the Functions swapped for plain
autograd operations (which also holds for losses with ``detach``, where finite
differences and autograd disagree by design).
"""

from __future__ import annotations

import copy
import math

import pytest
import torch
from torch.autograd import gradgradcheck

from contrastkit import losses
from contrastkit.losses.examples import build, example_inputs
from contrastkit.losses.functional import _gram_torch, _unit_rows, infonce
from contrastkit.losses.functional._negatives import gram_logsumexp, gram_softmax_mean

F64 = torch.float64


def _plain_unit_rows(z):
    norm = torch.linalg.vector_norm(z, dim=-1, keepdim=True)
    norm = norm.masked_fill(norm <= _unit_rows.NORM_EPS, math.inf)
    return z / norm, norm


def _plain_terms(pos, lse_neg, temperature):
    p = pos / temperature
    lse = torch.logaddexp(p, lse_neg)
    return lse - p, lse_neg - lse


def _similarities(anchors, keys, extra, exclude):
    """``anchors·kᵀ`` and the same with ``-inf`` at the excluded columns."""
    own = anchors if keys is None else keys
    sim = anchors @ (own if extra is None else torch.cat([own, extra])).T
    return sim, sim if exclude is None else sim.scatter(1, exclude, -math.inf)


def _plain_lse(anchors, keys, extra, exclude, scale, block, guard):
    return torch.logsumexp(_similarities(anchors, keys, extra, exclude)[1] * scale, dim=1)


def _plain_mean(anchors, keys, extra, exclude, scale, block, detach, guard):
    sim, masked = _similarities(anchors, keys, extra, exclude)
    p = torch.softmax(masked * scale, dim=1)
    return ((p.detach() if detach else p) * sim).sum(dim=1)


PLAIN = {
    _unit_rows._UnitRows: _plain_unit_rows,
    infonce._Terms: _plain_terms,
    _gram_torch._GramLogSumExp: _plain_lse,
    _gram_torch._GramSoftmaxMean: _plain_mean,
}


@pytest.fixture
def plain(monkeypatch):
    """A function that, once called, swaps every fused Function for plain autograd."""

    def swap() -> None:
        for function, formula in PLAIN.items():
            monkeypatch.setattr(function, "apply", staticmethod(formula))

    return swap


@pytest.fixture
def checks_off():
    previous = losses.set_check_finite(False)
    yield
    losses.set_check_finite(previous)


def _loss_inputs(name: str, **kwargs: object):
    """A float64 loss, its inputs and how many of them lead as differentiable embeddings
    (not a queue, which is constant by design)."""
    module = build(name, d=6, **kwargs).double()
    gen = torch.Generator().manual_seed(1)
    inputs = example_inputs(name, n=5, d=6, dtype=F64, generator=gen)
    second = len(inputs) > 1 and inputs[1].is_floating_point() and inputs[1].dim() >= 2
    return module, inputs, 2 if second else 1


def _grad_and_hvp(module, inputs, n_leaves: int, v):
    """The gradient (``create_graph=True``) and the Hessian-vector product ``∂(g·v)``."""
    leaves = [t.detach().clone().requires_grad_() for t in inputs[:n_leaves]]
    loss = copy.deepcopy(module)(*leaves, *inputs[n_leaves:])  # a fresh step counter
    grads = torch.autograd.grad(loss, leaves, create_graph=True)
    dot = sum((g * w).sum() for g, w in zip(grads, v, strict=True))
    return [g.detach() for g in grads], torch.autograd.grad(dot, leaves, allow_unused=True)


@pytest.mark.parametrize("name", losses.available())
def test_every_loss_has_the_second_derivative_of_plain_autograd(
    name: str, plain, checks_off: None
) -> None:
    module, inputs, n_leaves = _loss_inputs(name)
    gen = torch.Generator().manual_seed(2)
    v = [torch.randn(t.shape, generator=gen, dtype=F64) for t in inputs[:n_leaves]]
    fused_grads, fused_hvp = _grad_and_hvp(module, inputs, n_leaves, v)
    leaves = [t.detach().clone().requires_grad_() for t in inputs[:n_leaves]]
    loss = copy.deepcopy(module)(*leaves, *inputs[n_leaves:])
    first_order = torch.autograd.grad(loss, leaves)  # the fast path
    plain()
    plain_grads, plain_hvp = _grad_and_hvp(module, inputs, n_leaves, v)
    torch.testing.assert_close(fused_grads, plain_grads)
    torch.testing.assert_close(list(first_order), fused_grads)  # same as without create_graph
    torch.testing.assert_close(fused_hvp, plain_hvp, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize(
    ("name", "kwargs"),
    [
        ("ntxent", {}),
        ("ntxent", {"block_size": 3}),
        ("dcl", {}),
        ("hcl", {}),
        ("supcon", {}),
        ("lascon", {}),
        ("cacr", {}),
        ("align_uniform", {}),
    ],
)
def test_gradgradcheck_of_losses_without_stop_gradients(name: str, kwargs, checks_off) -> None:
    module, inputs, n_leaves = _loss_inputs(name, **kwargs)
    leaves = [t.detach().clone().requires_grad_() for t in inputs[:n_leaves]]
    assert gradgradcheck(lambda *xs: module(*xs, *inputs[n_leaves:]), leaves)


def _leaf(*shape: int, seed: int, scale: float = 1.0) -> torch.Tensor:
    x = torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=F64)
    return (x * scale).requires_grad_()


def test_gradgradcheck_of_unit_rows_and_the_infonce_terms() -> None:
    assert gradgradcheck(_unit_rows.unit_rows, [_leaf(4, 5, seed=0)])
    pos, lse_neg = _leaf(6, seed=1), _leaf(6, seed=2)
    for temperature in (0.3, torch.tensor(0.3, dtype=F64)):

        def both(p, lse, t=temperature):
            return infonce._Terms.apply(p, lse, t)

        assert gradgradcheck(both, [pos, lse_neg])
        # one term alone (the other's incoming gradient is None)
        assert gradgradcheck(lambda p, lse: both(p, lse)[1], [pos, lse_neg])


def test_a_zero_row_keeps_a_zero_second_derivative() -> None:
    z = torch.tensor([[0.0, 0.0, 0.0], [1.0, -2.0, 0.5]], dtype=F64, requires_grad=True)
    weight = torch.tensor([[1.0, 2.0, 3.0], [0.5, -1.0, 2.0]], dtype=F64)
    (grad,) = torch.autograd.grad((_unit_rows.unit_rows(z) * weight).sum(), z, create_graph=True)
    (second,) = torch.autograd.grad((grad**2).sum(), z)
    assert torch.equal(second[0], torch.zeros(3, dtype=F64))
    assert torch.isfinite(second).all() and second[1].abs().sum() > 0


EXCLUDE = torch.tensor([[0, 1], [1, 2], [2, 0], [3, 4], [4, 3]])


@pytest.mark.parametrize(
    "case",
    ["own keys", "keys and extra", "tiled", "tensor scale", "guarded", "mean", "mean tiled"],
)
def test_gradgradcheck_of_the_fused_gram_statistics(case: str) -> None:
    anchors, keys, extra = _leaf(5, 4, seed=3), _leaf(6, 4, seed=4), _leaf(3, 4, seed=5)
    extra = extra.detach()  # constant, as a queue is
    scale = torch.tensor(1.7, dtype=F64) if case == "tensor scale" else 1.7
    block = 2 if "tiled" in case else None
    if case == "guarded":  # a scale at which every row's sum underflows without the guard
        anchors = _leaf(5, 4, seed=3, scale=20.0)
        scale = 40.0

    def statistic(a, k=None):
        if "mean" in case:
            return gram_softmax_mean(a, scale, None, extra, EXCLUDE, block)
        return gram_logsumexp(a, scale, k, extra, None if k is not None else EXCLUDE, block)

    leaves = [anchors, keys] if case == "keys and extra" else [anchors]
    assert gradgradcheck(statistic, leaves)


def test_softmax_mean_differentiates_its_backward_before_a_plain_one() -> None:
    """The differentiable backward reads only the inputs: a plain backward may follow it;
    after the plain one (which spends the kept exponentials) a second one is refused."""
    z = _leaf(5, 4, seed=6)
    mean = gram_softmax_mean(z, 3.0, exclude=EXCLUDE).sum()
    (grad,) = torch.autograd.grad(mean, z, create_graph=True, retain_graph=True)
    (plain_grad,) = torch.autograd.grad(mean, z, retain_graph=True)
    torch.testing.assert_close(grad, plain_grad)
    with pytest.raises(RuntimeError, match="one backward pass per graph"):
        torch.autograd.grad(mean, z, create_graph=True)


def test_a_second_derivative_with_inputs_reaches_every_term() -> None:
    """``torch.autograd.grad(..., inputs=...)`` of a gradient: the fused statistic's part is
    counted, not silently dropped (what ``once_differentiable`` would do here)."""
    z = _leaf(5, 4, seed=7)
    weight = _leaf(5, seed=8)
    (grad,) = torch.autograd.grad((gram_logsumexp(z, 2.0) * weight).sum(), z, create_graph=True)
    (by_weight,) = torch.autograd.grad(grad.sum(), weight)
    jacobian = torch.autograd.functional.jacobian(lambda x: gram_logsumexp(x, 2.0), z)
    torch.testing.assert_close(by_weight, jacobian.sum(dim=(1, 2)))  # ∂/∂w_i of Σ ∂(w·lse)/∂z


@pytest.mark.parametrize(
    "name,kwargs",
    [("hcl", {"temperature": 0.02}), ("hcl", {"temperature": 0.02, "block_size": 4}),
     ("arccon", {"temperature": 0.01}), ("macl", {"temperature": 0.01}),
     ("dual_temperature", {"temperature": 0.01})],
)  # fmt: skip
def test_easy_anchors_at_small_temperature_keep_exact_second_derivatives(
    name: str, kwargs: dict
) -> None:
    """Three anchors whose positives beat their negatives by more than 88 logits
    (τ = 0.01-0.02) beside three hard ones: a gradient penalty's gradient in float32 is
    finite and that of float64 (HCL and ArcCon formed their loss as logaddexp(p, l) - p,
    whose second derivative overflowed float32 there: NaN everywhere)."""
    g = torch.Generator().manual_seed(0)
    z1 = torch.randn(6, 256, generator=g, dtype=torch.float64)
    z2 = z1 + 0.05 * torch.randn(6, 256, generator=g, dtype=torch.float64)
    z2[3:] = torch.randn(3, 256, generator=g, dtype=torch.float64)  # hard: random positives
    penalties = []
    for dtype in (torch.float32, torch.float64):
        a, b = (z.to(dtype).requires_grad_() for z in (z1, z2))
        value = losses.get(name, **kwargs)(a, b)
        ga, gb = torch.autograd.grad(value, (a, b), create_graph=True)
        penalties.append(torch.autograd.grad(ga.pow(2).sum() + gb.pow(2).sum(), (a, b)))
    for low, high in zip(*penalties, strict=True):
        assert torch.isfinite(low).all()
        scale = high.abs().max()
        torch.testing.assert_close(low.double() / scale, high / scale, rtol=0, atol=1e-5)
