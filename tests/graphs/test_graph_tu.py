"""The TU reader: contents, node features, and one clear error per kind of bad file."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from contrastkit.graphs.tu import load_tu, read_tu

from .conftest import path, ring, write_tu


def test_reads_graphs_labels_and_one_hot_node_labels(toy_tu: Path) -> None:
    graphs, labels = read_tu("TOY", toy_tu)
    assert len(graphs) == 3
    assert graphs.nodes_per_graph().tolist() == [3, 4, 5]
    assert graphs.edges_per_graph().tolist() == [6, 6, 10]  # both directions
    assert labels.tolist() == [0, 1, 1]  # -1/1 mapped to classes 0/1
    assert graphs.x.shape == (12, 3) and graphs.x.sum(1).eq(1).all()
    assert graphs.x[:3].argmax(1).tolist() == [0, 1, 2]
    # edges stay inside their graph, in global numbering
    second = graphs.edge_index[:, 6:12]
    assert second.min() == 3 and second.max() == 6


def test_nci1_style_comma_without_space(tmp_path: Path) -> None:
    write_tu(tmp_path, "NC", [path(3), ring(3)], [3, 3], [0, 1], sep=",")
    graphs, _ = read_tu("NC", tmp_path)
    assert graphs.num_edges == 10


def test_sets_without_node_labels_get_capped_degree_one_hot(two_class_tu: Path) -> None:
    graphs, _ = read_tu("RINGS", two_class_tu, max_degree=1)
    # rings: every node has degree 2 -> capped into bin 1; paths: end nodes degree 1
    assert graphs.x.shape[1] == 2
    assert graphs.x[: graphs.node_ptr[1]].argmax(1).eq(1).all()
    constant, _ = read_tu("RINGS", two_class_tu, features="constant")
    assert constant.x.shape == (graphs.num_nodes, 1) and constant.x.eq(1).all()


def test_edge_labels_follow_their_edges(tmp_path: Path) -> None:
    write_tu(tmp_path, "E", [path(2), path(2)], [2, 2], [0, 1], edge_labels=[0, 0, 1, 1])
    graphs, _ = read_tu("E", tmp_path)
    assert graphs.edge_attr is not None
    assert graphs.edge_attr.argmax(1).tolist() == [0, 0, 1, 1]


def test_load_tu_is_a_graph_split(toy_tu: Path) -> None:
    split = load_tu("TOY", toy_tu)
    assert split.kind == "graph" and split.name == "tu:TOY"
    assert split.x_train is split.x_test and torch.equal(split.y_train, split.y_test)


@pytest.mark.parametrize(
    ("file", "content", "message"),
    [
        ("A", "1, 2\n2, 1\n1, 99\n", r"TOY_A\.txt, line 3: node id 99 outside 1\.\.12"),
        ("A", "1, 2\n2, x\n", r"TOY_A\.txt, line 2: expected numbers"),
        ("A", "1, 2, 3\n", r"TOY_A\.txt, line 1: expected 2 values"),
        ("A", "1, 4\n", r"TOY_A\.txt, line 1: edge joins nodes of graphs 1 and 2"),
        ("graph_labels", "1\n1\n", r"graph_indicator\.txt, line 8: graph id 3 outside 1\.\.2"),
        ("graph_labels", "1\n1\n1\n1\n", r"graph 4 has no nodes"),
        ("node_labels", "0\n1\n", r"node_labels\.txt has 2 lines, expected one per nodes \(12\)"),
        (
            "graph_indicator",
            "1\n1\n2\n1\n" + "3\n" * 8,
            r"line 4: graph ids must be non-decreasing",
        ),
    ],
)
def test_inconsistent_files_name_file_and_line(
    toy_tu: Path, file: str, content: str, message: str
) -> None:
    (toy_tu / "TOY" / "raw" / f"TOY_{file}.txt").write_text(content)
    with pytest.raises(ValueError, match=message):
        read_tu("TOY", toy_tu)


def test_missing_folder_and_missing_root(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"NOPE_A\.txt"):
        read_tu("NOPE", tmp_path)
    with pytest.raises(ValueError, match="--data-root"):
        read_tu("NOPE", None)
