"""What the sub-commands share: :class:`UsageError` and the ``--threads`` setting."""

from __future__ import annotations


class UsageError(Exception):
    """A user-facing error: printed as ``contrastkit: error: <message>``, exit status 2."""


def apply_threads(threads: int | None) -> None:
    """``torch.set_num_threads(threads)`` for a command's ``--threads`` (``None``: torch's
    default); a value below 1 is a ``ValueError`` naming the flag."""
    if threads is None:
        return
    if threads < 1:
        raise ValueError(f"--threads must be a positive integer, got {threads}")
    import torch

    torch.set_num_threads(threads)
