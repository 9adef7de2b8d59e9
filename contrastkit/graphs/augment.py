"""GraphCL's graph augmentations, per graph, vectorised over a :class:`GraphSet`.

Every function takes ``(graphs, ratio, generator)`` and returns a new set of the same
number of graphs; all randomness comes from the ``torch.Generator``, so the same seed gives
the same views. Each graph ``g`` with ``n_g`` nodes and ``m_g`` undirected edges is changed
independently (You et al., 2020, §3.1; ratio 0.2 is the paper's default, Appendix A):

* :func:`drop_nodes` (ND): ``⌊ratio·n_g⌋`` nodes chosen uniformly without replacement are
  removed with every edge touching them; the rest are renumbered in order;
* :func:`perturb_edges`: ``⌊ratio·m_g⌋`` undirected edges are removed and as many random
  node pairs ``u ≠ v`` of the same graph are added (both directions; added edges get zero
  edge attributes). GraphCL's released code only removes; the paper adds and removes;
* :func:`mask_attributes` (NM): the features of ``⌊ratio·n_g⌋`` nodes are replaced, by
  ``N(0.5, 0.5²)`` noise as in GraphCL's code (``mask="gaussian"``) or by zeros as in
  LASCon App. D.4 (``mask="zero"``);
* :func:`subgraph`: a connected node set grown from one random node until it holds
  ``n_g - ⌊ratio·n_g⌋`` nodes; the induced subgraph is kept. Each round adds
  ``min(|S|, still needed)`` nodes drawn uniformly from the set's frontier (the nodes
  adjacent to the set ``S``), a batched random expansion that needs O(log n + diameter)
  rounds instead of one round per node; a set whose frontier is empty (a disconnected
  graph) continues from a random unvisited node. GraphCL's code keeps ``⌊0.2·n_g⌋``
  nodes (ratio 0.8 here) drawn among the start node's neighbours;
* :func:`mask_subgraph` (SM, LASCon App. D.4): the same connected growth picks
  ``⌊ratio·n_g⌋`` nodes whose features (and the attributes of their edges) become zero.

:class:`GraphAugment` applies one of these to every graph, chosen uniformly per graph
among its ``types`` (GraphCL's "random" setting with all four is the default).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
from torch import Tensor

from .data import GraphSet

TYPES = ("drop_nodes", "perturb_edges", "subgraph", "mask_attributes")


def _check_ratio(ratio: float) -> float:
    if not 0.0 <= ratio < 1.0:
        raise ValueError(f"ratio must be in [0, 1), got {ratio}")
    return float(ratio)


def _rank_within(group: Tensor, keys: Tensor) -> Tensor:
    """Rank (0-based) of each element's key among the elements of its group."""
    order = torch.argsort(group.double() * 2.0 + keys.double())  # keys in [0, 1)
    rank = torch.empty_like(order)
    rank[order] = torch.arange(len(order))
    start = torch.zeros(int(group.max()) + 1 if len(group) else 0, dtype=torch.long)
    start.scatter_reduce_(0, group, rank, "amin", include_self=False)
    return rank - start[group]


def random_nodes(graphs: GraphSet, ratio: float, generator: torch.Generator) -> Tensor:
    """``[num_nodes]`` mask of ``⌊ratio·n_g⌋`` uniformly chosen nodes per graph."""
    count = torch.floor(graphs.nodes_per_graph().double() * ratio).long()
    batch = graphs.batch.cpu()
    keys = torch.rand(graphs.num_nodes, generator=generator)
    return (_rank_within(batch, keys) < count.cpu()[batch]).to(graphs.device)


def drop_nodes(graphs: GraphSet, ratio: float, generator: torch.Generator) -> GraphSet:
    """Remove ``⌊ratio·n_g⌋`` random nodes of each graph and their edges."""
    return graphs.keep_nodes(~random_nodes(graphs, _check_ratio(ratio), generator))


