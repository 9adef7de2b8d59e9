"""The smallest digits run the study tests train (two epochs, a 4-channel CNN), a study
config over it, and a claim held as another process would hold it."""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

import yaml

from contrastkit.study.claims import claim_path

TINY = {
    "framework": "simclr",
    "dataset": "digits",
    "epochs": 2,
    "batch_size": 128,
    "width": 4,
    "feature_dim": 8,
    "proj_dim": 8,
    "knn_k": 20,
    "knn_small_k": 5,
}


def write_study(path: Path, **spec: object) -> Path:
    """A study YAML at ``path`` over :data:`TINY` (its report in ``out/`` beside it), NT-Xent
    the baseline; ``spec`` adds or overrides keys (``arms`` and ``seeds`` at least)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    full = {
        "name": "tiny",
        "paper": "P",
        "table": "T",
        "claim": "dcl beats ntxent",
        "out": str(path.parent / "out"),
        "base": TINY,
        "baseline": "ntxent",
        **spec,
    }
    path.write_text(yaml.safe_dump(full))
    return path


@contextlib.contextmanager
def held_claim(directory: Path, pid: str) -> Iterator[Path]:
    """Hold run ``directory``'s claim for the body as another live process would: ``pid``
    in the claim file, locked through a descriptor of its own (``flock`` locks of two
    descriptors conflict even within one process). Yields the claim file."""
    path = claim_path(directory)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC)
    try:
        os.write(fd, pid.encode())
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        yield path
    finally:
        os.close(fd)
