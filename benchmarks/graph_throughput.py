"""Graphs per second of GraphCL-style training: contrastkit's batched path against a PyG
example-style loop with the same model, loss and augmentation (node dropping, 20 %).

* ``contrastkit``: ``GraphSet`` indexing, vectorised :func:`drop_nodes` over the batch, the
  union fed to :class:`GINEncoder` directly.
* ``pyg-loop``: a list of ``torch_geometric.data.Data``, node dropping per graph with
  ``torch_geometric.utils.subgraph`` in a Python loop, ``Batch.from_data_list`` collation,
  then the same encoder on the collated batch (how PyG's examples and GraphCL's code
  build views).

Both train the same GIN (3 × 32) + projector with NT-Xent for ``--steps`` steps of
``--batch-size`` graphs, single-threaded; the ratio is measured in the same process.

Usage: ``python benchmarks/graph_throughput.py --data-root ../shared/data/tu --dataset PROTEINS``
"""

from __future__ import annotations

import argparse
import time

import torch

from contrastkit import losses
from contrastkit.graphs import GraphSet
from contrastkit.graphs.augment import drop_nodes
from contrastkit.graphs.gin import GINEncoder
from contrastkit.graphs.tu import read_tu
from contrastkit.models import mlp


def pyg_views(data_list: list, ratio: float, gen: torch.Generator) -> GraphSet:
    """Per-graph node dropping in a Python loop, then PyG collation."""
    from torch_geometric.data import Batch, Data
    from torch_geometric.utils import subgraph

    out = []
    for d in data_list:
        n = d.num_nodes
        keep = torch.randperm(n, generator=gen)[: n - int(n * ratio)].sort().values
        edge_index, _ = subgraph(keep, d.edge_index, relabel_nodes=True, num_nodes=n)
        out.append(Data(x=d.x[keep], edge_index=edge_index))
    batch = Batch.from_data_list(out)
    return GraphSet(batch.x, batch.edge_index, batch.ptr, _edge_ptr(batch))


def _edge_ptr(batch: object) -> torch.Tensor:
    counts = torch.bincount(batch.batch[batch.edge_index[0]], minlength=batch.num_graphs)
    return torch.cat([counts.new_zeros(1), counts.cumsum(0)])


def run(mode: str, graphs: GraphSet, steps: int, batch_size: int, seed: int = 0) -> float:
    from torch_geometric.data import Data

    torch.manual_seed(seed)
    encoder = GINEncoder(graphs.num_features, 32, 3)
    head = mlp(96, 96, 96)
    loss_fn = losses.get("ntxent", temperature=0.2)
    opt = torch.optim.Adam([*encoder.parameters(), *head.parameters()], lr=0.01)
    gen = torch.Generator().manual_seed(seed)
    data_list = (
        [Data(x=graphs[i].x, edge_index=graphs[i].edge_index) for i in range(len(graphs))]
        if mode == "pyg-loop"
        else []
    )
    start = time.perf_counter()
    for _ in range(steps):
        idx = torch.randperm(len(graphs), generator=gen)[:batch_size]
        if mode == "contrastkit":
            batch = graphs[idx]
            views = [drop_nodes(batch, 0.2, gen) for _ in range(2)]
        else:
            chosen = [data_list[i] for i in idx.tolist()]
            views = [pyg_views(chosen, 0.2, gen) for _ in range(2)]
        z1, z2 = (head(encoder(v)) for v in views)
        loss = loss_fn(z1, z2)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return steps * batch_size / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-root", required=True)
    parser.add_argument("--dataset", default="PROTEINS")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=128)
    args = parser.parse_args()
    torch.set_num_threads(1)
    graphs, _ = read_tu(args.dataset, args.data_root)
    rates = {m: run(m, graphs, args.steps, args.batch_size) for m in ("contrastkit", "pyg-loop")}
    for mode, rate in rates.items():
        print(f"{args.dataset} {mode:12s} {rate:8.1f} graphs/s")
    print(f"ratio contrastkit / pyg-loop: {rates['contrastkit'] / rates['pyg-loop']:.2f}")


if __name__ == "__main__":
    main()
