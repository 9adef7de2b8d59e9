"""The graph modality: TU datasets, graph augmentations, a GIN encoder, SVM evaluation.

Pure torch except the encoder, which imports PyTorch Geometric lazily (extra ``graph``).
"""

from __future__ import annotations

from .data import GraphSet

PREFIX = "tu"


def is_graph_dataset(name: str) -> bool:
    """Whether dataset ``name`` is a graph set (``tu:NAME``)."""
    return name.partition(":")[0] == PREFIX and bool(name.partition(":")[2])


__all__ = ["PREFIX", "GraphSet", "is_graph_dataset"]
