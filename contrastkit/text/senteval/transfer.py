"""Transfer tasks: logistic regression on frozen sentence embeddings, SentEval's protocol.

SentEval (Conneau & Kiela, 2018; ``senteval/tools/validation.py``) has three schemes and
this module follows its scikit-learn branch (``usepytorch=False``) with ``kfold = 10``:

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
PyTorch logistic regression (``nhid=0``, Adam, batch 64, tenacity 5, epoch size 4);
numbers can differ from theirs by a few tenths.

MRPC features are ``[|u - v|, u * v]`` (SentEval ``senteval/mrpc.py``); F1 is for the
paraphrase class.

``jobs`` fits that many classifiers at once in joblib worker processes (the outer folds of
:func:`inner_kfold`, the ``(C, fold)`` fits of the others); every fit is deterministic, so
the numbers do not depend on it. With encoding on a GPU these fits are most of the time.
"""

from __future__ import annotations

import warnings

import numpy as np
from joblib import Parallel, delayed
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import f1_score
from sklearn.model_selection import StratifiedKFold

SEED = 1111  # SentEval's default seed
INNER_REGS = tuple(2.0**t for t in range(-2, 4))  # InnerKFoldClassifier, SplitClassifier
KFOLD_REGS = tuple(2.0**t for t in range(-1, 6))  # KFoldClassifier


def _fit(x: np.ndarray, y: np.ndarray, c: float, seed: int) -> LogisticRegression:
    clf = LogisticRegression(C=c, random_state=seed, max_iter=1000)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf.fit(x, y)
    return clf


def _acc(clf: LogisticRegression, x: np.ndarray, y: np.ndarray) -> float:
    return round(100.0 * float(clf.score(x, y)), 2)


def _fit_score(
    x: np.ndarray, y: np.ndarray, train: np.ndarray, test: np.ndarray, c: float, seed: int
) -> float:
    return float(_fit(x[train], y[train], c, seed).score(x[test], y[test]))


def _cv_choose(
    x: np.ndarray, y: np.ndarray, regs: tuple[float, ...], k: int, seed: int, jobs: int = 1
) -> tuple[float, float]:
    """``(best C, its mean CV accuracy × 100)`` over ``k`` stratified folds of ``x, y``."""
    folds = list(StratifiedKFold(n_splits=k, shuffle=True, random_state=seed).split(x, y))
    calls = (delayed(_fit_score)(x, y, tr, te, c, seed) for c in regs for tr, te in folds)
    accs = np.array(Parallel(n_jobs=jobs)(calls)).reshape(len(regs), k)
    scores = [round(100.0 * float(row.mean()), 2) for row in accs]
    best = int(np.argmax(scores))
    return regs[best], scores[best]


def _outer_fold(
    x: np.ndarray,
    y: np.ndarray,
    train: np.ndarray,
    test: np.ndarray,
    regs: tuple[float, ...],
    k: int,
    seed: int,
) -> tuple[float, float, float]:
    """One outer fold of :func:`inner_kfold`: ``(test accuracy, inner accuracy, C)``."""
    c, dev = _cv_choose(x[train], y[train], regs, k, seed)
    return _acc(_fit(x[train], y[train], c, seed), x[test], y[test]), dev, c


def inner_kfold(
    x: np.ndarray,
    y: np.ndarray,
    k: int = 10,
    seed: int = SEED,
    regs: tuple[float, ...] = INNER_REGS,
    jobs: int = 1,
) -> dict[str, object]:
    """Nested CV accuracy (module doc): ``{"acc", "devacc", "C"}`` (``C`` per outer fold)."""
    x, y = np.asarray(x), np.asarray(y)
    outer = StratifiedKFold(n_splits=k, shuffle=True, random_state=seed)
    calls = (delayed(_outer_fold)(x, y, tr, te, regs, k, seed) for tr, te in outer.split(x, y))
    tests, devs, chosen = zip(*Parallel(n_jobs=jobs)(calls), strict=True)
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
    regs: tuple[float, ...] = KFOLD_REGS,
    f1: bool = False,
    jobs: int = 1,
) -> dict[str, object]:
    """CV on train picks ``C``; test accuracy (and F1 of class 1 with ``f1=True``)."""
    c, dev = _cv_choose(np.asarray(x_train), np.asarray(y_train), regs, k, seed, jobs)
    clf = _fit(x_train, y_train, c, seed)
    out: dict[str, object] = {
        "acc": _acc(clf, x_test, y_test),
        "devacc": dev,
        "C": c,
        "ntrain": len(y_train),
        "ntest": len(y_test),
    }
    if f1:
        out["f1"] = round(100.0 * float(f1_score(y_test, clf.predict(x_test))), 2)
    return out


def split_classifier(
    x: dict[str, np.ndarray],
    y: dict[str, np.ndarray],
    seed: int = SEED,
    regs: tuple[float, ...] = INNER_REGS,
    jobs: int = 1,
) -> dict[str, object]:
    """``C`` chosen on ``x["dev"]``; the train-fit classifier's ``x["test"]`` accuracy."""
    n_train, n_dev = len(y["train"]), len(y["dev"])
    joined_x = np.concatenate([x["train"], x["dev"]])
    joined_y = np.concatenate([y["train"], y["dev"]])
    train, dev = np.arange(n_train), np.arange(n_train, n_train + n_dev)
    calls = (delayed(_fit_score)(joined_x, joined_y, train, dev, c, seed) for c in regs)
    scores = [round(100.0 * acc, 2) for acc in Parallel(n_jobs=jobs)(calls)]
    best = int(np.argmax(scores))
    clf = _fit(x["train"], y["train"], regs[best], seed)
    return {
        "acc": _acc(clf, x["test"], y["test"]),
        "devacc": scores[best],
        "C": regs[best],
        "ntrain": len(y["train"]),
        "ntest": len(y["test"]),
    }


def mrpc_features(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """SentEval's MRPC pair features ``[|u - v|, u * v]``, shape ``[P, 2d]``."""
    return np.concatenate([np.abs(u - v), u * v], axis=1)
