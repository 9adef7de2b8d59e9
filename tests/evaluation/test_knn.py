"""Weighted cosine kNN against scikit-learn and a float64 loop reference."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from sklearn.neighbors import KNeighborsClassifier

from contrastkit.evaluation import knn_accuracies, knn_accuracy, knn_predict, knn_predict_many


def clustered(n: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    centres = torch.randn(5, 16, generator=g)
    labels = torch.randint(0, 5, (n,), generator=g)
    return centres[labels] + 1.2 * torch.randn(n, 16, generator=g), labels


def loop_reference(
    train: torch.Tensor, labels: torch.Tensor, test: torch.Tensor, k: int, tau: float
) -> list[int]:
    out = []
    tr = train.double()
    for x in test.double():
        sims = [float(x @ t / (x.norm() * t.norm())) for t in tr]
        nearest = sorted(range(len(sims)), key=lambda j: -sims[j])[:k]
        votes: dict[int, float] = {}
        for j in nearest:
            votes[int(labels[j])] = votes.get(int(labels[j]), 0.0) + math.exp(sims[j] / tau)
        out.append(max(votes, key=votes.__getitem__))
    return out


@pytest.mark.parametrize("k", [1, 5, 200])
def test_matches_sklearn_weighted_cosine_knn(k: int) -> None:
    x_tr, y_tr = clustered(400, 0)
    x_te, _ = clustered(150, 1)
    tau = 0.07
    # cosine distance d = 1 - s, so exp(s/τ) ∝ exp(-d/τ): the same votes
    sk = KNeighborsClassifier(
        n_neighbors=k, metric="cosine", algorithm="brute", weights=lambda d: np.exp(-d / tau)
    ).fit(x_tr.numpy(), y_tr.numpy())
    ours = knn_predict(x_tr, y_tr, x_te, k=k, temperature=tau)
    assert (ours.numpy() == sk.predict(x_te.numpy())).mean() == 1.0


def test_matches_loop_reference_and_weights_matter() -> None:
    x_tr, y_tr = clustered(120, 2)
    x_te, _ = clustered(30, 3)
    for tau in (0.07, 0.5):
        assert knn_predict(x_tr, y_tr, x_te, k=25, temperature=tau).tolist() == loop_reference(
            x_tr, y_tr, x_te, 25, tau
        )
    # the exponential weights change decisions against a plain majority vote somewhere
    flat = knn_predict(x_tr, y_tr, x_te, k=25, temperature=1e3)
    sharp = knn_predict(x_tr, y_tr, x_te, k=25, temperature=0.01)
    assert not torch.equal(flat, sharp)


def test_one_pass_for_several_k_is_each_k_alone() -> None:
    """The shared similarity pass gives, for every k, the loop reference's votes and the
    single-k call's predictions (chunked: 150 test rows in chunks of 64)."""
    x_tr, y_tr = clustered(400, 5)
    x_te, y_te = clustered(150, 6)
    ks = (200, 1, 25, 1000)  # 1000 > N: capped at N, as alone
    many = knn_predict_many(x_tr, y_tr, x_te, ks, temperature=0.1, chunk_size=64)
    assert sorted(many) == sorted(ks)
    for k in ks:
        assert torch.equal(many[k], knn_predict(x_tr, y_tr, x_te, k=k, temperature=0.1))
    assert many[25].tolist() == loop_reference(x_tr, y_tr, x_te, 25, 0.1)
    assert len({tuple(p.tolist()) for p in many.values()}) > 1  # the k actually differ
    accuracies = knn_accuracies(x_tr, y_tr, x_te, y_te, (200, 20))
    assert accuracies == {k: knn_accuracy(x_tr, y_tr, x_te, y_te, k=k) for k in (200, 20)}
    with pytest.raises(ValueError, match="k must be >= 1"):
        knn_predict_many(x_tr, y_tr, x_te, ())


def test_accuracy_k_capped_and_errors() -> None:
    x, y = clustered(50, 4)
    assert knn_accuracy(x, y, x, y, k=1) == 1.0  # each point is its own nearest neighbour
    assert 0.0 <= knn_accuracy(x, y, x, y, k=500) <= 1.0  # k > N is capped at N
    with pytest.raises(ValueError, match="k must be >= 1"):
        knn_predict(x, y, x, k=0)
    with pytest.raises(ValueError, match=r"train_labels must have shape \[N\]"):
        knn_predict(x, y[:10], x)
    with pytest.raises(ValueError, match="feature widths differ"):
        knn_predict(x, y, x[:, :3])
