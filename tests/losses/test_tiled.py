"""Memory-tiled mode (``block_size``): the same value and gradient as the dense computation."""

from __future__ import annotations

import pytest
import torch

from contrastkit import losses
from contrastkit.losses import functional as F

CASES = [
    ("ntxent", {}),
    ("dcl", {}),
    ("macl", {}),
    ("flatnce", {}),
    ("hcl", {}),
    ("supcon", {}),
    ("lascon", {"similarity": "tanh", "c": 2.0}),
]


def run(
    name: str,
    kwargs: dict,
    block: int | None,
    inputs: list[torch.Tensor],
    queue: torch.Tensor | None,
):
    leaves = [t.detach().clone().requires_grad_(True) for t in inputs]
    module = losses.get(name, block_size=block, **kwargs)
    if losses.info(name).inputs == "labeled":
        loss = module(*leaves, torch.arange(leaves[0].shape[0]) % 3)
    elif name == "infonce" or queue is not None:
        loss = module(*leaves, queue)
    else:
        loss = module(*leaves)
    return [loss.detach(), *torch.autograd.grad(loss, leaves)]


@pytest.mark.parametrize("name,kwargs", CASES)
@pytest.mark.parametrize("block", [1, 3, 64])
def test_blocks_match_dense(name: str, kwargs: dict, block: int) -> None:
    g = torch.Generator().manual_seed(block)
    inputs = [torch.randn(7, 5, generator=g, dtype=torch.float64) for _ in range(2)]
    for x, y in zip(
        run(name, kwargs, block, inputs, None), run(name, kwargs, None, inputs, None), strict=True
    ):
        torch.testing.assert_close(x, y, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("with_queue", [False, True])
def test_infonce_queue_blocks_match_dense(with_queue: bool) -> None:
    g = torch.Generator().manual_seed(0)
    q, k, queue = (torch.randn(s, 4, generator=g, dtype=torch.float64) for s in (6, 6, 11))
    queue = queue if with_queue else None
    for x, y in zip(
        run("infonce", {}, 4, [q, k], queue), run("infonce", {}, None, [q, k], queue), strict=True
    ):
        torch.testing.assert_close(x, y, rtol=1e-10, atol=1e-10)


def test_ntxent_with_queue_blocks_match_dense_in_float32() -> None:
    g = torch.Generator().manual_seed(1)
    z1, z2, queue = (torch.randn(s, 8, generator=g) for s in (33, 33, 20))
    for x, y in zip(
        run("ntxent", {}, 5, [z1, z2], queue), run("ntxent", {}, None, [z1, z2], queue), strict=True
    ):
        torch.testing.assert_close(x, y, rtol=1e-5, atol=1e-5)


def test_bad_block_size_is_refused() -> None:
    with pytest.raises(ValueError, match="block_size"):
        losses.NTXent(block_size=0)(torch.randn(4, 3), torch.randn(4, 3))
    with pytest.raises(ValueError, match="block_size"):
        losses.LASCon(variant="in", block_size=4)


@pytest.mark.parametrize("block", [2, 5])
def test_blocked_backward_handles_negative_and_zero_upstream_gradients(block: int) -> None:
    # the upstream gradient scales rows of the products, whatever its sign, and zero rows
    g = torch.Generator().manual_seed(5)
    a = torch.randn(9, 4, generator=g, dtype=torch.float64)
    upstream = torch.randn(9, generator=g, dtype=torch.float64)
    upstream[[1, 6]] = 0.0
    exclude = torch.arange(9)[:, None]
    grads = []
    for block_size in (block, None):
        leaf = a.clone().requires_grad_(True)
        lse = F.GramNegatives(leaf, exclude=exclude, block_size=block_size).logsumexp(3.0)
        grads.append(torch.autograd.grad((lse * upstream).sum(), leaf)[0])
    torch.testing.assert_close(grads[0], grads[1], rtol=1e-10, atol=1e-12)
