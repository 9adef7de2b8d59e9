"""Tiny TU-format folders written by the tests (never read from ../shared)."""

from __future__ import annotations

from pathlib import Path

import pytest


def write_tu(
    root: Path,
    name: str,
    graphs: list[list[tuple[int, int]]],
    sizes: list[int],
    labels: list[int],
    node_labels: list[int] | None = None,
    edge_labels: list[int] | None = None,
    sep: str = ", ",
) -> Path:
    """Write a TU folder ``root/name/raw``: ``graphs[g]`` are local undirected edges of graph
    ``g`` (written in both directions), ``sizes[g]`` its node count."""
    raw = root / name / "raw"
    raw.mkdir(parents=True)
    lines, indicator, offset = [], [], 0
    for g, (edges, size) in enumerate(zip(graphs, sizes, strict=True)):
        indicator += [g + 1] * size
        for a, b in edges:
            lines += [
                f"{a + offset + 1}{sep}{b + offset + 1}",
                f"{b + offset + 1}{sep}{a + offset + 1}",
            ]
        offset += size
    (raw / f"{name}_A.txt").write_text("\n".join(lines) + "\n")
    (raw / f"{name}_graph_indicator.txt").write_text("\n".join(map(str, indicator)) + "\n")
    (raw / f"{name}_graph_labels.txt").write_text("\n".join(map(str, labels)) + "\n")
    if node_labels is not None:
        (raw / f"{name}_node_labels.txt").write_text("\n".join(map(str, node_labels)) + "\n")
    if edge_labels is not None:
        (raw / f"{name}_edge_labels.txt").write_text("\n".join(map(str, edge_labels)) + "\n")
    return raw


def ring(n: int) -> list[tuple[int, int]]:
    return [(i, (i + 1) % n) for i in range(n)]


def path(n: int) -> list[tuple[int, int]]:
    return [(i, i + 1) for i in range(n - 1)]


@pytest.fixture
def toy_tu(tmp_path: Path) -> Path:
    """``TOY``: 3 graphs (a triangle, a 4-path, a 5-ring), labels -1/1/1, node labels."""
    write_tu(
        tmp_path,
        "TOY",
        [ring(3), path(4), ring(5)],
        [3, 4, 5],
        [-1, 1, 1],
        node_labels=[0, 1, 2] + [1] * 4 + [2] * 5,
    )
    return tmp_path


@pytest.fixture
def two_class_tu(tmp_path: Path) -> Path:
    """``RINGS``: 20 rings (label 0) and 20 paths (label 1) of 6-9 nodes, no node labels."""
    graphs, sizes, labels = [], [], []
    for i in range(40):
        n = 6 + i % 4
        graphs.append(ring(n) if i % 2 == 0 else path(n))
        sizes.append(n)
        labels.append(i % 2)
    write_tu(tmp_path, "RINGS", graphs, sizes, labels)
    return tmp_path
