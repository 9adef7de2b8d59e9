"""How many kernels a forward + backward of the InfoNCE family launches (issue #38).

On a GPU at common batch sizes a loss call is launch-bound: its time is roughly the number
of aten operators it dispatches that launch a kernel. The count is the same on any device,
so it is pinned on the CPU: the second forward + backward of each loss (``backend="torch"``,
value checks off as on a GPU by default, N = 12, d = 16; the first call may build cached
index tensors), counted with :class:`contrastkit.engine.kernels.KernelCounter`, leaving out
the operators that only re-describe memory (views). For reference the plain ten-line
NT-Xent (``F.normalize``, ``z·zᵀ/τ``, diagonal masked, ``F.cross_entropy``) launches 38;
``ntxent`` launched 79 before issue #38's pass over the operators, 42 after, and 32
since NT-Xent, DCL, FlatNCE, dual temperature, HCL, DCLW, MACL, InfoNCE, SupCon, LASCon,
CACR and CMC take fused ``autograd.Function`` objects from the views
(:mod:`contrastkit.losses.functional._pair_terms`, :mod:`~.functional._view_terms`,
:mod:`~.functional._scaled_terms`; ``benchmarks/op_count.py`` lists them). A ceiling that
fails means a change added kernels to the hot path.
"""

from __future__ import annotations

import pytest
import torch

from contrastkit import losses
from contrastkit.engine.kernels import KernelCounter
from contrastkit.losses.examples import build, example_inputs

# kernels of one forward + backward as measured with torch 2.13 (before: 79, 112, 68, 75,
# 104, 105; ntxent 42, infonce 63, dcl 39, flatnce 46, dual_temperature 61, hcl 114, dclw 48,
# macl 71, supcon 68, lascon 72, cacr 61 and cmc 285 before the fused paths from the views;
# supcon 63 before its class ids by binary search; hcl 103 before its per-anchor loss had a
# closed-form backward; dual_temperature 54 before both temperatures came from one product;
# supcon 56 and lascon 66 before their fused path took the [N, N] label similarities;
# hcl 81 and dclw 47 before their statistics came one output per scale, not stacked;
# macl 46 before its alignment was one dot product and its temperature three operators;
# infonce 44 before queries and keys were normalised together; dual_temperature 46 and
# macl 44 before their stop-gradient weight stopped overflowing below τ ≈ 0.045, where a
# clamp cut it; hcl 77 before its per-anchor loss became a softplus, whose second
# derivative stays finite);
# infonce is MoCo's layout here (a queue of 5 keys), cacr and cmc three views
CEILINGS = {
    "ntxent": 32,
    "infonce": 39,
    "dcl": 36,
    "flatnce": 41,
    "dual_temperature": 52,
    "hcl": 78,
    "dclw": 45,
    "macl": 47,
    "supcon": 45,
    "lascon": 53,
    "cacr": 47,
    "cmc": 40,
}


@pytest.fixture
def checks_off():
    previous = losses.set_check_finite(False)
    yield
    losses.set_check_finite(previous)


@pytest.mark.parametrize("name", sorted(CEILINGS))
def test_forward_backward_launches_at_most_the_pinned_kernels(name: str, checks_off: None) -> None:
    module = build(name, backend="torch")
    inputs = example_inputs(
        name, n=12, d=16, generator=torch.Generator().manual_seed(0), requires_grad=True
    )
    leaves = [t for t in inputs if t.requires_grad]
    torch.autograd.grad(module(*inputs), leaves)
    with KernelCounter() as counter:
        torch.autograd.grad(module(*inputs), leaves)
    assert counter.kernels <= CEILINGS[name]
