"""Standard linear evaluation on frozen features, top-k accuracy, label-fraction probe.

:func:`linear_eval` is the protocol of the papers' tables: a linear layer ``W h + b``
trained with cross-entropy on frozen features, reporting top-1 and top-5 test accuracy.
Defaults are MACL App. B.3's (CIFAR-10): 100 epochs of SGD, batch 128, learning rate 0.02,
momentum 0.9, weight decay 0. Features are pre-computed once (the backbone is frozen and
evaluated without augmentation), so an epoch is a pass over an ``[N, d]`` matrix on the
features' own device. ``optimizer="lbfgs"`` instead minimises the same full-batch
objective (plus ``weight_decay/2·‖W‖²``) with L-BFGS, deterministic and without a learning
rate. Features are standardised with the training split's mean and standard deviation
(an affine map a linear layer could absorb, so it only conditions the optimisation; this
project's choice, ``standardize=False`` turns it off).

:func:`label_fraction_probe` is AMCL Table 4's probe: logistic regression on ``n`` labelled
training samples per class (10, 50, 100, 500 by default), each subset drawn with a seed,
evaluated on the full test split.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as tf
from torch import Tensor

from .linear import linear_probe


def topk_accuracy(logits: Tensor, labels: Tensor, ks: Sequence[int] = (1, 5)) -> dict[int, float]:
    """``{k: fraction of rows whose label is among the k largest logits}``; ``k`` is
    capped at the number of classes. ``logits [M, C]``, ``labels [M]``."""
    if logits.dim() != 2 or labels.shape != (logits.shape[0],):
        raise ValueError(
            f"logits must be [M, C] and labels [M], got {tuple(logits.shape)} and "
            f"{tuple(labels.shape)}"
        )
    top = logits.topk(min(max(ks), logits.shape[1]), dim=1).indices
    hit = top == labels.view(-1, 1).to(top.device)
    return {k: float(hit[:, : min(k, logits.shape[1])].any(1).double().mean()) for k in ks}


def _check_features(x_tr: Tensor, y_tr: Tensor, x_te: Tensor, y_te: Tensor) -> None:
    for name, x, y in (("train", x_tr, y_tr), ("test", x_te, y_te)):
        if x.dim() != 2 or y.shape != (x.shape[0],):
            raise ValueError(
                f"{name}_features must be [N, d] and {name}_labels [N], got {tuple(x.shape)} "
                f"and {tuple(y.shape)}"
            )
    if x_tr.shape[1] != x_te.shape[1]:
        raise ValueError(f"feature widths differ: {x_tr.shape[1]} vs {x_te.shape[1]}")


OPTIMIZERS = ("sgd", "lbfgs")
EPOCHS, LR = 100, 0.02  # MACL App. B.3 (CIFAR-10's linear evaluation)


def linear_eval(
    train_features: Tensor,
    train_labels: Tensor,
    test_features: Tensor,
    test_labels: Tensor,
    epochs: int = EPOCHS,
    batch_size: int = 128,
    lr: float = LR,
    momentum: float = 0.9,
    weight_decay: float = 0.0,
    optimizer: str = "sgd",
    standardize: bool = True,
    seed: int = 0,
) -> dict[str, float]:
    """``{"linear_top1", "linear_top5"}`` of a linear classifier on frozen features.

    ``train_features [N, d]`` with int labels ``[N]``; likewise for test. Runs on the
    features' device; ``seed`` fixes initialisation and mini-batch order.
    """
    _check_features(train_features, train_labels, test_features, test_labels)
    if optimizer not in OPTIMIZERS:
        raise ValueError(f"optimizer must be one of {', '.join(OPTIMIZERS)}, got {optimizer!r}")
    if epochs < 1 or batch_size < 1 or lr <= 0:
        raise ValueError(
            f"epochs, batch_size and lr must be positive: {epochs}, {batch_size}, {lr}"
        )
    dev = train_features.device
    x_tr, x_te = train_features.detach().float(), test_features.detach().float().to(dev)
    y_tr, y_te = train_labels.long().to(dev), test_labels.long().to(dev)
    if standardize:
        mean, std = x_tr.mean(0), x_tr.std(0).clamp(min=1e-6)
        x_tr, x_te = (x_tr - mean) / std, (x_te - mean) / std
    classes = int(max(y_tr.max(), y_te.max())) + 1
    gen = torch.Generator().manual_seed(seed)
    layer = torch.nn.Linear(x_tr.shape[1], classes).to(dev)
    with torch.no_grad():
        bound = 1.0 / x_tr.shape[1] ** 0.5
        layer.weight.copy_((torch.rand(layer.weight.shape, generator=gen) * 2 - 1) * bound)
        layer.bias.zero_()
    with torch.enable_grad():
        if optimizer == "sgd":
            opt = torch.optim.SGD(
                layer.parameters(), lr=lr, momentum=momentum, weight_decay=weight_decay
            )
            for _ in range(epochs):
                order = torch.randperm(x_tr.shape[0], generator=gen).to(dev)
                for idx in order.split(batch_size):
                    loss = tf.cross_entropy(layer(x_tr[idx]), y_tr[idx])
                    opt.zero_grad(set_to_none=True)
                    loss.backward()
                    opt.step()
        else:
            opt = torch.optim.LBFGS(
                layer.parameters(), lr=1.0, max_iter=epochs, line_search_fn="strong_wolfe"
            )

            def closure() -> Tensor:
                opt.zero_grad(set_to_none=True)
                loss = tf.cross_entropy(layer(x_tr), y_tr)
                loss = loss + 0.5 * weight_decay * layer.weight.pow(2).sum()
                loss.backward()
                return loss

            opt.step(closure)
    with torch.no_grad():
        acc = topk_accuracy(layer(x_te), y_te, (1, 5))
    return {"linear_top1": acc[1], "linear_top5": acc[5]}


def per_class_subset(labels: Tensor, per_class: int, seed: int = 0) -> Tensor:
    """Sorted indices of ``per_class`` samples of every class (all of a smaller class),
    drawn by a permutation seeded with ``seed``."""
    order = torch.randperm(labels.shape[0], generator=torch.Generator().manual_seed(seed))
    y = labels.long().cpu()[order]
    keep = [order[y == c][:per_class] for c in torch.unique(y).tolist()]
    return torch.cat(keep).sort().values


def label_fraction_probe(
    train_features: Tensor,
    train_labels: Tensor,
    test_features: Tensor,
    test_labels: Tensor,
    per_class: Sequence[int] = (10, 50, 100, 500),
    seeds: Sequence[int] = (0,),
) -> dict[str, float]:
    """AMCL Table 4: ``{"probe_{n}_per_class": accuracy}`` of a logistic regression
    (:func:`~contrastkit.evaluation.linear_probe`) fitted on ``n`` labels per class,
    averaged over ``seeds``; counts above the largest class size are skipped."""
    _check_features(train_features, train_labels, test_features, test_labels)
    largest = int(torch.bincount(train_labels.long().cpu()).max())
    out: dict[str, float] = {}
    for n in per_class:
        if n < 1:
            raise ValueError(f"per_class counts must be >= 1, got {n}")
        if n > largest:
            continue
        accs = []
        for seed in seeds:
            idx = per_class_subset(train_labels, n, seed).to(train_features.device)
            accs.append(
                linear_probe(
                    train_features[idx].cpu(),
                    train_labels[idx].cpu(),
                    test_features.cpu(),
                    test_labels.cpu(),
                )
            )
        out[f"probe_{n}_per_class"] = sum(accs) / len(accs)
    return out
