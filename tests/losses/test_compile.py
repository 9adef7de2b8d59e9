"""Every registered loss under ``torch.compile``: one graph, compiled once, the eager values.

A training step that ``torch.compile`` wraps takes the loss into its graph. A loss that
breaks the graph leaves the step in pieces; one that recompiles at every step (a Python
number on the module that changes, such as a step counter counted on the host) hits
dynamo's recompilation limit after eight steps, which under ``fullgraph=True`` is an error.
So each loss runs three steps through ``torch.compile(fullgraph=True)`` with recompilation
made an error, against an eager copy of itself. The value checks, on by default for CPU
tensors, would read values on the host: they are skipped while dynamo traces. The
``aot_eager`` backend traces forward and backward as inductor does without generating code
(a few seconds for all losses); ``tests/losses/test_host_sync.py`` compiles five of them
with inductor.
"""

from __future__ import annotations

import copy

import pytest
import torch
import torch._dynamo

from contrastkit import losses
from contrastkit.losses.examples import build, example_inputs


@pytest.mark.parametrize("name", losses.available())
def test_a_loss_compiles_once_into_one_graph_and_keeps_its_eager_steps(name: str) -> None:
    """With the default value checks, which run on CPU tensors in eager mode only."""
    torch._dynamo.reset()
    module = build(name)
    eager = copy.deepcopy(module)  # the same parameters and state (e.g. a step counter)
    compiled = torch.compile(module, fullgraph=True, backend="aot_eager")
    with torch._dynamo.config.patch(error_on_recompile=True):
        for step in range(3):
            inputs = example_inputs(name, n=12, d=16, generator=torch.Generator().manual_seed(step))
            grads = []
            for fn in (compiled, eager):
                leaves = [x.detach().clone().requires_grad_() for x in inputs[:2]]
                value = fn(*leaves, *inputs[2:])
                value.backward()
                grads.append((value.detach(), [x.grad for x in leaves]))
            (value, grad), (expected, expected_grad) = grads
            torch.testing.assert_close(value, expected, rtol=1e-5, atol=1e-6)
            for got, want in zip(grad, expected_grad, strict=True):
                torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-6)
    if hasattr(module, "diagnostics"):
        assert module.diagnostics() == pytest.approx(eager.diagnostics(), rel=1e-5)


def test_forced_value_checks_do_not_run_inside_a_compiled_graph() -> None:
    """``set_check_finite(True)`` checks every eager call, but a host read inside a graph
    would break it (an error under ``fullgraph=True``): compiled, no check runs."""
    torch._dynamo.reset()
    previous = losses.set_check_finite(True)
    try:
        module = build("macl")
        inputs = example_inputs("macl", n=12, d=16, generator=torch.Generator().manual_seed(0))
        value = torch.compile(module, fullgraph=True, backend="aot_eager")(*inputs)
        torch.testing.assert_close(value, module(*inputs))
        with pytest.raises(ValueError, match="NaN or inf"):  # eager calls still check
            module(inputs[0].clone().fill_(float("nan")), inputs[1])
    finally:
        losses.set_check_finite(previous)


@pytest.mark.skipif(
    not hasattr(torch._functorch.config, "backward_pass_autocast"),
    reason="torch without AOTAutograd's backward_pass_autocast setting",
)
def test_a_compiled_loss_under_autocast_keeps_float32_gradients_with_backward_autocast_off() -> (
    None
):
    """torch.compile traces a loss's backward when its forward runs, under the autocast
    around it ("same_as_forward", torch's default until 2.13 at least), so the backward of
    the float32 computation the loss asked for ran in bfloat16 (gradients 3e-3 off on the
    CPU, pytorch#179804). With ``backward_pass_autocast = "off"`` (what eager does, and
    what the own-loop guide says to set) the gradient is the eager float32 one."""
    g = torch.Generator().manual_seed(3)
    z1, z2 = torch.randn(6, 8, generator=g), torch.randn(6, 8, generator=g)
    eager = [z.clone().requires_grad_() for z in (z1, z2)]
    losses.get("ntxent")(*eager).backward()
    torch._dynamo.reset()
    compiled = [z.clone().requires_grad_() for z in (z1, z2)]
    loss_fn = torch.compile(losses.get("ntxent"))
    with torch._functorch.config.patch(backward_pass_autocast="off"):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            value = loss_fn(*compiled)
        value.backward()
    torch._dynamo.reset()
    for mine, reference in zip(compiled, eager, strict=True):
        torch.testing.assert_close(mine.grad, reference.grad, rtol=1e-5, atol=1e-6)
