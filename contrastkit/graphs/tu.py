"""TU-format graph classification sets read by path, validated, as a :class:`Split`.

The TU Dortmund layout (Morris et al., 2020) of a set ``NAME`` is a folder
``ROOT/NAME/raw/`` (``ROOT/NAME/`` is accepted too) with, one record per line:

* ``NAME_A.txt``: ``i, j`` — one directed edge between 1-based global node ids (each
  undirected edge appears in both directions; NCI1 writes ``i,j`` without the space);
* ``NAME_graph_indicator.txt``: the 1-based graph id of node ``i`` on line ``i``
  (non-decreasing: a graph's nodes are consecutive);
* ``NAME_graph_labels.txt``: the class of graph ``g`` on line ``g``;
* optional ``NAME_node_labels.txt`` (one integer per node), ``NAME_node_attributes.txt``
  (comma-separated floats per node), ``NAME_edge_labels.txt`` (one integer per line of
  ``_A.txt``).

Every inconsistency (a node id out of range, a label count that differs from the graph
count, an edge between two graphs, a non-number, a NaN / Inf) raises ``ValueError`` naming the file
and, where there is one, the line.

Node features (``features``):

* ``"auto"`` (default): one-hot node labels where the set has them, plus the continuous
  node attributes when ``attributes=True``; for sets with neither (IMDB-BINARY, REDDIT,
  COLLAB) the one-hot degree capped at ``max_degree`` (degrees above it share the last
  bin), PyG's ``OneHotDegree`` convention;
* ``"degree"``: that capped degree one-hot for any set;
* ``"constant"``: a single feature 1 per node — what GraphCL's unsupervised-TU code gives
  sets outside its molecule/protein list (``aug.py`` of You et al., 2020).

GraphCL's code reads PROTEINS without its node attribute (PyG's ``use_node_attr=False``),
hence ``attributes=False`` by default.

Split: like GraphCL's unsupervised protocol (You et al., 2020), the encoder is pre-trained
on every graph without labels and evaluated by a 10-fold cross-validated SVM over every
graph, so ``x_train`` and ``x_test`` are both the whole set (the same object); the graph
trainer evaluates with :func:`contrastkit.graphs.evaluate.svm_cross_validation`, never
with a train/test kNN.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import torch
from torch import Tensor

from ..data import Split
from ..data.reading import reading
from .data import GraphSet, ptr_from_counts

PREFIX = "tu"  # datasets tu:NAME

FEATURES = ("auto", "degree", "constant")
DEFAULT_MAX_DEGREE = 64  # one-hot degree bins 0..64 (IMDB-BINARY's largest degree is 135)


def tu_folder(name: str, data_root: str | Path | None) -> Path:
    """The folder holding ``NAME_A.txt``: ``ROOT/NAME/raw`` or ``ROOT/NAME``."""
    if data_root is None:
        raise ValueError(
            f"dataset tu:{name} needs --data-root (the folder that holds {name}/raw/{name}_A.txt)"
        )
    root = Path(data_root)
    for folder in (root / name / "raw", root / name):
        if (folder / f"{name}_A.txt").is_file():
            return folder
    raise FileNotFoundError(
        f"no TU dataset {name!r} under {str(root)!r}: expected {root / name / 'raw'}/{name}_A.txt, "
        f"{name}_graph_indicator.txt and {name}_graph_labels.txt"
    )


def _read_numbers(path: Path, dtype: type, columns: int | None = None) -> np.ndarray:
    """Rows of comma/space-separated numbers; ``ValueError`` naming file and line."""
    rows: list[list[float | int]] = []
    with reading(path, "UTF-8 text"), path.open(encoding="utf-8") as fh:
        lines = list(fh)
    for number, line in enumerate(lines, start=1):
        text = line.strip()
        if not text:
            continue
        fields = [f for f in text.replace(",", " ").split() if f]
        try:
            floats = [float(f) for f in fields]
        except ValueError:
            raise ValueError(f"{path}, line {number}: expected numbers, got {text!r}") from None
        if not all(math.isfinite(v) for v in floats):
            raise ValueError(f"{path}, line {number}: expected finite numbers, got {text!r}")
        if dtype is int and any(v != int(v) for v in floats):
            raise ValueError(f"{path}, line {number}: expected integers, got {text!r}")
        values: list[float | int] = [int(v) for v in floats] if dtype is int else floats
        if columns is not None and len(values) != columns:
            raise ValueError(f"{path}, line {number}: expected {columns} values, got {len(values)}")
        if rows and len(values) != len(rows[0]):
            raise ValueError(
                f"{path}, line {number}: expected {len(rows[0])} values like line 1, "
                f"got {len(values)}"
            )
        rows.append(values)
    if not rows:
        raise ValueError(f"{path} is empty")
    return np.asarray(rows, dtype=np.int64 if dtype is int else np.float32)


def _one_hot(values: np.ndarray) -> Tensor:
    """Integer labels → one-hot over the distinct values present (sorted)."""
    _, codes = np.unique(values, return_inverse=True)
    return torch.nn.functional.one_hot(torch.as_tensor(codes.reshape(-1)), int(codes.max()) + 1)


def degree_one_hot(graphs: GraphSet, max_degree: int = DEFAULT_MAX_DEGREE) -> Tensor:
    """``[num_nodes, max_degree + 1]`` one-hot of each node's out-degree, capped."""
    degree = torch.bincount(graphs.edge_index[0], minlength=graphs.num_nodes)
    return torch.nn.functional.one_hot(degree.clamp(max=max_degree), max_degree + 1).float()


