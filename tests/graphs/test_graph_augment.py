"""Graph augmentations: what each removes or changes, per graph, reproducible from a seed."""

from __future__ import annotations

import pytest
import torch

from contrastkit.graphs import GraphSet
from contrastkit.graphs.augment import (
    GraphAugment,
    drop_nodes,
    mask_attributes,
    perturb_edges,
    subgraph,
)

from .conftest import path, ring


def make_set(sizes: list[int], shapes: list[str] | None = None) -> GraphSet:
    """Graphs whose node feature is the node's global id (to track survivors)."""
    xs, edges, start = [], [], 0
    for i, n in enumerate(sizes):
        pairs = (ring if (shapes or ["ring"] * len(sizes))[i] == "ring" else path)(n)
        e = torch.tensor(pairs, dtype=torch.long).T
        edges.append(torch.cat([e, e.flip(0)], dim=1))
        xs.append(torch.arange(start, start + n, dtype=torch.float32)[:, None])
        start += n
    return GraphSet.from_graphs(xs, edges)


def undirected_set(g: GraphSet) -> set[tuple[int, int]]:
    """Edges as pairs of original node ids (the feature), unordered."""
    ids = g.x[:, 0].long()
    src, dst = ids[g.edge_index[0]], ids[g.edge_index[1]]
    return {(min(a, b), max(a, b)) for a, b in zip(src.tolist(), dst.tolist(), strict=True)}


def test_drop_nodes_removes_nodes_and_their_edges_and_reindexes() -> None:
    g = make_set([10, 5, 20])
    out = drop_nodes(g, 0.2, torch.Generator().manual_seed(0))
    assert out.nodes_per_graph().tolist() == [8, 4, 16]  # n - floor(0.2 n)
    kept = set(out.x[:, 0].long().tolist())
    original = undirected_set(g)
    # exactly the original edges between surviving nodes remain
    assert undirected_set(out) == {e for e in original if e[0] in kept and e[1] in kept}
    # renumbered: ids within 0..num_nodes-1, each graph's edges within its own node range
    for k in range(len(out)):
        lo, hi = out.node_ptr[k], out.node_ptr[k + 1]
        e = out.edge_index[:, out.edge_ptr[k] : out.edge_ptr[k + 1]]
        assert e.numel() == 0 or (e.min() >= lo and e.max() < hi)


def test_same_seed_same_view_other_seed_other_view() -> None:
    g = make_set([12, 9, 15])
    aug = GraphAugment()
    a = aug(g, torch.Generator().manual_seed(3))
    b = aug(g, torch.Generator().manual_seed(3))
    c = aug(g, torch.Generator().manual_seed(4))
    assert torch.equal(a.x, b.x) and torch.equal(a.edge_index, b.edge_index)
    assert not (
        a.x.shape == c.x.shape and torch.equal(a.x, c.x) and torch.equal(a.edge_index, c.edge_index)
    )


def test_perturb_edges_keeps_symmetry_and_edge_count() -> None:
    g = make_set([10, 20])
    out = perturb_edges(g, 0.2, torch.Generator().manual_seed(0))
    assert out.edges_per_graph().tolist() == g.edges_per_graph().tolist()
    pairs = set(zip(out.edge_index[0].tolist(), out.edge_index[1].tolist(), strict=True))
    assert all((b, a) in pairs for a, b in pairs)
    kept = undirected_set(out) & undirected_set(g)
    assert len(kept) >= 8 + 16  # floor(0.2 m) removed of m = 10 and 20 (additions may repeat)
    assert len(kept) < 30  # something was removed
    # every edge stays inside its graph
    assert (out.edge_index[:, :20] < 10).all() and (out.edge_index[:, 20:] >= 10).all()


def test_mask_attributes_changes_exactly_the_chosen_nodes() -> None:
    g = make_set([10, 10]).with_x(torch.ones(20, 3))
    out = mask_attributes(g, 0.2, torch.Generator().manual_seed(0), mask="zero")
    masked = out.x.eq(0).all(1)
    assert masked.view(2, 10).sum(1).tolist() == [2, 2]
    assert out.x[~masked].eq(1).all() and torch.equal(out.edge_index, g.edge_index)


def test_subgraph_is_connected_and_of_the_right_size() -> None:
    g = make_set([10, 25, 7], ["path", "ring", "path"])
    out = subgraph(g, 0.2, torch.Generator().manual_seed(1))
    assert out.nodes_per_graph().tolist() == [8, 20, 6]
    for k in range(len(out)):  # a connected induced path / ring piece: n - 1 undirected edges
        n = int(out.node_ptr[k + 1] - out.node_ptr[k])
        assert int(out.edge_ptr[k + 1] - out.edge_ptr[k]) // 2 >= n - 1


def test_random_choice_keeps_graph_order() -> None:
    g = make_set([6, 30, 8, 40])
    out = GraphAugment(ratio=0.2)(g, torch.Generator().manual_seed(0))
    # node ids (features) of graph k stay among graph k's original ids
    for k in range(len(g)):
        ids = out.x[out.node_ptr[k] : out.node_ptr[k + 1], 0]
        lo, hi = g.node_ptr[k], g.node_ptr[k + 1]
        real = ids[ids.eq(ids.round())]  # gaussian-masked nodes carry noise instead
        assert ((real >= lo) & (real < hi)).float().mean() > 0.5


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="ratio"):
        GraphAugment(ratio=1.0)
    with pytest.raises(ValueError, match="types"):
        GraphAugment(types=["rotate"])
