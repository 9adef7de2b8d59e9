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
"""

from __future__ import annotations

import warnings

import numpy as np
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


def _cv_choose(
    x: np.ndarray, y: np.ndarray, regs: tuple[float, ...], k: int, seed: int
) -> tuple[float, float]:
    """``(best C, its mean CV accuracy × 100)`` over ``k`` stratified folds of ``x, y``."""
    folds = list(StratifiedKFold(n_splits=k, shuffle=True, random_state=seed).split(x, y))
    scores = []
    for c in regs:
        accs = [_fit(x[tr], y[tr], c, seed).score(x[te], y[te]) for tr, te in folds]
        scores.append(round(100.0 * float(np.mean(accs)), 2))
    best = int(np.argmax(scores))
    return regs[best], scores[best]


def inner_kfold(
    x: np.ndarray,
    y: np.ndarray,
    k: int = 10,
    seed: int = SEED,
    regs: tuple[float, ...] = INNER_REGS,
) -> dict[str, object]:
    """Nested CV accuracy (module doc): ``{"acc", "devacc", "C"}`` (``C`` per outer fold)."""
    x, y = np.asarray(x), np.asarray(y)
    outer = StratifiedKFold(n_splits=k, shuffle=True, random_state=seed)
    tests, devs, chosen = [], [], []
    for tr, te in outer.split(x, y):
        c, dev = _cv_choose(x[tr], y[tr], regs, k, seed)
        tests.append(_acc(_fit(x[tr], y[tr], c, seed), x[te], y[te]))
        devs.append(dev)
        chosen.append(c)
    return {
        "acc": round(float(np.mean(tests)), 2),
        "devacc": round(float(np.mean(devs)), 2),
        "C": chosen,
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
) -> dict[str, object]:
    """CV on train picks ``C``; test accuracy (and F1 of class 1 with ``f1=True``)."""
    c, dev = _cv_choose(np.asarray(x_train), np.asarray(y_train), regs, k, seed)
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
) -> dict[str, object]:
    """``C`` chosen on ``x["dev"]``; the train-fit classifier's ``x["test"]`` accuracy."""
    scores = [_acc(_fit(x["train"], y["train"], c, seed), x["dev"], y["dev"]) for c in regs]
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
