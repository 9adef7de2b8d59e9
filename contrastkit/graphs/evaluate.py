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
    from sklearn.model_selection import GridSearchCV
    from sklearn.svm import SVC

    x = np.asarray(features, dtype=np.float64)
    y = np.asarray(labels)
    if x.ndim != 2 or len(x) != len(y):
        raise ValueError(f"features must be [N, d] with N = len(labels), got {x.shape}, {len(y)}")
    if not np.isfinite(x).all():
        raise ValueError("features contain NaN or Inf")
    accuracies, chosen = [], []
    for train, test in stratified_folds(y, folds, seed):
        search = GridSearchCV(SVC(), {"C": list(c_grid)}, cv=inner_folds, scoring="accuracy")
        search.fit(x[train], y[train])
        accuracies.append(float((search.predict(x[test]) == y[test]).mean()))
        chosen.append(float(search.best_params_["C"]))
    return {
        "svm_accuracy": float(np.mean(accuracies)),
        "svm_accuracy_std": float(np.std(accuracies)),
        "svm_fold_accuracies": accuracies,
        "svm_c_chosen": chosen,
    }
