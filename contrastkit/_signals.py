"""SIGTERM as an exception: ``kill``, ``timeout`` and job schedulers (e.g. Slurm's
preemption) send it, and a command should then release what it holds, as after Ctrl-C."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager


class Terminated(KeyboardInterrupt):
    """What SIGTERM raises in the main thread inside :func:`sigterm_unwinds`: a
    ``KeyboardInterrupt``, so whatever cleans up after Ctrl-C cleans up after it too."""


def _raise_terminated(_signum: int, _frame: object) -> None:
    raise Terminated


@contextmanager
def sigterm_unwinds() -> Iterator[None]:
    """For the body, SIGTERM raises :class:`Terminated` instead of ending the process at
    once, so ``finally`` blocks run; the previous handler is put back after. Python runs
    signal handlers in the main thread only: elsewhere this does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
