"""Linear probe: multinomial logistic regression (scikit-learn) on frozen features.

Features are standardised with the training set's mean and variance, then an
L2-regularised ``LogisticRegression`` (lbfgs, ``C = 1``) is fitted. This replaces the
papers' SGD-trained linear layer (MACL Appendix B.3: 100 epochs of SGD) by its convex,
deterministic equivalent, so probe accuracy carries no optimiser noise. The fit runs
with one BLAS thread by default: on a shared CPU, BLAS's own thread pool oversubscribes
the cores and made a 16k × 128 fit ~50× slower here.
"""

from __future__ import annotations

import numpy as np
from torch import Tensor

from .._optional import require


def linear_probe(
    train_features: Tensor,
    train_labels: Tensor,
    test_features: Tensor,
    test_labels: Tensor,
    c: float = 1.0,
    max_iter: int = 1000,
    blas_threads: int | None = 1,
) -> float:
    """Test accuracy of a logistic-regression probe fitted on ``train_features [N, d]``."""
    require("sklearn", "train", "the linear probe")
    require("threadpoolctl", "train", "the linear probe")
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from threadpoolctl import threadpool_limits

    if train_features.dim() != 2 or test_features.dim() != 2:
        raise ValueError(
            "train_features and test_features must have shapes [N, d] and [M, d], got "
            f"{tuple(train_features.shape)} and {tuple(test_features.shape)}"
        )
    if c <= 0:
        raise ValueError(f"c must be > 0, got {c}")
    probe = make_pipeline(StandardScaler(), LogisticRegression(C=c, max_iter=max_iter))
    x_tr = train_features.detach().double().numpy()
    x_te = test_features.detach().double().numpy()
    with threadpool_limits(limits=blas_threads):
        probe.fit(x_tr, train_labels.numpy())
        return float(np.mean(probe.predict(x_te) == test_labels.numpy()))
