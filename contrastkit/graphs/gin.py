"""GIN graph encoder with sum pooling and every layer's readout concatenated.

Layer ``l`` (Xu et al., 2019, Eq. 4.1 with ε = 0, PyG's ``GINConv``):

    h_v^(l) = BN( ReLU( MLP^(l)( h_v^(l-1) + Σ_{u ∈ N(v)} h_u^(l-1) ) ) ),
    MLP^(l) = Linear(·, width) → ReLU → Linear(width, width),

and the graph embedding is the concatenation of the sum-pooled node states of every layer,

    h_G = [ Σ_v h_v^(1) ‖ … ‖ Σ_v h_v^(L) ]   ∈ R^{L·width},

as in InfoGraph / GraphCL's unsupervised-TU encoder (``gin.py``; ReLU then BatchNorm after
each convolution). GraphCL's defaults (You et al., 2020, ``unsupervised_TU``): ``L = 3``
layers (``go.sh``: ``--num-gc-layers 3``), ``width = 32`` (``arguments.py``), hence a
96-dimensional embedding. PyTorch Geometric is imported when the encoder is built.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from .._optional import require
from .data import GraphSet


class GINEncoder(nn.Module):
    """``GraphSet`` → ``[G, layers·width]`` graph embeddings (see the module docstring).

    Args:
        in_dim: node feature width ``F``.
        width: hidden width of every layer (GraphCL: 32).
        layers: number of GIN layers ``L`` (GraphCL unsupervised TU: 3).
    """

    def __init__(self, in_dim: int, width: int = 32, layers: int = 3) -> None:
        super().__init__()
        if in_dim < 1 or width < 1 or layers < 1:
            raise ValueError(
                f"in_dim, width and layers must be >= 1, got {in_dim}, {width}, {layers}"
            )
        require("torch_geometric", "graph", "the graph encoder")
        from torch_geometric.nn import GINConv

        self.in_dim, self.width, self.layers = in_dim, width, layers
        self.feature_dim = width * layers
        self.convs = nn.ModuleList(
            GINConv(
                nn.Sequential(
                    nn.Linear(in_dim if i == 0 else width, width),
                    nn.ReLU(),
                    nn.Linear(width, width),
                )
            )
            for i in range(layers)
        )
        self.norms = nn.ModuleList(nn.BatchNorm1d(width) for _ in range(layers))

    def node_states(self, graphs: GraphSet) -> list[Tensor]:
        """Every layer's node states ``[num_nodes, width]``."""
        if graphs.num_features != self.in_dim:
            raise ValueError(
                f"graphs have {graphs.num_features} node features, encoder expects {self.in_dim}"
            )
        h, states = graphs.x, []
        for conv, norm in zip(self.convs, self.norms, strict=True):
            h = norm(conv(h, graphs.edge_index).relu())
            states.append(h)
        return states

    def forward(self, graphs: GraphSet) -> Tensor:
        from torch_geometric.nn import global_add_pool

        batch, size = graphs.batch, len(graphs)
        pooled = [global_add_pool(h, batch, size=size) for h in self.node_states(graphs)]
        return torch.cat(pooled, dim=1)
