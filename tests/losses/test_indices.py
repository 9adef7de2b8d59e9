"""The constant tensors of the view layouts are built once per shape (issue #38).

At small batches a loss call is bound by its host time, so the index tensors of the 2N,
cross-view and V-view layouts (:mod:`contrastkit.losses._indices`) are kept per shape
instead of rebuilt at every call: a second call of the same shape builds none, a first
call under ``torch.inference_mode()`` does not leave an inference tensor behind for later
autograd calls, and the memo stays bounded. Under ``torch.compile`` the memo is traced
through (``test_host_sync.py`` compiles MACL and SupCon with ``functools.lru_cache``
warnings turned into errors).
"""

from __future__ import annotations

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from contrastkit import losses
from contrastkit.losses import _indices
from contrastkit.losses.examples import build, example_inputs

# operators that build an index or constant tensor from nothing
BUILDERS = {"arange", "ones", "zeros", "full", "eye", "lift_fresh"}


class Builders(TorchDispatchMode):
    """Collects the names of the tensor-building operators dispatched inside the ``with``."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[str] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[override]
        name = str(func).split(".")[1]
        if name in BUILDERS:
            self.seen.append(str(func))
        return func(*args, **(kwargs or {}))


@pytest.fixture
def checks_off():
    previous = losses.set_check_finite(False)
    yield
    losses.set_check_finite(previous)


@pytest.mark.parametrize("name", ["ntxent", "infonce", "macl", "supcon", "cacr"])
def test_a_second_call_of_the_same_shape_builds_no_index_tensor(
    name: str, checks_off: None
) -> None:
    module = build(name, backend="torch")
    inputs = example_inputs(name, n=10, d=8, generator=torch.Generator().manual_seed(0))
    if name == "infonce":
        inputs = inputs[:2]  # the cross-view form: each query excludes its own key
    module(*inputs)
    with Builders() as builders:
        module(*inputs)
    assert builders.seen == []


def test_the_memo_returns_one_tensor_per_shape_and_stays_bounded() -> None:
    cpu = torch.device("cpu")
    first = _indices.pair_exclude(7, 7, 0, cpu)
    assert _indices.pair_exclude(7, 7, 0, cpu) is first
    assert _indices.pair_exclude(7, 14, 7, cpu) is not first
    for n in range(2, 3 + 2 * _indices.MAX_ENTRIES):
        _indices.query_exclude(n, 0, cpu)
    assert torch.equal(_indices.query_exclude(3, 0, cpu), torch.arange(3)[:, None])
    _indices.pair_exclude.cache_clear()  # type: ignore[attr-defined]
    assert _indices.pair_exclude(7, 7, 0, cpu) is not first
    assert torch.equal(_indices.pair_exclude(7, 7, 0, cpu), first)


def test_an_index_first_built_under_inference_mode_serves_autograd_later() -> None:
    module = losses.get("ntxent")
    g = torch.Generator().manual_seed(1)
    z1, z2 = torch.randn(13, 8, generator=g), torch.randn(13, 8, generator=g)
    _indices.pair_exclude.cache_clear()  # type: ignore[attr-defined]
    with torch.inference_mode():
        expected = module(z1, z2)
    leaves = [z1.clone().requires_grad_(), z2.clone().requires_grad_()]
    loss = module(*leaves)
    loss.backward()
    assert torch.equal(loss.detach(), expected)
    assert all(bool(torch.isfinite(x.grad).all()) for x in leaves)
