"""GraphDTA-style drug–target encoder, DTA regression head and metrics (LASCon App. D.4).

Encoder (Nguyen et al., 2021, GINConvNet; LASCon App. D.4): the drug graph goes through a
5-layer GIN (:class:`~.gin.GINEncoder` layers, width 32 as GraphDTA), the last layer is
sum-pooled and mapped by Linear-ReLU to ``half = feature_dim / 2`` (GraphDTA: 128); the
protein codes go through an embedding and a 3-layer 1-D CNN (LASCon: "three layers of
1D CNN"; Conv1d(kernel 8)-ReLU-MaxPool(3) per layer, then a global max pool and
Linear-ReLU to ``half``). The embedding is the concatenation ``[drug ‖ protein]``
(GraphDTA: 128 + 128). Each distinct drug graph and protein of a batch is encoded once and
gathered per pair (Davis has 68 drugs and 442 proteins; in training mode this changes
what GIN's batch norm averages over only when pairs share an unaugmented drug graph, i.e.
never for augmented views). GraphDTA embeds residues in 128 dimensions with 32 filters and
DeepDTA uses 32/64/96 filters; ``embed_dim`` and ``filters`` default to 32 here to fit a
shared CPU (say so when reporting).

Two downstream protocols, scored on DeepDTA's test fold:

* :func:`dta_finetune`, LASCon's (App. D.4, "the same as GraphDTA"): the pre-trained
  encoder plus GraphDTA's regression head (Linear(256, 1024)-ReLU-Dropout(0.2)-
  Linear(1024, 512)-ReLU-Dropout(0.2)-Linear(512, 1), GraphDTA ``GINConvNet``) trained end
  to end on MSE with Adam, lr 5e-4, batch 256 (LASCon App. D.4), for ``epochs`` epochs (the
  paper: 200) on unaugmented pairs; the test fold is scored once, after the last epoch
  (no model selection on it);
* :func:`dta_head`, a cheaper probe: an MLP head on frozen embeddings.

Metrics: MSE (GraphDTA's training loss and headline metric), MAE, Pearson, Spearman, and the
concordance index

    CI = Σ_{i,j: y_i > y_j} h(p_i - p_j) / #{(i, j): y_i > y_j},
    h(d) = 1 if d > 0, ½ if d = 0, 0 otherwise

(Gönen & Heller, 2005; DeepDTA's ``get_cindex``).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable

import torch
from torch import Tensor, nn

from ..evaluation.downstream import pearson, spearman
from .davis import PROTEIN_ALPHABET, DTAPairs
from .gin import GINEncoder


class GraphDTAEncoder(nn.Module):
    """``DTAPairs`` → ``[N, feature_dim]`` (see the module docstring)."""

    def __init__(
        self,
        atom_features: int,
        feature_dim: int = 256,
        width: int = 32,
        layers: int = 5,
        embed_dim: int = 32,
        filters: int = 32,
        kernel: int = 8,
    ) -> None:
        super().__init__()
        if feature_dim % 2:
            raise ValueError(f"feature_dim must be even (drug ‖ protein), got {feature_dim}")
        half = feature_dim // 2
        self.feature_dim = feature_dim
        self.gin = GINEncoder(atom_features, width, layers)
        self.drug_head = nn.Sequential(nn.Linear(width, half), nn.ReLU())
        self.embed = nn.Embedding(len(PROTEIN_ALPHABET) + 1, embed_dim, padding_idx=0)
        blocks: list[nn.Module] = []
        for i in range(3):
            blocks += [
                nn.Conv1d(embed_dim if i == 0 else filters, filters, kernel),
                nn.ReLU(),
                nn.MaxPool1d(3),
            ]
        self.cnn = nn.Sequential(*blocks, nn.AdaptiveMaxPool1d(1), nn.Flatten())
        self.protein_head = nn.Sequential(nn.Linear(filters, half), nn.ReLU())

    def forward(self, pairs: DTAPairs) -> Tensor:
        from torch_geometric.nn import global_add_pool

        # each distinct drug graph / protein of the batch is encoded once, then gathered
        drugs, drug_of_pair = torch.unique(pairs.drug_idx, return_inverse=True)
        graphs = pairs.drugs[drugs.cpu()]
        last = self.gin.node_states(graphs)[-1]
        drug = self.drug_head(global_add_pool(last, graphs.batch, size=len(graphs)))
        proteins, protein_of_pair = torch.unique(pairs.prot_idx, return_inverse=True)
        codes = pairs.proteins[proteins]
        protein = self.protein_head(self.cnn(self.embed(codes).transpose(1, 2)))
        return torch.cat([drug[drug_of_pair], protein[protein_of_pair]], dim=1)


def concordance_index(pred: Tensor, target: Tensor, block: int = 2048) -> float:
    """CI of ``pred [N]`` against ``target [N]`` (module docstring), in row blocks; NaN
    when a prediction is NaN or infinite (a diverged head), as its MSE is."""
    pred, target = pred.double().reshape(-1), target.double().reshape(-1)
    if not bool(torch.isfinite(pred).all()):
        return math.nan
    num = den = 0.0
    for start in range(0, len(pred), block):
        y_i, p_i = target[start : start + block, None], pred[start : start + block, None]
        ordered = y_i > target[None, :]
        diff = p_i - pred[None, :]
        h = (diff > 0).double() + 0.5 * (diff == 0).double()
        num += float((h * ordered).sum())
        den += float(ordered.sum())
    if den == 0:
        raise ValueError("concordance index needs at least two different targets")
    return num / den


# a regression's numbers on the test pairs, by name: final.json's dta_<name> and
# finetune_<name> (the graph modality declares them from here)
REGRESSION: dict[str, Callable[[Tensor, Tensor], float]] = {
    "mse": lambda pred, y: float(((pred - y) ** 2).mean()),
    "mae": lambda pred, y: float((pred - y).abs().mean()),
    "pearson": pearson,
    "spearman": spearman,
    "ci": concordance_index,
}


def _metrics(pred: Tensor, y: Tensor, prefix: str) -> dict[str, float]:
    return {f"{prefix}_{name}": number(pred, y) for name, number in REGRESSION.items()}


def graphdta_head(in_dim: int = 256, dropout: float = 0.2) -> nn.Sequential:
    """GraphDTA's regression head (``GINConvNet``: fc1 1024, fc2 512, out 1, dropout 0.2)."""
    return nn.Sequential(
        nn.Linear(in_dim, 1024),
        nn.ReLU(),
        nn.Dropout(dropout),
        nn.Linear(1024, 512),
        nn.ReLU(),
        nn.Dropout(dropout),
        nn.Linear(512, 1),
    )