def mask_attributes(
    graphs: GraphSet, ratio: float, generator: torch.Generator, mask: str = "gaussian"
) -> GraphSet:
    """Replace the features of ``⌊ratio·n_g⌋`` random nodes per graph (see module doc)."""
    if mask not in ("gaussian", "zero"):
        raise ValueError(f"mask must be 'gaussian' or 'zero', got {mask!r}")
    chosen = random_nodes(graphs, _check_ratio(ratio), generator)
    if mask == "zero":
        fill = torch.zeros_like(graphs.x)
    else:  # GraphCL aug.py: normal(loc=0.5, scale=0.5)
        noise = torch.randn(graphs.x.shape, generator=generator) * 0.5 + 0.5
        fill = noise.to(graphs.x)
    return graphs.with_x(torch.where(chosen[:, None], fill, graphs.x))


def perturb_edges(graphs: GraphSet, ratio: float, generator: torch.Generator) -> GraphSet:
    """Remove ``⌊ratio·m_g⌋`` undirected edges per graph and add as many random ones."""
    ratio = _check_ratio(ratio)
    src, dst = graphs.edge_index.cpu()
    edge_graph = graphs.edge_graph().cpu()
    upper = src < dst  # one direction of each undirected edge (self-loops left untouched)
    loops = src == dst
    u_src, u_dst, u_graph = src[upper], dst[upper], edge_graph[upper]
    per_graph = torch.bincount(u_graph, minlength=len(graphs))
    count = torch.floor(per_graph.double() * ratio).long()
    keys = torch.rand(len(u_src), generator=generator)
    keep = _rank_within(u_graph, keys) >= count[u_graph] if len(u_src) else upper[upper]
    # added pairs: uniform u != v inside graphs that lose edges
    add_graph = torch.repeat_interleave(torch.arange(len(graphs)), count)
    start = graphs.node_ptr.cpu()[add_graph]
    n = graphs.nodes_per_graph().cpu()[add_graph]
    a = (torch.rand(len(add_graph), generator=generator) * n).long()
    b = (torch.rand(len(add_graph), generator=generator) * (n - 1).clamp(min=1)).long()
    b = b + (b >= a).long()  # v uniform over the other n - 1 nodes
    ok = n > 1
    add_src, add_dst, add_graph = (start + a)[ok], (start + b)[ok], add_graph[ok]
    new_src = torch.cat([u_src[keep], add_src, u_dst[keep], add_dst, src[loops]])
    new_dst = torch.cat([u_dst[keep], add_dst, u_src[keep], add_src, dst[loops]])
    new_graph = torch.cat([u_graph[keep], add_graph, u_graph[keep], add_graph, edge_graph[loops]])
    attr = None
    if graphs.edge_attr is not None:
        e = graphs.edge_attr.cpu()
        fresh = e.new_zeros(len(add_src), e.shape[1])
        attr = torch.cat([e[upper][keep], fresh, e[upper][keep], fresh, e[loops]])
        attr = attr.to(graphs.device)
    dev = graphs.device
    return graphs.with_edges(torch.stack([new_src, new_dst]).to(dev), new_graph.to(dev), attr)


def grow_connected(graphs: GraphSet, target: Tensor, generator: torch.Generator) -> Tensor:
    """``[num_nodes]`` mask of a connected node set of ``target[g]`` nodes per graph, grown
    from one random node; each round adds ``min(|S|, still needed)`` frontier nodes drawn
    uniformly (see the module docstring); an empty frontier jumps to an unvisited node."""
    sizes = graphs.nodes_per_graph()
    target = torch.minimum(target.cpu(), sizes)
    src, dst = graphs.edge_index.cpu()
    batch = graphs.batch.cpu()
    inside = torch.zeros(graphs.num_nodes, dtype=torch.bool)
    offset = (torch.rand(len(graphs), generator=generator) * sizes).long()
    seeded = (sizes > 0) & (target > 0)
    inside[(graphs.node_ptr[:-1] + offset)[seeded]] = True
    while True:
        have = torch.bincount(batch[inside], minlength=len(graphs))
        need = target - have
        if not (need > 0).any():
            break
        frontier = torch.zeros_like(inside)
        frontier[dst[inside[src] & ~inside[dst]]] = True
        frontier &= (need > 0)[batch]
        has_frontier = torch.bincount(batch[frontier], minlength=len(graphs)) > 0
        candidates = frontier | (~inside & (~has_frontier & (need > 0))[batch])
        quota = torch.where(has_frontier, torch.minimum(need, have), need.clamp(max=1))
        idx = torch.nonzero(candidates)[:, 0]
        rank = _rank_within(batch[idx], torch.rand(len(idx), generator=generator))
        inside[idx[rank < quota[batch[idx]]]] = True
    return inside.to(graphs.device)


