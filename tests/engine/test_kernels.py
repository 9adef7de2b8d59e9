"""The kernel counter of :mod:`contrastkit.engine.kernels`: which operators it counts."""

from __future__ import annotations

import torch

from contrastkit.engine.kernels import KernelCounter, on_device


def test_a_device_without_an_index_stands_for_every_device_of_its_type() -> None:
    """Tensors report ``cuda:0``; a counter asked for ``"cuda"`` must count them (it
    compared devices with ``==`` and counted none on a GPU: the fourth GPU session's views
    table read "0 + 1 Triton" kernels)."""
    cuda, cuda0, cuda1 = torch.device("cuda"), torch.device("cuda:0"), torch.device("cuda:1")
    assert on_device(cuda0, cuda) and on_device(cuda1, cuda)
    assert on_device(cuda0, cuda0) and not on_device(cuda1, cuda0)
    assert not on_device(torch.device("cpu"), cuda) and not on_device(None, cuda)
    assert on_device(torch.device("meta"), torch.device("meta"))


def test_a_counter_for_one_device_counts_the_operators_whose_result_is_there() -> None:
    host, meta = torch.ones(4), torch.ones(4, device="meta")
    with KernelCounter("meta") as counter:
        (meta * 2).sum()
        (host * 2).sum()  # on the CPU: not counted
    assert dict(counter.counts) == {"aten.mul.Tensor": 1, "aten.sum.default": 1}
    with KernelCounter() as every:
        (meta * 2).sum()
        (host * 2).sum()
    assert every.kernels == 4
