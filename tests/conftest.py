"""Single-threaded torch for every test: on a shared 2-core machine, torch's default
thread pool oversubscribes the cores and slows tiny models by an order of magnitude.

Without CUDA the Triton kernels run in Triton's CPU interpreter: ``TRITON_INTERPRET=1`` is
set here, before any test module is collected, because triton reads it once, when it is
first imported, and importing ``torch._dynamo`` imports it. Tests of the errors outside
the interpreter set it to ``0`` themselves (the library reads it at each call)."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")


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
