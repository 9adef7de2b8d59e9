"""Weighted cosine k-nearest-neighbour classifier of Wu et al. (CVPR 2018, §3.4).

Each test feature votes with its ``k`` most cosine-similar training features; neighbour
``j`` adds ``exp(s_j / τ)`` to its class, ``τ = 0.07`` (Wu et al.'s value), and the class
with the largest total wins. ``k = 200`` is the protocol's standard (MACL Table B.3,
AMCL); a small ``k`` (e.g. 20) is the usual second reading on small data.
"""

from __future__ import annotations

import torch
from torch import Tensor

from ..losses.views import normalize


def knn_predict(
    train_features: Tensor,
    train_labels: Tensor,
    test_features: Tensor,
    k: int = 200,
    temperature: float = 0.07,
    num_classes: int | None = None,
    chunk_size: int = 1024,
) -> Tensor:
    """Predicted labels ``[M]`` of ``test_features [M, d]`` from ``train_features [N, d]``
    and ``train_labels [N]`` (int); ``k`` is capped at ``N``. Memory is ``chunk_size × N``."""
    if train_features.dim() != 2 or test_features.dim() != 2:
        raise ValueError(
            "train_features and test_features must have shapes [N, d] and [M, d], got "
            f"{tuple(train_features.shape)} and {tuple(test_features.shape)}"
        )
    if train_features.shape[1] != test_features.shape[1]:
        raise ValueError(
            f"feature widths differ: {train_features.shape[1]} vs {test_features.shape[1]}"
        )
    if train_labels.shape != (train_features.shape[0],):
        raise ValueError(
            f"train_labels must have shape [N] = [{train_features.shape[0]}], "
            f"got {tuple(train_labels.shape)}"
        )
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    if temperature <= 0:
        raise ValueError(f"temperature must be > 0, got {temperature}")
    classes = int(train_labels.max()) + 1 if num_classes is None else num_classes
    k = min(k, train_features.shape[0])
    bank = normalize(train_features.double())
    labels = train_labels.long()
    preds = []
    for chunk in normalize(test_features.double()).split(chunk_size):
        sim, idx = (chunk @ bank.T).topk(k, dim=1)
        # subtracting the row max leaves the vote ranking unchanged and avoids overflow
        weights = ((sim - sim[:, :1]) / temperature).exp()
        votes = torch.zeros(chunk.shape[0], classes, dtype=weights.dtype, device=chunk.device)
        votes.scatter_add_(1, labels[idx], weights)
        preds.append(votes.argmax(dim=1))
    return torch.cat(preds)


def knn_accuracy(
    train_features: Tensor,
    train_labels: Tensor,
    test_features: Tensor,
    test_labels: Tensor,
    k: int = 200,
    temperature: float = 0.07,
) -> float:
    """Top-1 accuracy of :func:`knn_predict` on ``test_labels [M]``."""
    num_classes = int(max(train_labels.max(), test_labels.max())) + 1
    pred = knn_predict(train_features, train_labels, test_features, k, temperature, num_classes)
    return float((pred == test_labels.long()).double().mean())
