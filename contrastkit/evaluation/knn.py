"""Weighted cosine k-nearest-neighbour classifier of Wu et al. (CVPR 2018, §3.4).

Each test feature votes with its ``k`` most cosine-similar training features; neighbour
``j`` adds ``exp(s_j / τ)`` to its class, ``τ = 0.07`` (Wu et al.'s value), and the class
with the largest total wins. ``k = 200`` is the protocol's standard (MACL Table B.3,
AMCL); a small ``k`` (e.g. 20) is the usual second reading on small data, and
:func:`knn_accuracies` reads several ``k`` from one pass over the similarities.

Example:
    >>> g = torch.Generator().manual_seed(0)
    >>> train, labels = torch.randn(300, 8, generator=g), torch.randint(0, 3, (300,), generator=g)
    >>> test = train[:50] + 0.01 * torch.randn(50, 8, generator=g)
    >>> accuracy = knn_accuracies(train, labels, test, labels[:50], ks=(1, 20))
    >>> accuracy[1]  # each test point is a slightly moved training point
    1.0
    >>> accuracy[20] == knn_accuracy(train, labels, test, labels[:50], k=20)
    True
"""

from __future__ import annotations

from collections.abc import Sequence

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
    and ``train_labels [N]`` (int); ``k`` is capped at ``N``. Memory is ``chunk_size × N``.
    Runs on ``train_features``' device (test features and labels are moved there)."""
    return knn_predict_many(
        train_features, train_labels, test_features, (k,), temperature, num_classes, chunk_size
    )[k]


def knn_predict_many(
    train_features: Tensor,
    train_labels: Tensor,
    test_features: Tensor,
    ks: Sequence[int],
    temperature: float = 0.07,
    num_classes: int | None = None,
    chunk_size: int = 1024,
) -> dict[int, Tensor]:
    """:func:`knn_predict` for every ``k`` in ``ks`` (``{k: [M]}``) from one similarity
    pass: the ``[M, N]`` products and one top-``max(ks)`` selection are shared, and a
    smaller ``k`` votes with the first ``k`` of those neighbours (sorted by similarity).
    With distinct similarities this is exactly a separate call per ``k``; a tie at a
    smaller ``k``'s boundary may pick a different one of the tied neighbours."""
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
    if not ks or min(ks) < 1:
        raise ValueError(f"k must be >= 1, got {list(ks)}")
    if temperature <= 0:
        raise ValueError(f"temperature must be > 0, got {temperature}")
    classes = int(train_labels.max()) + 1 if num_classes is None else num_classes
    capped = {k: min(k, train_features.shape[0]) for k in ks}
    bank = normalize(train_features.double())
    labels = train_labels.long().to(bank.device)
    preds: dict[int, list[Tensor]] = {k: [] for k in ks}
    for chunk in normalize(test_features.double().to(bank.device)).split(chunk_size):
        sim, idx = (chunk @ bank.T).topk(max(capped.values()), dim=1)
        # subtracting the row max leaves the vote ranking unchanged and avoids overflow
        weights = ((sim - sim[:, :1]) / temperature).exp()
        neighbour_labels = labels[idx]
        for k, kept in capped.items():
            votes = torch.zeros(chunk.shape[0], classes, dtype=weights.dtype, device=bank.device)
            votes.scatter_add_(1, neighbour_labels[:, :kept], weights[:, :kept])
            preds[k].append(votes.argmax(dim=1))
    return {k: torch.cat(p) for k, p in preds.items()}


def knn_accuracy(
    train_features: Tensor,
    train_labels: Tensor,
    test_features: Tensor,
    test_labels: Tensor,
    k: int = 200,
    temperature: float = 0.07,
) -> float:
    """Top-1 accuracy of :func:`knn_predict` on ``test_labels [M]``."""
    return knn_accuracies(
        train_features, train_labels, test_features, test_labels, (k,), temperature
    )[k]


def knn_accuracies(
    train_features: Tensor,
    train_labels: Tensor,
    test_features: Tensor,
    test_labels: Tensor,
    ks: Sequence[int],
    temperature: float = 0.07,
) -> dict[int, float]:
    """Top-1 accuracy on ``test_labels [M]`` for every ``k`` in ``ks`` (``{k: accuracy}``),
    from one similarity pass (:func:`knn_predict_many`): the trainer's two readings,
    ``k = 200`` and the small ``k``, cost one."""
    num_classes = int(max(train_labels.max(), test_labels.max())) + 1
    preds = knn_predict_many(
        train_features, train_labels, test_features, ks, temperature, num_classes
    )
    truth = test_labels.long()
    return {k: float((p == truth.to(p.device)).double().mean()) for k, p in preds.items()}
