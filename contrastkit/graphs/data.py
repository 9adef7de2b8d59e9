"""A batch of graphs stored as one disjoint union, indexable like a tensor.

:class:`GraphSet` is the graph modality's data container for the shared training loop
(COORDINATION's "modality contract"): ``len(g)``, ``g[idx]`` with a ``LongTensor`` of graph
indices or a ``slice``, ``g.split(n)`` for chunked encoding and ``g.to(device)``. It keeps
PyTorch Geometric's batched layout (Fey & Lenssen, 2019) — node features concatenated,
``edge_index`` in global node numbering, a ``batch`` vector of graph ids — so an encoder
consumes it without collating, and graph ``g`` owns nodes ``node_ptr[g]:node_ptr[g+1]``
and edges ``edge_ptr[g]:edge_ptr[g+1]``.

Example:
    >>> import torch
    >>> g = GraphSet.from_graphs(
    ...     [torch.ones(2, 1), torch.ones(3, 1)],
    ...     [torch.tensor([[0, 1], [1, 0]]), torch.tensor([[0, 2], [2, 0]])],
    ... )
    >>> len(g), g.num_nodes, g[torch.tensor([1])].edge_index.tolist()
    (2, 5, [[0, 2], [2, 0]])
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor


def ptr_from_counts(counts: Tensor) -> Tensor:
    """``[G]`` counts → ``[G + 1]`` offsets (``ptr[0] = 0``)."""
    return torch.cat([counts.new_zeros(1), counts.cumsum(0)])


def ranges(ptr: Tensor, idx: Tensor) -> tuple[Tensor, Tensor]:
    """Flat element indices of the segments ``ptr[i]:ptr[i+1]`` for ``i`` in ``idx``, in
    order, and the position in ``idx`` each element comes from (both ``[sum of lengths]``)."""
    lengths = ptr[idx + 1] - ptr[idx]
    owner = torch.repeat_interleave(torch.arange(len(idx)), lengths)
    start = ptr_from_counts(lengths)[:-1]
    within = torch.arange(int(lengths.sum())) - start[owner]
    return ptr[idx][owner] + within, owner


@dataclass(frozen=True)
class GraphSet:
    """``G`` graphs as one disjoint union.

    Attributes:
        x: node features ``[num_nodes, F]`` (float).
        edge_index: ``[2, num_edges]`` (int64) in global node numbering; an undirected edge
            is stored in both directions, as in the TU files and PyG.
        node_ptr: ``[G + 1]`` node offsets; ``edge_ptr``: ``[G + 1]`` edge offsets (a graph's
            edges are contiguous). Both stay on the CPU (bookkeeping, so indexing a set on
            an accelerator needs no device synchronisation).
        edge_attr: optional ``[num_edges, E]`` edge features.
    """

    x: Tensor
    edge_index: Tensor
    node_ptr: Tensor
    edge_ptr: Tensor
    edge_attr: Tensor | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "node_ptr", self.node_ptr.cpu())
        object.__setattr__(self, "edge_ptr", self.edge_ptr.cpu())
        if self.x.dim() != 2 or self.edge_index.dim() != 2 or self.edge_index.shape[0] != 2:
            raise ValueError(
                f"x must be [num_nodes, F] and edge_index [2, num_edges], got "
                f"{tuple(self.x.shape)} and {tuple(self.edge_index.shape)}"
            )
        if int(self.node_ptr[-1]) != self.x.shape[0]:
            raise ValueError(f"node_ptr ends at {int(self.node_ptr[-1])}, x has {self.x.shape[0]}")
        if int(self.edge_ptr[-1]) != self.edge_index.shape[1]:
            raise ValueError(
                f"edge_ptr ends at {int(self.edge_ptr[-1])}, edge_index has "
                f"{self.edge_index.shape[1]} edges"
            )

    # ------------------------------------------------------------ construction
    @classmethod
    def from_graphs(
        cls,
        xs: Sequence[Tensor],
        edge_indices: Sequence[Tensor],
        edge_attrs: Sequence[Tensor] | None = None,
    ) -> GraphSet:
        """Union of graphs given by their node features and local ``edge_index``."""
        node_counts = torch.tensor([x.shape[0] for x in xs], dtype=torch.long)
        edge_counts = torch.tensor([e.shape[1] for e in edge_indices], dtype=torch.long)
        node_ptr = ptr_from_counts(node_counts)
        shift = torch.repeat_interleave(node_ptr[:-1], edge_counts)
        edge_index = torch.cat([e.long() for e in edge_indices], dim=1) + shift
        attr = None if edge_attrs is None else torch.cat(list(edge_attrs))
        return cls(torch.cat(list(xs)), edge_index, node_ptr, ptr_from_counts(edge_counts), attr)

    @classmethod
    def cat(cls, parts: Sequence[GraphSet]) -> GraphSet:
        """The graphs of every part, in order (edge attributes kept only if all have them)."""
        node_offsets = ptr_from_counts(torch.tensor([p.num_nodes for p in parts]))
        edge_offsets = ptr_from_counts(torch.tensor([p.num_edges for p in parts]))
        with_attr = all(p.edge_attr is not None for p in parts)
        return cls(
            torch.cat([p.x for p in parts]),
            torch.cat([p.edge_index + o for p, o in zip(parts, node_offsets, strict=False)], 1),
            torch.cat(
                [parts[0].node_ptr[:1]]
                + [p.node_ptr[1:] + o for p, o in zip(parts, node_offsets, strict=False)]
            ),
            torch.cat(
                [parts[0].edge_ptr[:1]]
                + [p.edge_ptr[1:] + o for p, o in zip(parts, edge_offsets, strict=False)]
            ),
            torch.cat([p.edge_attr for p in parts]) if with_attr else None,  # type: ignore[misc]
        )

    # ---------------------------------------------------------------- queries
    def __len__(self) -> int:
        return self.node_ptr.shape[0] - 1

    @property
    def num_nodes(self) -> int:
        return self.x.shape[0]

    @property
    def num_edges(self) -> int:
        return self.edge_index.shape[1]

    @property
    def num_features(self) -> int:
        return self.x.shape[1]

    @property
    def device(self) -> torch.device:
        return self.x.device

    def nodes_per_graph(self) -> Tensor:
        return self.node_ptr[1:] - self.node_ptr[:-1]

    def edges_per_graph(self) -> Tensor:
        return self.edge_ptr[1:] - self.edge_ptr[:-1]

    @property
    def batch(self) -> Tensor:
        """``[num_nodes]`` graph id of every node (PyG's ``batch`` vector)."""
        return torch.repeat_interleave(
            torch.arange(len(self), device=self.device),
            self.nodes_per_graph().to(self.device),
            output_size=self.num_nodes,
        )

    def edge_graph(self) -> Tensor:
        """``[num_edges]`` graph id of every edge."""
        return torch.repeat_interleave(
            torch.arange(len(self), device=self.device),
            self.edges_per_graph().to(self.device),
            output_size=self.num_edges,
        )

    # --------------------------------------------------------------- indexing
    def __getitem__(self, idx: Tensor | slice | int) -> GraphSet:
        """The graphs ``idx`` (LongTensor, slice or int) as a new set, renumbered."""
        if isinstance(idx, int):
            idx = torch.tensor([idx])
        if isinstance(idx, slice):
            idx = torch.arange(len(self))[idx]
        idx = torch.as_tensor(idx, dtype=torch.long).reshape(-1).cpu()
        if len(idx) and (int(idx.min()) < -len(self) or int(idx.max()) >= len(self)):
            raise IndexError(f"graph index out of range for a set of {len(self)} graphs")
        idx = idx % max(len(self), 1)
        node_ptr, edge_ptr = self.node_ptr.cpu(), self.edge_ptr.cpu()
        nodes, _ = ranges(node_ptr, idx)
        edges, edge_owner = ranges(edge_ptr, idx)
        new_node_ptr = ptr_from_counts(node_ptr[idx + 1] - node_ptr[idx])
        shift = (new_node_ptr[:-1] - node_ptr[idx])[edge_owner]
        dev = self.device
        return GraphSet(
            self.x[nodes.to(dev)],
            self.edge_index[:, edges.to(dev)] + shift.to(dev),
            new_node_ptr,
            ptr_from_counts(edge_ptr[idx + 1] - edge_ptr[idx]),
            None if self.edge_attr is None else self.edge_attr[edges.to(dev)],
        )

    def split(self, size: int) -> list[GraphSet]:
        """Consecutive chunks of ``size`` graphs (as ``Tensor.split``), for chunked encoding."""
        return [self[i : i + size] for i in range(0, len(self), size)]

    def to(self, device: torch.device | str) -> GraphSet:
        """The same graphs with every tensor on ``device``."""
        return GraphSet(
            self.x.to(device),
            self.edge_index.to(device),
            self.node_ptr,
            self.edge_ptr,
            None if self.edge_attr is None else self.edge_attr.to(device),
        )

    # ------------------------------------------------------------- subgraphs
    def keep_nodes(self, keep: Tensor) -> GraphSet:
        """Induced subgraphs on the nodes where ``keep [num_nodes]`` is true: the other
        nodes and every edge touching them are removed, nodes renumbered in order."""
        new_id = torch.cumsum(keep.long(), 0) - 1
        edge_keep = keep[self.edge_index[0]] & keep[self.edge_index[1]]
        graph_of_node = self.batch
        node_counts = torch.bincount(graph_of_node[keep], minlength=len(self))
        edge_counts = torch.bincount(self.edge_graph()[edge_keep], minlength=len(self))
        return GraphSet(
            self.x[keep],
            new_id[self.edge_index[:, edge_keep]],
            ptr_from_counts(node_counts),
            ptr_from_counts(edge_counts),
            None if self.edge_attr is None else self.edge_attr[edge_keep],
        )

    def with_edges(
        self, edge_index: Tensor, edge_graph: Tensor, edge_attr: Tensor | None = None
    ) -> GraphSet:
        """The same nodes with a new edge list (``edge_graph`` gives each edge's graph);
        edges are reordered so that every graph's edges are contiguous."""
        order = torch.argsort(edge_graph, stable=True)
        counts = torch.bincount(edge_graph, minlength=len(self))
        return GraphSet(
            self.x,
            edge_index[:, order],
            self.node_ptr,
            ptr_from_counts(counts),
            None if edge_attr is None else edge_attr[order],
        )

    def with_x(self, x: Tensor) -> GraphSet:
        """The same graphs with node features ``x``."""
        return GraphSet(x, self.edge_index, self.node_ptr, self.edge_ptr, self.edge_attr)
