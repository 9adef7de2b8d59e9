"""GraphCL's unsupervised evaluation: SVM accuracy by stratified 10-fold cross-validation.

For frozen graph embeddings ``h_G`` and labels ``y`` (InfoGraph / GraphCL
``evaluate_embedding.py``, Sun et al., 2020; You et al., 2020):

1. split the graphs into ``folds = 10`` stratified folds (shuffled with ``seed``);
2. for each fold ``k``, fit ``sklearn.svm.SVC`` (RBF kernel, scikit-learn defaults) on the
   other nine folds with ``C`` chosen from ``{10⁻³, 10⁻², …, 10³}`` by an inner 5-fold
   grid search on those nine folds only, and score accuracy ``a_k`` on fold ``k``;
3. report ``mean_k a_k`` and ``std_k a_k`` (population std over folds, NumPy's default).

The test fold never influences the choice of ``C``. Features are used as they are (no
scaling), as in the reference code.

Computation: the result is that of ``GridSearchCV(SVC(), {"C": grid}, cv=inner_folds)``
refitted on each outer training set (kept as :func:`svm_cross_validation_reference`), but
the RBF kernel ``K_ij = exp(-γ ‖x_i − x_j‖²)`` is computed once per training subset from one
matrix of squared distances and passed to ``SVC(kernel="precomputed")`` for all seven
``C``. ``γ`` is scikit-learn's ``gamma="scale"``, ``1 / (d · Var(X_fit))`` of the subset
being fitted, and the inner folds are ``StratifiedKFold(inner_folds)`` unshuffled, as
``GridSearchCV`` uses; the first ``C`` with the highest mean inner accuracy wins, as
``GridSearchCV`` ranks. ``benchmarks/svm_protocol.py`` checks the fold accuracies and chosen
``C`` are the same and prints both times.

Example:
    >>> import torch
    >>> x = torch.cat([torch.zeros(20, 2), torch.ones(20, 2)]) + 0.01 * torch.randn(40, 2)
    >>> y = torch.tensor([0] * 20 + [1] * 20)
    >>> svm_cross_validation(x, y)["svm_accuracy"]
    1.0
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from torch import Tensor

C_GRID = (1e-3, 1e-2, 1e-1, 1.0, 1e1, 1e2, 1e3)  # GraphCL / InfoGraph evaluate_embedding.py
FOLDS = 10
INNER_FOLDS = 5


def stratified_folds(
    labels: Tensor | np.ndarray, folds: int = FOLDS, seed: int = 0
) -> list[tuple[np.ndarray, np.ndarray]]:
    """``(train_index, test_index)`` of each of ``folds`` stratified, shuffled folds."""
    from sklearn.model_selection import StratifiedKFold

    y = np.asarray(labels)
    counts = np.bincount(np.unique(y, return_inverse=True)[1].reshape(-1))
    if counts.min() < folds:
        raise ValueError(
            f"stratified {folds}-fold cross-validation needs >= {folds} graphs per class, "
            f"the smallest class has {counts.min()}"
        )
    splitter = StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed)
    return list(splitter.split(np.zeros(len(y)), y))


def _checked(features: Tensor | np.ndarray, labels: Tensor | np.ndarray) -> tuple[np.ndarray, ...]:
    x = np.asarray(features, dtype=np.float64)
    y = np.asarray(labels)
    if x.ndim != 2 or len(x) != len(y):
        raise ValueError(f"features must be [N, d] with N = len(labels), got {x.shape}, {len(y)}")
    if not np.isfinite(x).all():
        raise ValueError("features contain NaN or Inf")
    return x, y


def _summary(accuracies: list[float], chosen: list[float]) -> dict[str, float | list[float]]:
    return {
        "svm_accuracy": float(np.mean(accuracies)),
        "svm_accuracy_std": float(np.std(accuracies)),
        "svm_fold_accuracies": accuracies,
        "svm_c_chosen": chosen,
    }


class _RBF:
    """RBF kernels of subsets of ``x`` from one ``[N, N]`` matrix of squared distances,
    with ``gamma="scale"`` of the rows being fitted (``1 / (d · Var(x[rows]))``)."""

    def __init__(self, x: np.ndarray) -> None:
        self.x = x
        sq = np.einsum("ij,ij->i", x, x)
        # libsvm's form: |x_i|² + |x_j|² − 2 x_i·x_j
        self.d2 = sq[:, None] + sq[None, :] - 2.0 * (x @ x.T)

    def gamma(self, rows: np.ndarray) -> float:
        var = self.x[rows].var()
        return 1.0 / (self.x.shape[1] * var) if var != 0 else 1.0

    def __call__(self, rows: np.ndarray, cols: np.ndarray, gamma: float) -> np.ndarray:
        return np.exp(-gamma * self.d2[np.ix_(rows, cols)])


def _fit_predict(
    kernel: _RBF, fit: np.ndarray, y: np.ndarray, test: np.ndarray, cs: Sequence[float]
) -> list[np.ndarray]:
    """Predictions on ``test`` of an RBF ``SVC`` fitted on ``fit``, one per ``C``."""
    from sklearn.svm import SVC

    g = kernel.gamma(fit)
    k_fit, k_test = kernel(fit, fit, g), kernel(test, fit, g)
    return [SVC(C=c, kernel="precomputed").fit(k_fit, y[fit]).predict(k_test) for c in cs]


def svm_cross_validation(
    features: Tensor | np.ndarray,
    labels: Tensor | np.ndarray,
    seed: int = 0,
    folds: int = FOLDS,
    c_grid: Sequence[float] = C_GRID,
    inner_folds: int = INNER_FOLDS,
) -> dict[str, float | list[float]]:
    """Mean and std over folds of the grid-searched SVC's accuracy (module docstring).

    Returns ``svm_accuracy``, ``svm_accuracy_std`` and ``svm_fold_accuracies``, and
    ``svm_c_chosen`` (the ``C`` picked in each fold).
    """
    from sklearn.model_selection import StratifiedKFold

    x, y = _checked(features, labels)
    kernel = _RBF(x)
    inner = StratifiedKFold(n_splits=inner_folds)
    accuracies, chosen = [], []
    for train, test in stratified_folds(y, folds, seed):
        scores = np.zeros((len(c_grid), inner_folds))
        for j, (fit, val) in enumerate(inner.split(np.zeros(len(train)), y[train])):
            predictions = _fit_predict(kernel, train[fit], y, train[val], c_grid)
            scores[:, j] = [(p == y[train[val]]).mean() for p in predictions]
        best = c_grid[int(np.argmax(scores.mean(axis=1)))]
        (prediction,) = _fit_predict(kernel, train, y, test, [best])
        accuracies.append(float((prediction == y[test]).mean()))
        chosen.append(float(best))
    return _summary(accuracies, chosen)


def svm_cross_validation_reference(
    features: Tensor | np.ndarray,
    labels: Tensor | np.ndarray,
    seed: int = 0,
    folds: int = FOLDS,
    c_grid: Sequence[float] = C_GRID,
    inner_folds: int = INNER_FOLDS,
) -> dict[str, float | list[float]]:
    """The same protocol through ``GridSearchCV(SVC())`` (the reference code's form): the
    baseline of ``benchmarks/svm_protocol.py`` and of the equality test."""
    from sklearn.model_selection import GridSearchCV
    from sklearn.svm import SVC

    x, y = _checked(features, labels)
    accuracies, chosen = [], []
    for train, test in stratified_folds(y, folds, seed):
        search = GridSearchCV(SVC(), {"C": list(c_grid)}, cv=inner_folds, scoring="accuracy")
        search.fit(x[train], y[train])
        accuracies.append(float((search.predict(x[test]) == y[test]).mean()))
        chosen.append(float(search.best_params_["C"]))
    return _summary(accuracies, chosen)
