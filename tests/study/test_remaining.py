"""``study --status``'s estimate: the work left and the paces the runs logged."""

from __future__ import annotations

import json
from pathlib import Path

from contrastkit.study.records import RunRecord
from contrastkit.study.remaining import Remaining, remaining
from contrastkit.study.runner import Slot
from contrastkit.training import FINAL, METRICS, TrainConfig

CONFIG = TrainConfig(dataset="digits", epochs=10)


def _epochs(n: int, outlier: bool = False) -> list[dict]:
    """``n`` epoch records: 300 s of training each (one of 10,000 s with ``outlier``: the
    median ignores it) and 600 s of evaluation every third epoch: over the 24 epochs of the
    test, 7 evaluations, a mean of 175 s per epoch (the median would be 0)."""
    return [
        {
            "epoch": e,
            "epoch_time_s": 10_000.0 if outlier and e == 1 else 300.0,
            "eval_time_s": 600.0 * (e % 3 == 0),
        }
        for e in range(1, n + 1)
    ]


def _run_dir(path: Path, epochs: list[dict], final: dict | None = None) -> Path:
    path.mkdir()
    (path / METRICS).write_text("".join(json.dumps(r) + "\n" for r in epochs))
    if final is not None:
        (path / FINAL).write_text(json.dumps(final))
    return path


def test_the_estimate_adds_training_evaluation_and_final_evaluation(tmp_path: Path) -> None:
    finished = _run_dir(tmp_path / "a", _epochs(10), {"final_eval_time_s": 4000.0})
    partial = _run_dir(tmp_path / "b", _epochs(4, outlier=True))
    recorded = RunRecord({"final_eval_time_s": 6000.0}, _epochs(10))
    slots = [
        Slot("a", 0, finished, CONFIG, "finished", None),
        Slot("a", 1, tmp_path / "gone", CONFIG, "recorded", recorded),
        Slot("a", 2, partial, CONFIG, "partial", None),
        Slot("a", 3, tmp_path / "c", CONFIG, "new", None),
    ]
    left = remaining(slots)
    # 6 epochs of the partial run + 10 of the new one; medians 300 s and (4000, 6000) -> 5000
    assert (left.epochs, left.runs) == (16, 2)
    assert (left.epoch_s, left.eval_s, left.final_s) == (300.0, 175.0, 5000.0)
    hours = (16 * 300 + 16 * 175 + 2 * 5000) / 3600  # 4.89
    assert left.describe() == (
        f"16 epochs and 2 final evaluations left: {hours:.1f} h at the pace logged so far "
        "(training 300.0 s per epoch, evaluation 175.0 s per epoch, "
        "final evaluation 5000.0 s per run)"
    )
    assert remaining(slots[:2]).describe() == "nothing left"


def test_a_pace_no_run_has_logged_is_named_not_guessed(tmp_path: Path) -> None:
    new = Slot("a", 0, tmp_path / "new", CONFIG, "new", None)
    assert remaining([new]).describe() == (
        "10 epochs and 1 final evaluations left; "
        "not logged yet, so not counted: training, evaluation, final evaluation"
    )
    # a run written before evaluation times were logged: training is known, the rest not
    old = _run_dir(tmp_path / "old", [{"epoch": 1, "epoch_time_s": 36.0}])
    slots = [Slot("a", 1, old, CONFIG, "partial", None), new]
    assert remaining(slots).describe() == (
        "19 epochs and 2 final evaluations left: 11.4 min at the pace logged so far "
        "(training 36.0 s per epoch); not logged yet, so not counted: evaluation, "
        "final evaluation"
    )
    fast = Remaining(epochs=3, runs=1, epoch_s=0.052, eval_s=0.0031, final_s=2.0)
    assert fast.describe() == (
        "3 epochs and 1 final evaluations left: 2 s at the pace logged so far "
        "(training 0.052 s per epoch, evaluation 0.0031 s per epoch, "
        "final evaluation 2.0 s per run)"
    )


def test_a_slot_reads_its_metrics_once(tmp_path: Path) -> None:
    """``--status`` asks a partial run's epochs twice (its line, the estimate): the file is
    read once, so both see the same epochs even if the run logs more in between."""
    slot = Slot("a", 0, _run_dir(tmp_path / "a", _epochs(4)), CONFIG, "partial", None)
    assert slot.logged == _epochs(4)
    (slot.directory / METRICS).write_text("")
    assert slot.logged == _epochs(4) and remaining([slot]).epochs == 6
