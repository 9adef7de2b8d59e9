"""The smallest digits run the study tests train (two epochs, a 4-channel CNN), and a
study config over it."""

from __future__ import annotations

from pathlib import Path

import yaml

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
