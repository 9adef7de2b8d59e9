"""Issue 40: identical arms reported once, Holm within a study, the paper-level family
of primary comparisons, and the declaration dates of a config."""

from __future__ import annotations

from pathlib import Path

import pytest

from contrastkit.study.config import load_study
from contrastkit.study.declared import comment_date
from contrastkit.study.families import holm_within, identical_arms, mark_duplicates
from contrastkit.study.records import RunRecord

from .tiny import write_study

ARMS = [
    {"label": "ntxent", "loss": "ntxent"},
    {"label": "dcl", "loss": "dcl"},
    {"label": "flatnce", "loss": "flatnce"},
    {"label": "macl", "loss": "macl", "vs": ["ntxent", "dcl", "flatnce"]},
]


def _run(value: float, loss: float) -> RunRecord:
    history = [{"epoch": 1, "loss": loss, "knn_accuracy": value - 0.1}]
    return RunRecord({"epochs": 1, "knn_accuracy": value, "alignment": 0.5}, history)


def test_identical_arms_are_found_and_their_comparisons_marked(tmp_path: Path) -> None:
    study = load_study(write_study(tmp_path / "s.yaml", arms=ARMS, seeds=[0, 1]))
    by_arm = {
        "ntxent": {0: _run(0.80, 5.0), 1: _run(0.81, 5.0)},
        "dcl": {0: _run(0.82, 4.0), 1: _run(0.83, 4.0)},
        "flatnce": {0: _run(0.82, 0.0), 1: _run(0.83, 0.0)},  # other loss value, same encoder
        "macl": {0: _run(0.84, 4.5), 1: _run(0.86, 4.5)},
    }
    found = identical_arms(study, by_arm)
    assert list(found) == ["flatnce"] and found["flatnce"]["same_as"] == "dcl"
    assert found["flatnce"]["seeds"] == [0, 1] and "same gradients" in found["flatnce"]["reason"]
    by_arm["flatnce"][1] = _run(0.8300001, 0.0)
    assert identical_arms(study, by_arm) == {}

    def comp(arm: str, vs: str, p: float) -> dict[str, object]:
        return {"arm": arm, "vs": vs, "paired": {"p": p}}

    comparisons = {
        "macl vs ntxent": comp("macl", "ntxent", 0.01),
        "macl vs dcl": comp("macl", "dcl", 0.04),
        "macl vs flatnce": comp("macl", "flatnce", 0.04),
        "flatnce vs dcl": comp("flatnce", "dcl", 1.0),
    }
    mark_duplicates(comparisons, found)
    holm_within(comparisons)
    assert comparisons["macl vs flatnce"]["duplicate_of"] == "macl vs dcl"
    assert comparisons["flatnce vs dcl"]["duplicate_of"] == "identical arms"
    # Holm over the two distinct comparisons: 2 × 0.01, max(0.02, 1 × 0.04)
    assert comparisons["macl vs ntxent"]["holm_p"] == pytest.approx(0.02)
    assert comparisons["macl vs dcl"]["holm_p"] == pytest.approx(0.04)
    assert comparisons["macl vs flatnce"]["holm_p"] == pytest.approx(0.04)
    assert comparisons["flatnce vs dcl"]["holm_p"] is None


def test_comment_date_reads_the_declaration_line(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("# a study\n# Declared 2026-11-26 10:05 UTC, before any run.\nname: x\n")
    assert comment_date(path) == "2026-11-26 10:05 UTC"
    path.write_text("# a study without a date\nname: x\n# Declared 2026-11-26\n")
    assert comment_date(path) is None
