"""Single-threaded torch for every test: on a shared 2-core machine, torch's default
thread pool oversubscribes the cores and slows tiny models by an order of magnitude."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch


@pytest.fixture(autouse=True)
def _one_torch_thread() -> Iterator[None]:
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)