def dta_finetune(
    encoder: nn.Module,
    train_pairs: DTAPairs,
    train_labels: Tensor,
    test_pairs: DTAPairs,
    test_labels: Tensor,
    epochs: int,
    batch_size: int = 256,
    lr: float = 5e-4,
    seed: int = 0,
) -> dict[str, float]:
    """Fine-tune a copy of ``encoder`` (``DTAPairs → [N, d]``) with :func:`graphdta_head`
    end to end on the MSE of pKd (module docstring); ``encoder`` itself is not changed.

    Returns ``finetune_mse``, ``finetune_mae``, ``finetune_pearson``, ``finetune_spearman``,
    ``finetune_ci`` on ``test_pairs`` and ``finetune_train_mse`` (mean over the last
    epoch's batches). The target is standardised with the training mean and std and the
    prediction mapped back (GraphDTA regresses raw pKd: an affine change of the output
    layer, which saves the first epochs from fitting the offset). ``seed`` fixes the
    head's initialisation, the shuffling and dropout."""
    if epochs < 1:
        raise ValueError(f"fine-tuning epochs must be >= 1, got {epochs}")
    device = next(encoder.parameters()).device
    y = train_labels.float().to(device)
    y_mean, y_std = y.mean(), y.std().clamp(min=1e-6)
    gen = torch.Generator().manual_seed(seed)
    with torch.random.fork_rng(devices=[]), torch.enable_grad():
        torch.manual_seed(seed)
        model = nn.Sequential(copy.deepcopy(encoder), graphdta_head(encoder.feature_dim))
        model.to(device).train()
        opt = torch.optim.Adam(model.parameters(), lr=lr)
        for _ in range(epochs):
            order = torch.randperm(len(train_pairs), generator=gen).to(device)
            total = 0.0
            for idx in order.split(batch_size):
                pred = model(train_pairs[idx])[:, 0]
                loss = nn.functional.mse_loss(pred, (y[idx] - y_mean) / y_std)
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
                total += float(loss.detach()) * len(idx)
    model.eval()
    with torch.no_grad():
        pred = torch.cat([model(chunk)[:, 0] for chunk in test_pairs.split(1024)])
    out = _metrics(pred.cpu() * y_std.cpu() + y_mean.cpu(), test_labels.float().cpu(), "finetune")
    return {**out, "finetune_train_mse": total / len(train_pairs) * float(y_std) ** 2}


def dta_head(
    train_features: Tensor,
    train_labels: Tensor,
    test_features: Tensor,
    test_labels: Tensor,
    seed: int = 0,
    hidden: int = 256,
    steps: int = 500,
    lr: float = 1e-3,
) -> dict[str, float]:
    """MLP head (Linear-ReLU-Linear) trained full-batch with Adam on MSE over frozen,
    standardised features (20 % of the training pairs pick the best step); returns
    ``dta_mse``, ``dta_mae``, ``dta_pearson``, ``dta_spearman``, ``dta_ci`` on the test
    pairs. Width, steps and lr are this project's choices for ~25k pairs."""
    x_tr, x_te = train_features.detach().float(), test_features.detach().float()
    mean, std = x_tr.mean(0), x_tr.std(0).clamp(min=1e-6)
    x_tr, x_te = (x_tr - mean) / std, (x_te - mean) / std
    y_mean, y_std = train_labels.float().mean(), train_labels.float().std().clamp(min=1e-6)
    target = (train_labels.float() - y_mean) / y_std
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        head = nn.Sequential(nn.Linear(x_tr.shape[1], hidden), nn.ReLU(), nn.Linear(hidden, 1))
        perm = torch.randperm(len(x_tr))
    n_val = max(1, len(x_tr) // 5)
    fit, val = perm[n_val:], perm[:n_val]
    opt = torch.optim.Adam(head.parameters(), lr=lr)
    best, state = float("inf"), copy.deepcopy(head.state_dict())
    with torch.enable_grad():
        for _ in range(steps):
            loss = nn.functional.mse_loss(head(x_tr[fit])[:, 0], target[fit])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            with torch.no_grad():
                v = float(nn.functional.mse_loss(head(x_tr[val])[:, 0], target[val]))
            if v < best:
                best, state = v, copy.deepcopy(head.state_dict())
    head.load_state_dict(state)
    with torch.no_grad():
        pred = head(x_te)[:, 0] * y_std + y_mean
    return _metrics(pred, test_labels.float(), "dta")
