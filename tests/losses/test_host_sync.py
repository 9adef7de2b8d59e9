"""No registered loss makes the host wait for the device (issue #38).

On a GPU, reading a tensor's value on the host (``.item()``, ``bool(t)``, ``float(t)``, an
output whose size depends on data) stops Python until the device has caught up, so the
launches of the rest of the step no longer overlap the device's work; at common batch
sizes, where a loss is a few dozen small kernels, that is most of its time. The reads
show up on any device as the aten operators counted here, so the rule is checked on the
CPU: a forward + backward of every registered loss (value checks off, as on a GPU by
default) dispatches none of them.
"""

from __future__ import annotations

from collections import Counter

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from contrastkit import losses
from contrastkit.engine.kernels import BlockingTransfers
from contrastkit.losses.examples import build, example_inputs
from contrastkit.losses.functional import _gram_torch
from contrastkit.losses.functional._common import reads_values
from contrastkit.losses.supervised_views import _class_ids

# Operators that read a value on the host, or whose output size depends on the data.
HOST_READS = {
    "aten._local_scalar_dense.default",
    "aten.item.default",
    "aten.is_nonzero.default",
    "aten.equal.default",
    "aten.nonzero.default",
    "aten.masked_select.default",
    "aten._unique2.default",
    "aten.unique_dim.default",
    "aten.bincount.default",
    "aten.repeat_interleave.Tensor",
}


class HostReads(TorchDispatchMode):
    """Counts the operators of :data:`HOST_READS` dispatched inside the ``with``."""

    def __init__(self) -> None:
        super().__init__()
        self.counts: Counter[str] = Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[override]
        if str(func) in HOST_READS:
            self.counts[str(func)] += 1
        return func(*args, **(kwargs or {}))


def _step(name: str) -> Counter[str]:
    """Host reads of the second forward + backward of ``name`` (the first may read a
    buffer once, e.g. a step counter)."""
    module = build(name)
    inputs = example_inputs(
        name, n=12, d=16, generator=torch.Generator().manual_seed(0), requires_grad=True
    )
    module(*inputs).sum().backward()
    with HostReads() as reads:
        module(*inputs).sum().backward()
    return reads.counts


@pytest.fixture
def checks_off():
    previous = losses.set_check_finite(False)
    yield
    losses.set_check_finite(previous)


@pytest.mark.parametrize("name", losses.available())
def test_a_step_of_every_loss_reads_nothing_on_the_host(name: str, checks_off: None) -> None:
    assert not _step(name)


@pytest.mark.filterwarnings("error:Dynamo detected a call to a `functools.lru_cache`")
@pytest.mark.parametrize("name", ["macl", "supcon", "ntxent", "cacr", "cmc"])
def test_a_loss_compiles_into_one_graph(name: str, checks_off: None) -> None:
    """No host read means no graph break: MACL's adaptive τ and SupCon's class ids included,
    and the fused paths from the views of NT-Xent, CACR and CMC."""
    module = build(name)
    inputs = example_inputs(name, n=12, d=16, generator=torch.Generator().manual_seed(4))
    compiled = torch.compile(module, fullgraph=True)
    leaves = [x.detach().clone().requires_grad_() for x in inputs[:2]]
    loss = compiled(*leaves, *inputs[2:])
    loss.backward()
    assert loss.item() == pytest.approx(module(*inputs).item(), rel=1e-5)
    assert all(bool(torch.isfinite(x.grad).all()) for x in leaves)


@pytest.mark.parametrize("name", losses.available())
def test_a_step_of_every_loss_makes_no_blocking_copy_to_the_device(
    name: str, checks_off: None
) -> None:
    """A tensor made from host values on the device (``torch.tensor(x, device=...)``) is a
    copy that blocks the host on CUDA, as a read does; :class:`BlockingTransfers` lists
    them on ``meta`` tensors. The first call may build cached index tensors (on ``meta``
    some cannot be built, e.g. by boolean indexing): the second must make no copy."""
    module = build(name).to("meta")
    inputs = example_inputs(name, n=12, d=16, generator=torch.Generator().manual_seed(0))
    meta = [x.to("meta").requires_grad_(x.is_floating_point()) for x in inputs]
    try:
        module(*meta).sum().backward()
    except (NotImplementedError, RuntimeError) as error:
        pytest.skip(f"its first call cannot run on meta: {str(error)[:60]}")
    with BlockingTransfers() as transfers:
        module(*meta).sum().backward()
    assert transfers.found == []


