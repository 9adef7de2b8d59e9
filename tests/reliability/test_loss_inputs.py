"""Loss API robustness (issue 17 item 8): every registered loss names a bad input in one
line, zero rows get bounded gradients, and every module takes any float dtype."""

from __future__ import annotations

import inspect

import numpy as np
import pytest
import torch

from contrastkit import losses
from contrastkit.losses.examples import build, example_inputs

NAMES = losses.available()


def _gen() -> torch.Generator:
    return torch.Generator().manual_seed(0)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_non_finite_input_is_named(name: str, bad: float) -> None:
    inputs = list(example_inputs(name, generator=_gen()))
    inputs[0] = inputs[0].clone()
    inputs[0].view(-1)[3] = bad
    loss = build(name)
    first = next(iter(inspect.signature(loss.forward).parameters))
    # named as the input also where it first broke something inside (AMCL's learned
    # temperatures: "tau_pos must hold finite temperatures" before 2026-12-08)
    with pytest.raises(ValueError, match=rf"loss '{name}': input {first} holds NaN or inf"):
        loss(*inputs)


@pytest.mark.parametrize("name", NAMES)
def test_switch_turns_the_finite_check_off(name: str) -> None:
    inputs = list(example_inputs(name, generator=_gen()))
    inputs[0] = torch.full_like(inputs[0], float("nan"))
    previous = losses.set_check_finite(False)
    try:  # AMCL's check of its learned temperatures follows the same switch
        assert not torch.isfinite(build(name)(*inputs))
    finally:
        losses.set_check_finite(previous)


@pytest.mark.parametrize("name", NAMES)
def test_non_tensor_and_empty_feature_inputs(name: str) -> None:
    inputs = list(example_inputs(name, generator=_gen()))
    for wrong in (inputs[0].tolist(), inputs[0].numpy(), 3):
        with pytest.raises(TypeError, match=r"must be a torch\.Tensor"):
            build(name)(wrong, *inputs[1:])
    empty = [x[..., :0] if x.is_floating_point() and x.dim() >= 2 else x for x in inputs]
    with pytest.raises(ValueError, match=r"d = 0|must have shape"):
        build(name)(*empty)


def test_empty_queue_and_nan_labels() -> None:
    q, k, _ = example_inputs("infonce", generator=_gen())
    with pytest.raises(ValueError, match="queue is empty"):
        losses.get("infonce")(q, k, q[:0])
    z1, z2, _ = example_inputs("supcon", generator=_gen())
    for name in ("supcon", "lascon"):
        with pytest.raises(ValueError, match="labels hold NaN"):
            losses.get(name)(z1, z2, torch.full((8,), float("nan")))
    with pytest.raises(TypeError, match=r"z1 must be a torch\.Tensor, got ndarray"):
        losses.get("align_uniform")(np.ones((8, 4)), z2)


@pytest.mark.parametrize("name", NAMES)
def test_zero_row_gradient_is_bounded(name: str) -> None:
    inputs = example_inputs(name, generator=_gen(), requires_grad=True)
    with torch.no_grad():
        inputs[0].view(-1, inputs[0].shape[-1])[0] = 0.0
    loss = build(name)(*inputs)
    loss.backward()
    grad = inputs[0].grad
    assert grad is not None and torch.isfinite(grad).all()
    assert grad.abs().max() < 1e3, float(grad.abs().max())


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float64])
def test_any_float_dtype(name: str, dtype: torch.dtype) -> None:
    inputs = example_inputs(name, dtype=dtype, generator=_gen(), requires_grad=True)
    loss = build(name)(*inputs)  # the module stays float32 (AMCL's heads too)
    assert torch.isfinite(loss)
    loss.float().backward()
    assert all(torch.isfinite(x.grad).all() for x in inputs if x.grad is not None)
