"""``contrastkit study --probe``: the epoch count the convergence rule picks, on
constructed curves with a known answer, and the probe run itself."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from contrastkit.cli import main
from contrastkit.study import load_study
from contrastkit.study.probe import probe_dir, suggest_epochs

from .test_runner import _study
from .tiny import TINY


def test_suggestion_is_the_first_epoch_count_from_which_every_check_passes() -> None:
    epochs = list(range(1, 21))
    rising_then_flat = [min(e, 10) / 100 for e in epochs]  # +1 point per epoch to epoch 10
    rows, suggested = suggest_epochs(epochs, rising_then_flat)
    # E = 11: window [8.8, 11] holds 9, 10, 11, still rising by 1 point; E = 12: 10, 11, 12
    assert [r["converged"] for r in rows[9:12]] == [False, False, True]
    assert suggested == 12 and all(r["converged"] for r in rows[11:])
    assert rows[0]["change"] is None and not rows[0]["converged"]  # one evaluation
    assert rows[10]["change"] == pytest.approx(0.01)


def test_an_early_plateau_is_not_a_suggestion_when_the_curve_rises_again() -> None:
    epochs = list(range(1, 21))
    values = [0.5 if e <= 8 else 0.5 + (e - 8) / 100 for e in epochs]
    rows, suggested = suggest_epochs(epochs, values)
    assert rows[7]["converged"] and suggested is None


def test_probe_trains_the_baseline_apart_and_resumes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    arms = [{"label": "ntxent", "loss": "ntxent"}, {"label": "dcl", "loss": "dcl"}]
    path = _study(tmp_path, arms, [3, 4])
    study = load_study(path)
    assert main(["study", str(path), "--probe", "3"]) == 0
    out = capsys.readouterr().out
    assert "epochs 3: change" in out and "probe at epoch 3 of 3" in out
    result = json.loads((study.out / "probe.json").read_text())
    assert (result["arm"], result["seed"], result["epochs_reached"]) == ("ntxent", 3, 3)
    assert [e for e, _ in result["curve"]] == [r["epochs"] for r in result["checks"]]
    assert sorted(p.name for p in study.runs_dir.iterdir()) == ["probe"]  # no study run
    final = probe_dir(study) / "final.json"
    stamp = final.stat().st_mtime_ns
    assert main(["study", str(path), "--probe", "5"]) == 0  # continues from epoch 3
    assert json.loads(final.read_text())["epochs"] == 5 and final.stat().st_mtime_ns != stamp
    capsys.readouterr()
    assert main(["study", str(path), "--probe", "1"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--probe must be an integer number of epochs >= 2" in err


def test_a_probe_under_a_cosine_schedule_judges_its_full_length_only(tmp_path: Path) -> None:
    base = {**TINY, "schedule": "warmup_cosine", "eval_every": 1}
    path = _study(tmp_path, [{"label": "ntxent", "loss": "ntxent"}], [0], base=base)
    assert main(["study", str(path), "--probe", "3"]) == 0
    result = json.loads((tmp_path / "out" / "probe.json").read_text())
    assert len(result["curve"]) == 3 and [r["epochs"] for r in result["checks"]] == [3]
    assert result["suggested_epochs"] == (3 if result["checks"][0]["converged"] else None)
    assert main(["study", str(path), "--probe", "4"]) == 2  # not continued to 4