def test_macl_with_a_fixed_temperature_makes_no_blocking_copy_on_its_general_path() -> None:
    """Its τ0 was ``torch.tensor(τ0, device=...)`` at every call (found by the test above's
    tool; the module's own calls take the fused path, which fills τ on the device)."""
    pos, neg = torch.empty(8, device="meta"), torch.empty(8, 7, device="meta")
    with BlockingTransfers() as transfers:
        losses.get("macl", adaptive=False).similarity_loss(pos, neg)
    assert transfers.found == []


def test_the_value_checks_read_on_the_cpu_by_default_and_nowhere_when_off() -> None:
    previous = losses.set_check_finite(None)
    try:
        assert sum(_step("ntxent").values()) == 1  # the finite-loss check
        assert reads_values(torch.zeros(1)) and not reads_values(torch.zeros(1, device="meta"))
        losses.set_check_finite(True)
        assert reads_values(torch.zeros(1, device="meta"))
        losses.set_check_finite(False)
        assert not reads_values(torch.zeros(1))
    finally:
        assert losses.set_check_finite(previous) is False


@pytest.mark.parametrize(
    "labels",
    [
        torch.tensor([3, 1, 3, 7, 1, 0]),
        torch.randint(-4, 4, (64,), generator=torch.Generator().manual_seed(1)),
        torch.rand(40, generator=torch.Generator().manual_seed(2)).round(decimals=1),
        torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]]),
        torch.tensor([True, False, False, True]),
    ],
)
def test_class_ids_partition_the_samples_as_unique_does(labels: torch.Tensor) -> None:
    """Same index iff same label (the partition of ``torch.unique``'s inverse), in [0, N)."""
    dim = 0 if labels.dim() == 2 else None
    expected = torch.unique(labels, dim=dim, return_inverse=True)[1]
    ids = _class_ids(labels)
    assert torch.equal(ids[:, None] == ids[None, :], expected[:, None] == expected[None, :])
    assert int(ids.min()) >= 0 and int(ids.max()) < labels.shape[0]


def test_the_underflow_guard_changes_nothing_where_no_row_underflows() -> None:
    g = torch.Generator().manual_seed(3)
    a = torch.nn.functional.normalize(torch.randn(20, 8, generator=g), dim=1)
    exclude = torch.arange(20)[:, None]
    assert _gram_torch.needs_guard(10.0, unit=False, dtype=torch.float32)
    assert not _gram_torch.needs_guard(10.0, unit=True, dtype=torch.float32)
    assert _gram_torch.needs_guard(40.0, unit=True, dtype=torch.float32)
    results = []
    for unit in (True, False):  # unguarded, guarded
        for mode in ("lse", "mean"):
            x = a.clone().requires_grad_()
            if mode == "lse":
                out = _gram_torch.logsumexp(x, 10.0, exclude=exclude, unit=unit)
            else:
                out = _gram_torch.softmax_mean(x, 10.0, exclude=exclude, unit=unit)
            (grad,) = torch.autograd.grad(out.sum(), x)
            results.append((out, grad))
    for (out_u, grad_u), (out_g, grad_g) in zip(results[:2], results[2:], strict=True):
        assert torch.equal(out_u, out_g) and torch.equal(grad_u, grad_g)


@pytest.mark.parametrize("name", [n for n in losses.available() if losses.info(n).diagnostics])
def test_diagnostic_tensors_are_the_diagnostics_without_a_host_read(name: str) -> None:
    """A loss with ``diagnostic_tensors()`` gives the values of ``diagnostics()`` as device
    tensors, reading nothing (what the trainer keeps per step); empty before a call."""
    module = build(name)
    tensors = getattr(module, "diagnostic_tensors", None)
    if tensors is None:
        pytest.skip(f"{name} reports floats only (read at every step)")
    assert tensors() == {} and module.diagnostics() == {}
    module(*example_inputs(name, n=12, d=16, generator=torch.Generator().manual_seed(2)))
    with HostReads() as reads:
        values = tensors()
    assert not reads.counts and all(isinstance(v, torch.Tensor) for v in values.values())
    assert {k: float(v) for k, v in values.items()} == module.diagnostics()
