"""The precision rule of every loss (contrastkit.losses.functional._common), generated from
the registry so that a newly registered loss is covered without editing this file.

A registered loss computes in float32 with autocast off and returns float32 for float32
and half-precision inputs. Hence exact statements, stronger than a tolerance:

* a forward inside ``torch.autocast`` is the very same float32 computation as outside it:
  the value is bit-identical to the fp32 call on the same inputs, and so are the gradients
  when ``backward`` runs outside the region (a training step); a ``backward`` called inside
  the region runs the built-in ops' backward products in bfloat16 (the fused kernels' stay
  float32), so there the gradient (of inputs and parameters, as one vector) agrees to
  ``GRAD_RTOL`` in relative norm;
* on float16/bfloat16 inputs a loss is the float32 computation on those inputs' values: the
  loss equals the fp32 loss of the upcast inputs, and each gradient is that fp32 gradient
  rounded once to the input's dtype (the backward of the cast).
"""

from __future__ import annotations

import copy

import pytest
import torch
from torch import Tensor, nn

from contrastkit import losses
from contrastkit.losses import functional as F
from contrastkit.losses.examples import build, example_inputs
from contrastkit.losses.views import cross_view_similarities, ntxent_negatives

NAMES = losses.available()
HALF = [torch.bfloat16, torch.float16]
# bfloat16 rounds to 2^-8 ≈ 0.4 % relative: 2 % is five roundings' worth (measured, torch
# 2.13 CPU, over all 31 losses: at most 0.6 %, AMCL; 0 for those whose products are fused)
GRAD_RTOL = 0.02


def _inputs(name: str, dtype: torch.dtype = torch.float32) -> tuple[Tensor, ...]:
    """Example inputs of ``name`` (seeded), cast to ``dtype``; embeddings are leaves."""
    inputs = example_inputs(name, n=8, d=16, generator=torch.Generator().manual_seed(0))
    return tuple(_leaf(x, dtype) for x in inputs)


def _leaf(x: Tensor, dtype: torch.dtype) -> Tensor:
    if not x.is_floating_point() or (x.dim() == 1):  # labels (LASCon's are floats) stay
        return x
    return x.detach().to(dtype).requires_grad_(True)


def _run(loss: nn.Module, inputs: tuple[Tensor, ...]) -> tuple[Tensor, list[Tensor]]:
    """The loss and the gradients of its leaves and parameters (``loss`` is a copy, so
    stateful losses, e.g. a temperature schedule's step, start alike on every call)."""
    value = loss(*inputs)
    leaves = [x for x in inputs if x.requires_grad] + list(loss.parameters())
    grads = torch.autograd.grad(value, leaves, allow_unused=True)
    return value, [
        torch.zeros_like(p) if g is None else g for p, g in zip(leaves, grads, strict=True)
    ]


@pytest.mark.parametrize("name", NAMES)
def test_inside_autocast_the_loss_is_the_fp32_computation(name: str) -> None:
    torch.manual_seed(0)
    loss = build(name)
    inputs = _inputs(name)
    ref, ref_grads = _run(copy.deepcopy(loss), inputs)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        value = copy.deepcopy(loss)(*inputs)
        user, user_grads = _run(copy.deepcopy(loss), inputs)  # backward inside the region
    assert value.dtype == user.dtype == torch.float32 and torch.isfinite(value)
    assert torch.equal(value, ref) and torch.equal(user, ref)
    leaves = [x for x in inputs if x.requires_grad]
    step_grads = torch.autograd.grad(value, leaves, allow_unused=True)  # backward outside
    for got, want in zip(step_grads, ref_grads, strict=False):
        assert got is None or torch.equal(got, want)
    assert all(g.dtype == torch.float32 for g in user_grads)
    got, want = (torch.cat([g.flatten() for g in gs]) for gs in (user_grads, ref_grads))
    assert float((got - want).norm()) <= GRAD_RTOL * float(want.norm())  # all, as one vector


