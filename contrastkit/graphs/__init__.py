"""The graph modality: TU datasets, graph augmentations, a GIN encoder, SVM evaluation.

Pure torch except the encoder, which imports PyTorch Geometric lazily (extra ``graph``).
"""

from __future__ import annotations

from .data import GraphSet

PREFIX = "tu"
DAVIS = "davis"


def is_graph_dataset(name: str) -> bool:
    """Whether dataset ``name`` is a graph set (``tu:NAME`` or ``davis``)."""
    return name == DAVIS or (name.partition(":")[0] == PREFIX and bool(name.partition(":")[2]))


def trainer_for(name: str) -> type:
    """The trainer class of graph dataset ``name`` (imported on demand)."""
    from .trainer import DavisTrainer, GraphTrainer

    return DavisTrainer if name == DAVIS else GraphTrainer


def register_datasets() -> None:
    """Register ``tu`` (a prefix: ``tu:NAME``) and ``davis`` with the dataset registry
    (``contrastkit.data.registry``, COORDINATION interface 3). Call once at registry set-up;
    each loader takes ``(name, data_root=None, **options)``."""
    from ..data.registry import register_dataset  # type: ignore[import-not-found]
    from .davis import load_davis
    from .tu import load_tu

    def tu(name: str, data_root: str | None = None, **options: object) -> object:
        return load_tu(name.partition(":")[2] or name, data_root, **options)

    def davis(name: str, data_root: str | None = None, **options: object) -> object:
        return load_davis(data_root)

    register_dataset(PREFIX, tu, kind="graph")
    register_dataset(DAVIS, davis, kind="dta", regression=True)


__all__ = ["DAVIS", "PREFIX", "GraphSet", "is_graph_dataset", "register_datasets", "trainer_for"]
