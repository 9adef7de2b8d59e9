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


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto`` (pyproject's addopts): the whole suite on two workers (the 2-core CI
    machine; issue 41), a file or a test named on the command line in this process, where
    starting workers would cost more than it saves."""
    return 0 if config.option.file_or_dir else 2
