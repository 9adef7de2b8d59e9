"""Transfer tasks: logistic regression on frozen sentence embeddings, SentEval's protocol.

SentEval (Conneau & Kiela, 2018; ``senteval/tools/validation.py``) has three schemes,
each with a scikit-learn branch (``usepytorch=False``, the default here, below) and a
PyTorch one (:class:`Fitting` ``kind="pytorch"``: :mod:`.logreg`, the classifier SimCSE's
evaluation trains); ``kfold = 10``:

* :func:`inner_kfold` (MR, CR, SUBJ, MPQA — no given split): 10 stratified outer folds;
  inside each outer training part, 10 stratified inner folds choose the inverse L2
  strength ``C`` from ``{2^-2, ..., 2^3}`` by mean inner accuracy; the classifier refit
  on the outer training part is scored on the outer test fold; the test accuracy is the
  mean over the 10 outer folds.
* :func:`kfold_then_test` (TREC, MRPC — train/test given): 10-fold CV on train chooses
  ``C`` from ``{2^-1, ..., 2^5}``; refit on all of train, score on test.
* :func:`split_classifier` (SST-2 — train/dev/test given): ``C`` from ``{2^-2, ..., 2^3}``
  chosen on dev; refit on train, score on test.

Folds use ``StratifiedKFold(shuffle=True, random_state=1111)`` and the classifier
``LogisticRegression(C=c, random_state=1111)`` as in SentEval; the choice of ``C`` is
the first maximum of the accuracies rounded to 2 decimals (×100), as SentEval rounds.
One difference: SentEval ran with the scikit-learn defaults of 2018 (liblinear,
one-vs-rest); current scikit-learn defaults to lbfgs with a multinomial loss, which we
use with ``max_iter=1000`` so that it converges. Papers in the field (SimCSE and the
MACL / gradient-paradigm papers that reuse its evaluation) instead train SentEval's
PyTorch logistic regression: ``kind="pytorch"`` runs it, with the same schemes and folds,
the L2 weight decay chosen from ``{10^-5, ..., 10^-2}``, each cross-validation fit
stopping early on its own held-out fold and each refit on a seeded 5 % of its training
part (SplitClassifier: on the dev split), as SentEval does.

MRPC features are ``[|u - v|, u * v]`` (SentEval ``senteval/mrpc.py``); F1 is for the
paraphrase class.

:class:`Fitting` ``jobs`` fits that many classifiers at once in joblib worker processes
(the outer folds of :func:`inner_kfold`, the ``(C, fold)`` fits of the others); every fit
is deterministic, so the numbers do not depend on it. With encoding on a GPU these fits
are most of the time.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
from joblib import Parallel, delayed
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import f1_score
from sklearn.model_selection import StratifiedKFold

from ...training.settings import listed
from ..senteval_names import CLASSIFIERS
from .logreg import L2_GRID, TorchLogReg, fit_logreg

SEED = 1111  # SentEval's default seed
INNER_REGS = tuple(2.0**t for t in range(-2, 4))  # InnerKFoldClassifier, SplitClassifier
KFOLD_REGS = tuple(2.0**t for t in range(-1, 6))  # KFoldClassifier

Model = LogisticRegression | TorchLogReg
Split = tuple[np.ndarray, np.ndarray]


@dataclass(frozen=True)
class Fitting:
    """How the transfer classifiers are fitted: ``kind`` (``sklearn`` or ``pytorch``, see
    the module doc), ``device`` of the PyTorch classifier, ``jobs`` fits at once."""

    kind: str = CLASSIFIERS[0]
    device: str = "cpu"
    jobs: int = 1

    def __post_init__(self) -> None:
        if self.kind not in CLASSIFIERS:
            raise ValueError(f"--classifier must be {listed(CLASSIFIERS)}, got {self.kind!r}")
        if not isinstance(self.jobs, int) or isinstance(self.jobs, bool) or self.jobs < 1:
            raise ValueError(f"--jobs must be a positive integer, got {self.jobs!r}")

    def grid(self, sklearn_regs: tuple[float, ...]) -> tuple[float, ...]:
        """The regularisation values a scheme scans: C for sklearn, L2 for pytorch."""
        return sklearn_regs if self.kind == "sklearn" else L2_GRID

    def fit(
        self, train: Split, reg: float, seed: int, classes: int, dev: Split | None = None
    ) -> Model:
        """One classifier on ``train`` with regularisation ``reg``; the PyTorch one stops
        early on ``dev`` (default: a seeded 5 % of ``train``), the sklearn one ignores it."""
        if self.kind == "pytorch":
            return fit_logreg(*train, reg, seed, classes, dev, self.device)
        clf = LogisticRegression(C=reg, random_state=seed, max_iter=1000)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            clf.fit(*train)
        return clf


SKLEARN = Fitting()  # SentEval's scikit-learn branch, one fit at a time


def _accuracy(model: Model, x: np.ndarray, y: np.ndarray) -> float:
    return float(np.mean(model.predict(x) == y))


def _acc(model: Model, x: np.ndarray, y: np.ndarray) -> float:
    return round(100.0 * _accuracy(model, x, y), 2)


def _fit_score(
    fitting: Fitting,
    x: np.ndarray,
    y: np.ndarray,
    train: np.ndarray,
    test: np.ndarray,
    reg: float,
    seed: int,
    classes: int,
) -> float:
    """Accuracy on ``test`` of a classifier fitted on ``train`` (the PyTorch one stopping
    early on ``test`` itself, as SentEval's cross-validation does)."""
    held_out = (x[test], y[test])
    model = fitting.fit((x[train], y[train]), reg, seed, classes, dev=held_out)
    return _accuracy(model, *held_out)


def _cv_choose(
    fitting: Fitting,
    x: np.ndarray,
    y: np.ndarray,
    regs: tuple[float, ...],
    k: int,
    seed: int,
    classes: int,
    jobs: int = 1,
) -> tuple[float, float]:
    """``(best reg, its mean CV accuracy × 100)`` over ``k`` stratified folds of ``x, y``."""
    folds = list(StratifiedKFold(n_splits=k, shuffle=True, random_state=seed).split(x, y))
    calls = (
        delayed(_fit_score)(fitting, x, y, tr, te, c, seed, classes)
        for c in regs
        for tr, te in folds
    )
    accs = np.array(Parallel(n_jobs=jobs)(calls)).reshape(len(regs), k)
    scores = [round(100.0 * float(row.mean()), 2) for row in accs]
    best = int(np.argmax(scores))
    return regs[best], scores[best]


def _outer_fold(
    fitting: Fitting,
    x: np.ndarray,
    y: np.ndarray,
    train: np.ndarray,
    test: np.ndarray,
    regs: tuple[float, ...],
    k: int,
    seed: int,
    classes: int,
) -> tuple[float, float, float]:
    """One outer fold of :func:`inner_kfold`: ``(test accuracy, inner accuracy, reg)``."""
    c, dev = _cv_choose(fitting, x[train], y[train], regs, k, seed, classes)
    model = fitting.fit((x[train], y[train]), c, seed, classes)
    return _acc(model, x[test], y[test]), dev, c


def inner_kfold(
    x: np.ndarray,
    y: np.ndarray,
    k: int = 10,
    seed: int = SEED,
    fitting: Fitting = SKLEARN,
) -> dict[str, object]:
    """Nested CV accuracy (module doc): ``{"acc", "devacc", "C"}`` (the chosen
    regularisation per outer fold: C for sklearn, L2 for pytorch)."""
    x, y = np.asarray(x), np.asarray(y)
    classes, regs = int(y.max()) + 1, fitting.grid(INNER_REGS)
    outer = StratifiedKFold(n_splits=k, shuffle=True, random_state=seed)
    calls = (
        delayed(_outer_fold)(fitting, x, y, tr, te, regs, k, seed, classes)
        for tr, te in outer.split(x, y)
    )
    tests, devs, chosen = zip(*Parallel(n_jobs=fitting.jobs)(calls), strict=True)
    return {
        "acc": round(float(np.mean(tests)), 2),
        "devacc": round(float(np.mean(devs)), 2),
        "C": list(chosen),
        "n": len(y),
    }


def kfold_then_test(
    x_train: np.ndarray,
    y_train: np.ndarray,
    x_test: np.ndarray,
    y_test: np.ndarray,
    k: int = 10,
    seed: int = SEED,
    f1: bool = False,
    fitting: Fitting = SKLEARN,
) -> dict[str, object]:
    """CV on train picks the regularisation; test accuracy (and F1 of class 1 with
    ``f1=True``)."""
    x_train, y_train = np.asarray(x_train), np.asarray(y_train)
    classes = int(max(y_train.max(), np.max(y_test))) + 1
    c, dev = _cv_choose(
        fitting, x_train, y_train, fitting.grid(KFOLD_REGS), k, seed, classes, fitting.jobs
    )
    model = fitting.fit((x_train, y_train), c, seed, classes)
    out: dict[str, object] = {
        "acc": _acc(model, x_test, y_test),
        "devacc": dev,
        "C": c,
        "ntrain": len(y_train),
        "ntest": len(y_test),
    }
    if f1:
        out["f1"] = round(100.0 * float(f1_score(y_test, model.predict(x_test))), 2)
    return out


def split_classifier(
    x: dict[str, np.ndarray],
    y: dict[str, np.ndarray],
    seed: int = SEED,
    fitting: Fitting = SKLEARN,
) -> dict[str, object]:
    """The regularisation chosen on ``x["dev"]``; the train-fit classifier's ``x["test"]``
    accuracy (the PyTorch one stops early on the dev split)."""
    classes = int(max(np.max(v) for v in y.values())) + 1
    train, dev = (x["train"], y["train"]), (x["dev"], y["dev"])
    regs = fitting.grid(INNER_REGS)
    calls = (delayed(fitting.fit)(train, c, seed, classes, dev) for c in regs)
    models = Parallel(n_jobs=fitting.jobs)(calls)
    scores = [_acc(model, *dev) for model in models]
    best = int(np.argmax(scores))
    return {
        "acc": _acc(models[best], x["test"], y["test"]),
        "devacc": scores[best],
        "C": regs[best],
        "ntrain": len(y["train"]),
        "ntest": len(y["test"]),
    }


def mrpc_features(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """SentEval's MRPC pair features ``[|u - v|, u * v]``, shape ``[P, 2d]``."""
    return np.concatenate([np.abs(u - v), u * v], axis=1)
