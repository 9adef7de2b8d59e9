"""``contrastkit study --trial``: every arm trained briefly apart from the study, its paces,
and the study's remaining work priced at them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from contrastkit.cli import main
from contrastkit.study import load_study, run_study
from contrastkit.study import trial as trial_module
from contrastkit.study.trial import evaluations, run_trial
from contrastkit.training import FINAL, METRICS, TrainConfig

from .tiny import TINY, write_study


def _study(tmp_path: Path, arms: list[dict], epochs: int = 6) -> Path:
    base = {**TINY, "epochs": epochs, "eval_every": 2}
    runs = str(tmp_path / "runs")
    return write_study(
        tmp_path / "study.yaml", arms=arms, seeds=[0, 1, 2], base=base, runs_dir=runs
    )


def test_evaluations_count_every_kth_epoch_and_the_last() -> None:
    assert evaluations(200, 2) == 100  # the last is a multiple
    assert evaluations(5, 2) == 3  # 2, 4 and the last, 5
    assert evaluations(1, 5) == 1
    assert evaluations(7, 1) == 7


def test_paces_skip_the_first_epoch_and_price_the_work_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fake trainer logs known times: epoch 1 pays 100 s of warm-up, later epochs
    10, 12, 30 s (median 12); the trial evaluates at its epochs 2 and 4 (every second
    epoch, 4 the last), 3 s and 5 s (one evaluation: 4 s); the final evaluation 50 s."""
    study = load_study(_study(tmp_path, [{"label": "ntxent", "loss": "ntxent"}], epochs=6))
    times = {1: (100.0, 0.0), 2: (10.0, 3.0), 3: (30.0, 0.0), 4: (12.0, 5.0)}

    def fake_train(directory: Path, config: TrainConfig, *args: object) -> None:
        assert config.epochs == 4 and config.seed == 0  # the trial's length, the first seed
        directory.mkdir(parents=True)
        records = [{"epoch": e, "epoch_time_s": t, "eval_time_s": v} for e, (t, v) in times.items()]
        (directory / METRICS).write_text("".join(json.dumps(r) + "\n" for r in records))
        (directory / FINAL).write_text(json.dumps({"final_eval_time_s": 50.0}))

    monkeypatch.setattr(trial_module, "train", fake_train)
    (only,) = run_trial(study, 4)
    assert only.error is None and only.eval_once_s == 4.0
    left = only.left
    # 3 seeds x 6 epochs; the study evaluates 3 times a run (epochs 2, 4, 6): 4 s x 3 / 6
    assert (left.epochs, left.runs) == (18, 3)
    assert (left.epoch_s, left.eval_s, left.final_s) == (12.0, 2.0, 50.0)
    assert left.seconds == 18 * 12.0 + 18 * 2.0 + 3 * 50.0


def test_trial_runs_every_arm_writes_nothing_and_reports_failures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    arms = [
        {"label": "ntxent", "loss": "ntxent"},
        {"label": "dcl", "loss": "dcl"},
        {"label": "missing", "loss": "dcl", "dataset": "imagefolder", "data_root": "/no/such"},
    ]
    path = _study(tmp_path, arms, epochs=2)
    study = load_study(path)
    run_study(study, seeds=[0], arms=["dcl"], log=False)  # one finished run: not priced
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    assert main(["study", str(path), "--trial", "1", "--arms", "dcl,missing"]) == 1
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("dcl: ok, one evaluation ")
    assert "; 4 epochs and 2 final evaluations left: " in lines[0]  # seeds 1 and 2
    assert lines[1].startswith("missing: FAILED: FileNotFoundError: imagefolder: /no/such")
    assert lines[2].startswith("[study] tiny: ") and lines[2].endswith("failed: missing")
    assert main(["study", str(path), "--trial", "1", "--arms", "ntxent"]) == 0


def test_trial_arguments_are_checked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _study(tmp_path, [{"label": "ntxent", "loss": "ntxent"}])
    assert main(["study", str(path), "--trial", "0"]) != 0
    assert "--trial must be an integer number of epochs >= 1" in capsys.readouterr().err
    assert main(["study", str(path), "--trial", "1", "--seeds", "1"]) != 0
    assert "choose arms with --arms only" in capsys.readouterr().err


def test_a_pace_the_trainer_did_not_log_is_named_not_a_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    study = load_study(_study(tmp_path, [{"label": "ntxent", "loss": "ntxent"}], epochs=6))

    def fake_train(directory: Path, config: TrainConfig, *args: object) -> None:
        directory.mkdir(parents=True)
        (directory / METRICS).write_text('{"epoch": 1, "epoch_time_s": 7.0}\n')
        (directory / FINAL).write_text("{}")

    monkeypatch.setattr(trial_module, "train", fake_train)
    (only,) = run_trial(study, 1)
    assert only.error is None and only.eval_once_s is None
    assert only.describe().endswith(
        "(training 7.0 s per epoch); not logged yet, so not counted: evaluation, final evaluation"
    )
