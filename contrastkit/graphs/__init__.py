"""The graph modality: TU datasets, graph augmentations, a GIN encoder, SVM evaluation.

Pure torch except the encoder, which imports PyTorch Geometric lazily (extra ``graph``).
Importing this package registers the ``graph`` modality (:mod:`.modality`) and its
datasets ``tu:NAME`` (a prefix) and ``davis``.
"""

from ..data import register_dataset
from ..training import register_modality
from .data import GraphSet
from .davis import DAVIS
from .modality import GRAPH, is_graph_dataset, load_davis_set, load_tu_set
from .trainer import DavisTrainer, GraphTrainer
from .tu import PREFIX

register_modality(GRAPH)
register_dataset(PREFIX, load_tu_set, kind="graph", prefix=True, description="TU graph sets")
register_dataset(DAVIS, load_davis_set, kind="dta", regression=True, description="Davis DTA")

__all__ = [
    "DAVIS",
    "GRAPH",
    "PREFIX",
    "DavisTrainer",
    "GraphSet",
    "GraphTrainer",
    "is_graph_dataset",
]
