"""Downstream prediction head on frozen representations, and regression metrics.

LASCon §3.2 / App. D.1: after contrastive pre-training "the projection layer is replaced
by the prediction layer", an MLP with one hidden layer trained on the representations
with a supervised L1 loss (App. D.2, D.5). Here the encoder stays frozen (the features
are given), so the head measures what the representation holds:

* regression: L1 loss on standardised targets (training mean / std), MAE in the labels'
  own units, Pearson's r and Spearman's ρ between predictions and targets;
* classification: cross-entropy, accuracy.

Features are standardised with the training split's statistics. The head is trained
full-batch with Adam (lr 1e-2, up to 300 steps, hidden width 64) on 80 % of the training
split; the other 20 % (a seeded random subset) picks the step with the lowest validation
loss (early stopping), so the test split never influences the head. These are this
project's choices for a few hundred to a few thousand samples, fixed so runs compare.
"""

from __future__ import annotations

import copy

import torch
from torch import Tensor, nn

HIDDEN = 64
STEPS = 300
LR = 1e-2
VAL_FRACTION = 0.2


def _ranks(x: Tensor) -> Tensor:
    """Average ranks (1-based) of ``x [N]``, ties sharing the mean of their positions."""
    order = torch.argsort(x, stable=True)
    ordinal = torch.empty_like(x)
    ordinal[order] = torch.arange(1, x.shape[0] + 1, dtype=x.dtype)
    _, inverse, counts = torch.unique(x, return_inverse=True, return_counts=True)
    # per tie group: sum of ordinal ranks / group size
    sums = torch.zeros(counts.shape[0], dtype=x.dtype).index_add_(0, inverse, ordinal)
    return (sums / counts.to(x.dtype))[inverse]


def pearson(x: Tensor, y: Tensor) -> float:
    """Pearson's r of ``x [N]`` and ``y [N]`` (float64); 0.0 when either is constant
    (no linear association can be measured; scipy would return NaN)."""
    x, y = _pair(x, y)
    xc, yc = x - x.mean(), y - y.mean()
    denom = (xc.norm() * yc.norm()).item()
    if denom == 0.0:
        return 0.0
    return float((xc @ yc).item() / denom)


def spearman(x: Tensor, y: Tensor) -> float:
    """Spearman's ρ: Pearson's r of the average ranks (ties averaged, as scipy)."""
    x, y = _pair(x, y)
    return pearson(_ranks(x), _ranks(y))


def regression_metrics(pred: Tensor, target: Tensor) -> dict[str, float]:
    """``{"mae", "pearson", "spearman"}`` of predictions against targets, both ``[N]``."""
    pred, target = _pair(pred, target)
    return {
        "mae": float((pred - target).abs().mean()),
        "pearson": pearson(pred, target),
        "spearman": spearman(pred, target),
    }


def _pair(x: Tensor, y: Tensor) -> tuple[Tensor, Tensor]:
    for name, v in (("x", x), ("y", y)):
        if not isinstance(v, Tensor) or v.dim() != 1:
            got = tuple(v.shape) if isinstance(v, Tensor) else type(v).__name__
            raise ValueError(f"{name} must be a tensor of shape [N], got {got}")
    if x.shape != y.shape or x.shape[0] < 2:
        raise ValueError(
            f"x and y must have the same shape [N] with N >= 2, got {tuple(x.shape)} "
            f"and {tuple(y.shape)}"
        )
    return x.detach().double(), y.detach().double()


def prediction_head(
    train_features: Tensor,
    train_labels: Tensor,
    test_features: Tensor,
    test_labels: Tensor,
    task: str = "regression",
    hidden: int = HIDDEN,
    steps: int = STEPS,
    lr: float = LR,
    seed: int = 0,
) -> dict[str, float]:
    """Train an MLP head (Linear-ReLU-Linear) on frozen ``train_features [N, d]`` and
    score it on ``test_features [M, d]``.

    Returns ``{"head_mae", "head_pearson", "head_spearman"}`` for ``task="regression"``
    (float labels ``[N]``) or ``{"head_accuracy"}`` for ``task="classification"`` (int
    labels). ``seed`` fixes the head's initialisation and the validation subset.
    """
    if task not in ("regression", "classification"):
        raise ValueError(f"task must be 'regression' or 'classification', got {task!r}")
    for name, f, y in (
        ("train", train_features, train_labels),
        ("test", test_features, test_labels),
    ):
        if f.dim() != 2 or y.shape != (f.shape[0],):
            raise ValueError(
                f"{name}_features must be [N, d] and {name}_labels [N], got "
                f"{tuple(f.shape)} and {tuple(y.shape)}"
            )
    if train_features.shape[1] != test_features.shape[1]:
        raise ValueError(
            f"feature widths differ: {train_features.shape[1]} vs {test_features.shape[1]}"
        )
    x_tr, x_te = train_features.detach().float(), test_features.detach().float()
    mean, std = x_tr.mean(0), x_tr.std(0).clamp(min=1e-6)
    x_tr, x_te = (x_tr - mean) / std, (x_te - mean) / std
    regression = task == "regression"
    if regression:
        y_mean, y_std = train_labels.float().mean(), train_labels.float().std().clamp(min=1e-6)
        target = (train_labels.float() - y_mean) / y_std
        out_dim = 1
    else:
        target = train_labels.long()
        out_dim = int(max(train_labels.max(), test_labels.max())) + 1
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        head = nn.Sequential(
            nn.Linear(x_tr.shape[1], hidden), nn.ReLU(), nn.Linear(hidden, out_dim)
        )
        perm = torch.randperm(x_tr.shape[0])
    n_val = max(1, round(VAL_FRACTION * x_tr.shape[0]))
    fit_idx, val_idx = perm[n_val:], perm[:n_val]

    def objective(out: Tensor, y: Tensor) -> Tensor:
        if regression:
            return (out[:, 0] - y).abs().mean()
        return nn.functional.cross_entropy(out, y)

    opt = torch.optim.Adam(head.parameters(), lr=lr)
    best, best_state = float("inf"), copy.deepcopy(head.state_dict())
    with torch.enable_grad():
        for _ in range(steps):
            loss = objective(head(x_tr[fit_idx]), target[fit_idx])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            with torch.no_grad():
                val = float(objective(head(x_tr[val_idx]), target[val_idx]))
            if val < best:
                best, best_state = val, copy.deepcopy(head.state_dict())
    head.load_state_dict(best_state)
    with torch.no_grad():
        out = head(x_te)
    if regression:
        pred = out[:, 0] * y_std + y_mean
        return {f"head_{k}": v for k, v in regression_metrics(pred, test_labels.float()).items()}
    return {"head_accuracy": float((out.argmax(1) == test_labels.long()).double().mean())}
