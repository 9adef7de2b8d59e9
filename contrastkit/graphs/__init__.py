"""The graph modality: TU datasets, graph augmentations, a GIN encoder, SVM evaluation.

Pure torch except the encoder, which imports PyTorch Geometric lazily (extra ``graph``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .data import GraphSet

if TYPE_CHECKING:
    from ..data.registry import Split

PREFIX = "tu"
DAVIS = "davis"


def is_graph_dataset(name: str) -> bool:
    """Whether dataset ``name`` is a graph set (``tu:NAME`` or ``davis``)."""
    return name == DAVIS or (name.partition(":")[0] == PREFIX and bool(name.partition(":")[2]))


def trainer_for(name: str) -> type:
    """The trainer class of graph dataset ``name`` (imported on demand)."""
    from .trainer import DavisTrainer, GraphTrainer

    return DavisTrainer if name == DAVIS else GraphTrainer


def _load_tu(name: str, data_root: str | None = None, **options: object) -> Split:
    from .tu import load_tu

    return load_tu(name, data_root, **options)


def _load_davis(data_root: str | None = None) -> Split:
    from .davis import load_davis

    return load_davis(data_root)


def register_datasets() -> None:
    """Register ``tu`` (a prefix: ``tu:NAME``) and ``davis`` with the dataset registry
    (:mod:`contrastkit.data.registry`); :mod:`contrastkit.data` calls this on import. The
    graph trainers load their data themselves; the registry entry makes the names known
    to config validation and ``available_datasets()``. The loaders import their modules
    when called, so that importing :mod:`.davis` or :mod:`.tu` first (which import the
    registry, which registers these) is not a cycle."""
    from ..data.registry import register_dataset

    register_dataset(PREFIX, _load_tu, kind="graph", prefix=True, description="TU graph sets")
    register_dataset(DAVIS, _load_davis, kind="dta", regression=True, description="Davis DTA")


__all__ = ["DAVIS", "PREFIX", "GraphSet", "is_graph_dataset", "register_datasets", "trainer_for"]
