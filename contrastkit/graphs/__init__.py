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


__all__ = ["DAVIS", "PREFIX", "GraphSet", "is_graph_dataset", "trainer_for"]
