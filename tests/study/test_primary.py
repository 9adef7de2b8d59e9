"""Issue 40: a confirmation study's pre-registered ``primary`` comparison, and convergence
judged on the study's metric, measured during training at ``final_eval_at``'s epochs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from contrastkit.study.config import load_study
from contrastkit.study.records import RunRecord
from contrastkit.training import TrainConfig, Trainer

from .tiny import TINY, write_study

ARMS = [{"label": "ntxent", "loss": "ntxent"}, {"label": "dcl", "loss": "dcl"}]


def test_primary_names_judged_comparisons(tmp_path: Path) -> None:
    path = write_study(
        tmp_path / "s.yaml", arms=ARMS, seeds=[5], primary={"arm": "dcl", "vs": "ntxent"}
    )
    assert load_study(path).primary == [("dcl", "ntxent")]
    assert load_study(write_study(tmp_path / "n.yaml", arms=ARMS, seeds=[5])).primary == []


@pytest.mark.parametrize(
    "primary",
    [
        {"arm": "ntxent", "vs": "dcl"},
        {"arm": "dcl"},
        "dcl vs ntxent",
        [{"arm": "dcl", "vs": "ntxent"}] * 2,
    ],
)
def test_a_primary_that_is_not_a_judged_comparison_is_refused(
    tmp_path: Path, primary: object
) -> None:
    path = write_study(tmp_path / "s.yaml", arms=ARMS, seeds=[5], primary=primary)
    with pytest.raises(ValueError, match="primary"):
        load_study(path)


@pytest.mark.parametrize("at", [[0.0], [1.0], [1.5], ["0.5"], 0.5, [True]])
def test_final_eval_at_takes_fractions_of_the_run(at: object) -> None:
    with pytest.raises(ValueError, match="final_eval_at"):
        TrainConfig.from_dict({**TINY, "final_eval_at": at})


def test_final_eval_epochs_round_and_leave_out_the_last() -> None:
    config = TrainConfig.from_dict({**TINY, "epochs": 30, "final_eval_at": [0.8, 0.9, 0.99]})
    assert config.final_eval_epochs() == [24, 27]


def test_the_final_evaluation_runs_during_training_without_changing_it(tmp_path: Path) -> None:
    plain = TrainConfig.from_dict({**TINY, "epochs": 3, "eval_every": 5})
    probed = TrainConfig.from_dict({**plain.to_dict(), "final_eval_at": [0.34, 0.67]})
    final_plain = Trainer(plain, tmp_path / "plain").fit()
    final_probed = Trainer(probed, tmp_path / "probed").fit()
    for key in ("knn_accuracy", "linear_accuracy", "alignment", "uniformity"):
        assert final_plain[key] == final_probed[key]  # the evaluation draws no training randomness
    run = RunRecord.from_directory(tmp_path / "probed")
    logged = [int(r["epoch"]) for r in run.history if "linear_accuracy" in r]
    assert logged == [1, 2]
    series = run.series("linear_accuracy")
    assert sorted(series) == [1, 2, 3] and series[3] == final_probed["linear_accuracy"]
    lines = (tmp_path / "probed" / "metrics.jsonl").read_text().splitlines()
    assert all(json.loads(line) for line in lines)  # strict JSON: finite numbers only
