"""Checkpoint files: written with the SHA-256 of their content inside, verified on load.

:func:`atomic_torch_save` writes a checkpoint (a mapping) with the digest of its content
stored under :data:`CHECKSUM_KEY`, so it stays a plain ``torch.load``-able file, atomically
(:func:`contrastkit.rundir.atomic_write_bytes`); :func:`load_checkpoint` loads with
``weights_only=True`` (nothing is unpickled) and verifies the digest, and every unreadable
file (empty, truncated, flipped bytes, not a checkpoint, missing keys, no digest unless
trusted) raises :class:`CheckpointError`, one line naming the file.

Example:
    >>> import tempfile, torch
    >>> from pathlib import Path
    >>> path = Path(tempfile.mkdtemp()) / "checkpoint.pt"
    >>> atomic_torch_save({"epoch": 1, "w": torch.ones(2)}, path)
    >>> load_checkpoint(path, required=("epoch",))["epoch"]
    1
"""

from __future__ import annotations

import hashlib
import io
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import torch

from .rundir import atomic_write_bytes

CHECKSUM_KEY = "sha256"  # the checkpoint's digest, stored inside it
# "1": load checkpoints without a digest (``--trust-checkpoint``; inherited by a study's jobs)
TRUST_ENV = "CONTRASTKIT_TRUST_CHECKPOINT"


class CheckpointError(ValueError):
    """A checkpoint that cannot be used (missing, empty, corrupt, foreign, incomplete)."""


def state_digest(state: Any) -> str:
    """SHA-256 over a checkpoint's content: every tensor's dtype, shape and raw bytes and
    every other leaf's ``repr``, walked in a fixed order (mapping keys as stored)."""
    digest = hashlib.sha256()

    def walk(node: Any, where: str) -> None:
        if isinstance(node, torch.Tensor):
            flat = node.detach().cpu().contiguous().reshape(-1)
            digest.update(f"{where}:{node.dtype}:{tuple(node.shape)}:".encode())
            digest.update(flat.view(torch.uint8).numpy().tobytes() if flat.numel() else b"")
        elif isinstance(node, dict):
            for key, value in node.items():
                walk(value, f"{where}/{key!r}")
        elif isinstance(node, list | tuple):
            for i, value in enumerate(node):
                walk(value, f"{where}[{i}]")
        else:
            digest.update(f"{where}={node!r};".encode())

    walk(state, "")
    return digest.hexdigest()


def atomic_torch_save(state: dict[str, Any], path: str | Path) -> None:
    """``torch.save`` of the mapping ``state`` plus its :func:`state_digest` under
    ``CHECKSUM_KEY``, written atomically. The file stays a plain ``torch.load``-able
    checkpoint; :func:`load_checkpoint` verifies the digest."""
    buffer = io.BytesIO()
    torch.save({**state, CHECKSUM_KEY: state_digest(state)}, buffer)
    atomic_write_bytes(path, buffer.getvalue())


def load_checkpoint(
    path: str | Path,
    required: Iterable[str] = (),
    map_location: Any = "cpu",
    trust: bool | None = None,
) -> dict[str, Any]:
    """The mapping saved by :func:`atomic_torch_save` at ``path``, loaded with
    ``weights_only=True`` and its digest verified; :class:`CheckpointError` naming
    ``path`` if it is missing, empty, truncated, altered, not a checkpoint, or lacks a
    ``required`` key. A checkpoint without a digest (its key removed, or written before
    digests) is refused unless ``trust`` (``None``: the environment variable
    :data:`TRUST_ENV` is ``"1"``, what ``contrastkit --trust-checkpoint`` sets); trusted,
    it loads unverified."""
    path = Path(path)
    if not path.exists():
        raise CheckpointError(f"checkpoint {str(path)!r} does not exist")
    if path.is_file() and path.stat().st_size == 0:
        raise CheckpointError(f"checkpoint {str(path)!r} is empty (0 bytes)")
    try:
        state = torch.load(path, map_location=map_location, weights_only=True)
    except Exception as exc:  # torch raises several types for unreadable files
        text = str(exc).strip()
        first = text.splitlines()[0][:160] if text else type(exc).__name__
        raise CheckpointError(
            f"checkpoint {str(path)!r} cannot be loaded (truncated, corrupt or not a "
            f"checkpoint): {first}"
        ) from None
    if not isinstance(state, dict):
        raise CheckpointError(f"{str(path)!r} holds a {type(state).__name__}, not a checkpoint")
    saved = state.pop(CHECKSUM_KEY, None)
    missing = [key for key in required if key not in state]
    if missing:
        raise CheckpointError(f"checkpoint {str(path)!r} lacks key(s): {', '.join(missing)}")
    if saved is None:
        if not (os.environ.get(TRUST_ENV) == "1" if trust is None else trust):
            raise CheckpointError(
                f"checkpoint {str(path)!r} has no SHA-256 digest (altered, or written by an "
                "older version), so its content cannot be verified; pass --trust-checkpoint "
                "to load it anyway"
            )
    elif saved != state_digest(state):
        raise CheckpointError(
            f"checkpoint {str(path)!r} is corrupt: its content does not match its SHA-256"
        )
    return state