@pytest.mark.parametrize("dtype", HALF)
@pytest.mark.parametrize("name", NAMES)
def test_half_inputs_give_the_fp32_loss_of_their_values(name: str, dtype: torch.dtype) -> None:
    torch.manual_seed(0)
    loss = build(name)
    half = _inputs(name, dtype)
    ref, ref_grads = _run(copy.deepcopy(loss), tuple(_leaf(x, torch.float32) for x in half))
    value, grads = _run(copy.deepcopy(loss), half)
    assert value.dtype == torch.float32 and torch.isfinite(value)
    assert torch.equal(value, ref)
    for got, want in zip(grads, ref_grads, strict=True):
        assert torch.isfinite(got).all()
        assert torch.equal(got, want.to(got.dtype))  # parameters: float32; leaves: dtype


def test_float64_inputs_stay_float64() -> None:
    for name in ("ntxent", "macl", "barlow_twins", "cacr"):
        assert build(name)(*_inputs(name, torch.float64)).dtype == torch.float64, name


def test_queue_keeps_its_dtype_and_is_cast_at_use() -> None:
    """bf16 queries meet a float32 queue (MoCo's) under autocast and without it: the
    similarities are float32 and equal the float32 ones of the same values."""
    g = torch.Generator().manual_seed(1)
    q, k, queue = (torch.randn(n, 8, generator=g) for n in (4, 4, 6))
    want = cross_view_similarities(q.bfloat16().float(), k.bfloat16().float(), queue)
    for ctx in (torch.autocast("cpu", dtype=torch.bfloat16), torch.autocast("cpu", enabled=False)):
        with ctx:
            got = cross_view_similarities(q.bfloat16(), k.bfloat16(), queue)
        for a, b in zip(got, want, strict=True):
            assert a.dtype == torch.float32 and torch.equal(a, b)


@pytest.mark.parametrize("block_size", [None, 3])
def test_fused_kernels_alone_under_autocast_and_half_inputs(block_size: int | None) -> None:
    """gram_logsumexp / gram_softmax_mean (the custom autograd Functions) through the
    functional API: float32 results and the float32 gradients, in and out of autocast."""
    g = torch.Generator().manual_seed(2)
    z1, z2 = torch.randn(6, 8, generator=g), torch.randn(6, 8, generator=g)
    queue = torch.randn(5, 8, generator=g)  # float32, as a framework's buffer

    def grads(x1: Tensor, x2: Tensor) -> tuple[Tensor, ...]:
        leaves = [x1.requires_grad_(True), x2.requires_grad_(True)]
        pos, neg = ntxent_negatives(leaves[0], leaves[1], queue, block_size=block_size)
        value = F.info_nce(pos, neg) + F.cacr_cosine(pos[:, None], neg)
        assert value.dtype == neg.logsumexp(2.0).dtype == neg.softmax_mean(2.0).dtype
        return (value, *torch.autograd.grad(value, leaves))

    want = grads(z1.bfloat16().float(), z2.bfloat16().float())
    with torch.autocast("cpu", dtype=torch.bfloat16):
        inside = grads(z1.bfloat16().float(), z2.bfloat16().float())
    half = grads(z1.bfloat16(), z2.bfloat16())
    assert want[0].dtype == torch.float32
    assert all(torch.equal(a, b) for a, b in zip(inside, want, strict=True))
    assert torch.equal(half[0], want[0])
    assert all(torch.equal(a, b.bfloat16()) for a, b in zip(half[1:], want[1:], strict=True))


@pytest.mark.parametrize("dtype", HALF)
def test_functional_losses_return_float32_for_half_inputs(dtype: torch.dtype) -> None:
    g = torch.Generator().manual_seed(3)
    pos, neg = torch.rand(4, generator=g).to(dtype), torch.rand(4, 5, generator=g).to(dtype)
    h, hp = (torch.randn(6, 4, generator=g).to(dtype) for _ in range(2))
    values = {
        "info_nce": F.info_nce(pos, neg),
        "macl": F.macl(pos, neg),
        "dual_temperature": F.dual_temperature(pos, neg),
        "cacr_cosine": F.cacr_cosine(pos[:, None], neg),
        "barlow_twins": F.barlow_twins(h, hp),
        "paradigm": F.paradigm(h, hp),
        "mhe": F.mhe(h, hp),
        "uniformity": F.uniformity(h),
    }
    for fn, value in values.items():
        assert value.dtype == torch.float32 and torch.isfinite(value), fn
