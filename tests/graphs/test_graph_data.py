"""GraphSet: indexing by LongTensor / slice, split, cat, device moves."""

from __future__ import annotations

import torch

from contrastkit.graphs import GraphSet


def small() -> GraphSet:
    xs = [torch.full((n, 2), float(i)) for i, n in enumerate([2, 3, 1, 4])]
    edges = [
        torch.tensor([[0], [1]]),
        torch.tensor([[0, 1], [2, 2]]),
        torch.zeros(2, 0),
        torch.tensor([[3], [0]]),
    ]
    return GraphSet.from_graphs(xs, edges)


def test_index_with_long_tensor_renumbers_and_keeps_order() -> None:
    g = small()
    sub = g[torch.tensor([3, 1])]
    assert len(sub) == 2 and sub.nodes_per_graph().tolist() == [4, 3]
    assert sub.x[:, 0].tolist() == [3.0] * 4 + [1.0] * 3
    assert sub.edge_index.tolist() == [[3, 4, 5], [0, 6, 6]]
    assert sub.batch.tolist() == [0] * 4 + [1] * 3


def test_slice_split_and_cat_round_trip() -> None:
    g = small()
    assert g[1:3].nodes_per_graph().tolist() == [3, 1]
    parts = g.split(3)
    assert [len(p) for p in parts] == [3, 1]
    back = GraphSet.cat(parts)
    assert torch.equal(back.x, g.x) and torch.equal(back.edge_index, g.edge_index)
    assert torch.equal(back.node_ptr, g.node_ptr) and torch.equal(back.edge_ptr, g.edge_ptr)


def test_to_moves_every_tensor() -> None:
    g = small().to("meta")
    assert g.x.device.type == g.edge_index.device.type == "meta"
    assert g.node_ptr.device.type == "cpu" and len(g) == 4  # bookkeeping stays on the CPU