def subgraph(graphs: GraphSet, ratio: float, generator: torch.Generator) -> GraphSet:
    """Keep a randomly grown connected node set of ``n_g - ⌊ratio·n_g⌋`` nodes per graph."""
    sizes = graphs.nodes_per_graph()
    target = sizes - torch.floor(sizes.double() * _check_ratio(ratio)).long()
    return graphs.keep_nodes(grow_connected(graphs, target, generator))


def mask_subgraph(graphs: GraphSet, ratio: float, generator: torch.Generator) -> GraphSet:
    """Subgraph masking (SM, LASCon App. D.4): zero the features of a connected set of
    ``⌊ratio·n_g⌋`` nodes per graph, and the attributes of the edges touching it."""
    sizes = graphs.nodes_per_graph()
    chosen = grow_connected(
        graphs, torch.floor(sizes.double() * _check_ratio(ratio)).long(), generator
    )
    x = torch.where(chosen[:, None], torch.zeros_like(graphs.x), graphs.x)
    attr = graphs.edge_attr
    if attr is not None:
        touched = chosen[graphs.edge_index[0]] | chosen[graphs.edge_index[1]]
        attr = torch.where(touched[:, None], torch.zeros_like(attr), attr)
    return GraphSet(x, graphs.edge_index, graphs.node_ptr, graphs.edge_ptr, attr)


AUGMENTATIONS: dict[str, Callable[[GraphSet, float, torch.Generator], GraphSet]] = {
    "drop_nodes": drop_nodes,
    "perturb_edges": perturb_edges,
    "subgraph": subgraph,
    "mask_attributes": mask_attributes,
    "mask_subgraph": mask_subgraph,
}


class GraphAugment:
    """Random view generator for graphs: per graph, one augmentation drawn uniformly from
    ``types`` (GraphCL's random choice; one type = that augmentation for every graph).

    Args:
        types: names from :data:`TYPES` (default: all four, GraphCL's "random4") or
            ``"mask_subgraph"``.
        ratio: the fraction each augmentation changes (0.2, You et al., 2020, App. A).
        mask: attribute-masking fill, ``"gaussian"`` (GraphCL) or ``"zero"`` (LASCon NM).

    Call as ``augment(graphs, generator)``; returns a new :class:`GraphSet`.
    """

    def __init__(
        self, types: Sequence[str] | None = None, ratio: float = 0.2, mask: str = "gaussian"
    ) -> None:
        self.types = tuple(TYPES if types is None else types)
        unknown = [t for t in self.types if t not in AUGMENTATIONS]
        if not self.types or unknown:
            raise ValueError(
                f"graph augmentation types must be among {tuple(AUGMENTATIONS)}, got {self.types}"
            )
        self.ratio = _check_ratio(ratio)
        if mask not in ("gaussian", "zero"):
            raise ValueError(f"mask must be 'gaussian' or 'zero', got {mask!r}")
        self.mask = mask

    def _apply(self, name: str, graphs: GraphSet, generator: torch.Generator) -> GraphSet:
        if name == "mask_attributes":  # the only one with a fill option
            return mask_attributes(graphs, self.ratio, generator, self.mask)
        return AUGMENTATIONS[name](graphs, self.ratio, generator)

    def __call__(self, graphs: GraphSet, generator: torch.Generator) -> GraphSet:
        if len(self.types) == 1:
            return self._apply(self.types[0], graphs, generator)
        choice = torch.randint(len(self.types), (len(graphs),), generator=generator)
        parts, order = [], []
        for k, name in enumerate(self.types):
            idx = torch.nonzero(choice == k)[:, 0]
            if len(idx):
                parts.append(self._apply(name, graphs[idx], generator))
                order.append(idx)
        merged = GraphSet.cat(parts)
        inverse = torch.empty(len(graphs), dtype=torch.long)
        inverse[torch.cat(order)] = torch.arange(len(graphs))
        return merged[inverse]

    def __repr__(self) -> str:
        return f"GraphAugment(types={self.types}, ratio={self.ratio}, mask={self.mask!r})"