def read_tu(
    name: str,
    data_root: str | Path | None,
    features: str = "auto",
    attributes: bool = False,
    max_degree: int = DEFAULT_MAX_DEGREE,
) -> tuple[GraphSet, Tensor]:
    """All graphs of TU set ``name`` and their labels ``[G]`` (int64, classes 0..C-1)."""
    if features not in FEATURES:
        raise ValueError(f"features must be one of {FEATURES}, got {features!r}")
    folder = tu_folder(name, data_root)
    path = {
        s: folder / f"{name}_{s}.txt"
        for s in (
            "A",
            "graph_indicator",
            "graph_labels",
            "node_labels",
            "node_attributes",
            "edge_labels",
        )
    }
    for required in ("graph_indicator", "graph_labels"):
        if not path[required].is_file():
            raise FileNotFoundError(f"TU dataset {name!r}: missing {path[required]}")
    indicator = _read_numbers(path["graph_indicator"], int, 1)[:, 0]
    graph_labels = _read_numbers(path["graph_labels"], int, 1)[:, 0]
    edges = _read_numbers(path["A"], int, 2)
    num_nodes, num_graphs = len(indicator), len(graph_labels)
    if indicator.min() < 1 or indicator.max() > num_graphs:
        line = int(np.argmax((indicator < 1) | (indicator > num_graphs))) + 1
        raise ValueError(
            f"{path['graph_indicator']}, line {line}: graph id {indicator[line - 1]} outside "
            f"1..{num_graphs} ({path['graph_labels'].name} has {num_graphs} labels)"
        )
    if np.any(np.diff(indicator) < 0):
        line = int(np.argmax(np.diff(indicator) < 0)) + 2
        raise ValueError(
            f"{path['graph_indicator']}, line {line}: graph ids must be non-decreasing "
            "(each graph's nodes consecutive)"
        )
    counts = np.bincount(indicator - 1, minlength=num_graphs)
    if np.any(counts == 0):
        raise ValueError(
            f"{path['graph_indicator']}: graph {int(np.argmax(counts == 0)) + 1} has no nodes, "
            f"but {path['graph_labels'].name} has {num_graphs} labels"
        )
    bad = (edges < 1) | (edges > num_nodes)
    if bad.any():
        line = int(np.argmax(bad.any(1))) + 1
        raise ValueError(
            f"{path['A']}, line {line}: node id {int(edges[line - 1][bad[line - 1]][0])} outside "
            f"1..{num_nodes} (the node count of {path['graph_indicator'].name})"
        )
    edges = edges - 1
    src_graph, dst_graph = indicator[edges[:, 0]], indicator[edges[:, 1]]
    if np.any(src_graph != dst_graph):
        line = int(np.argmax(src_graph != dst_graph)) + 1
        raise ValueError(
            f"{path['A']}, line {line}: edge joins nodes of graphs {src_graph[line - 1]} and "
            f"{dst_graph[line - 1]}"
        )
    order = np.argsort(src_graph, kind="stable")  # a graph's edges contiguous
    columns: list[Tensor] = []
    if path["node_labels"].is_file():
        node_labels = _read_numbers(path["node_labels"], int, 1)[:, 0]
        _check_count(path["node_labels"], len(node_labels), num_nodes, "nodes")
        if features == "auto":
            columns.append(_one_hot(node_labels).float())
    if attributes and path["node_attributes"].is_file():
        node_attr = _read_numbers(path["node_attributes"], float)
        _check_count(path["node_attributes"], len(node_attr), num_nodes, "nodes")
        if features == "auto":
            columns.append(torch.as_tensor(node_attr))
    edge_attr = None
    if path["edge_labels"].is_file():
        edge_labels = _read_numbers(path["edge_labels"], int, 1)[:, 0]
        _check_count(
            path["edge_labels"], len(edge_labels), len(edges), f"lines in {path['A'].name}"
        )
        edge_attr = _one_hot(edge_labels).float()[torch.as_tensor(order)]
    node_ptr = ptr_from_counts(torch.as_tensor(counts))
    edge_counts = torch.as_tensor(np.bincount(src_graph - 1, minlength=num_graphs))
    edge_index = torch.as_tensor(edges[order].T.copy())
    placeholder = torch.ones(num_nodes, 1)
    graphs = GraphSet(placeholder, edge_index, node_ptr, ptr_from_counts(edge_counts), edge_attr)
    if features == "constant":
        x = placeholder
    elif columns:
        x = torch.cat(columns, dim=1)
    else:
        x = degree_one_hot(graphs, max_degree)
    _, labels = np.unique(graph_labels, return_inverse=True)
    return graphs.with_x(x), torch.as_tensor(labels.reshape(-1), dtype=torch.long)


def _check_count(path: Path, got: int, expected: int, what: str) -> None:
    if got != expected:
        raise ValueError(f"{path} has {got} lines, expected one per {what} ({expected})")


def load_tu(name: str, data_root: str | Path | None = None, **options: object) -> Split:
    """TU set ``name`` as a :class:`Split` of kind ``"graph"`` (train = test = every graph,
    see the module docstring); ``options`` go to :func:`read_tu`."""
    graphs, labels = read_tu(name, data_root, **options)  # type: ignore[arg-type]
    return Split(f"tu:{name}", "graph", graphs, labels, graphs, labels)  # type: ignore[arg-type]
