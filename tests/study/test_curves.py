"""Learning curves over seeds and the paired gap between two arms, on constructed runs
whose answer is known."""

from __future__ import annotations

import pytest

from contrastkit.study.curves import gap_change, mean_curve
from contrastkit.study.records import RunRecord

KNN = {"metric": "knn_accuracy", "window": 0.2, "tolerance": 0.005, "relative": False}


def _run(curve: dict[int, float]) -> RunRecord:
    return RunRecord({}, [{"epoch": e, "knn_accuracy": v} for e, v in curve.items()])


def test_mean_curve_keeps_the_epochs_every_seed_evaluated() -> None:
    runs = {0: _run({5: 0.5, 10: 0.6}), 1: _run({5: 0.7, 10: 0.8, 15: 0.9})}
    epochs, means, halves = mean_curve(runs, "knn_accuracy")
    assert epochs == [5, 10] and means == pytest.approx([0.6, 0.7])
    assert halves[0] == pytest.approx(12.706 * 0.1, rel=1e-3)  # t(0.975, 1) · s / √2


def test_two_arms_drifting_together_have_a_flat_gap() -> None:
    epochs = range(5, 101, 5)
    # both arms rise by 2 points over the last 20 epochs; b sits 1 point (seed 0) and
    # 3 points (seed 1) below a: the mean gap is a constant 0.02
    a = {s: _run({e: 0.5 + e / 1000 + s / 100 for e in epochs}) for s in (0, 1)}
    b = {
        0: _run({e: 0.49 + e / 1000 for e in epochs}),
        1: _run({e: 0.48 + e / 1000 for e in epochs}),
    }
    assert gap_change(a, b, "knn_accuracy", 100, KNN) == pytest.approx(0.0, abs=1e-12)
    # a gap that widens by 0.1 point per epoch changes by 2 points over epochs 80-100
    wider = {0: _run({e: 0.5 + 2 * e / 1000 for e in epochs})}
    assert gap_change(wider, b, "knn_accuracy", 100, KNN) == pytest.approx(0.02)


def test_no_gap_without_a_paired_seed_or_for_a_relative_check() -> None:
    a, b = {0: _run({1: 0.5, 2: 0.6})}, {1: _run({1: 0.5, 2: 0.6})}
    assert gap_change(a, b, "knn_accuracy", 2, KNN) is None
    assert gap_change(a, a, "knn_accuracy", 2, {**KNN, "relative": True}) is None
