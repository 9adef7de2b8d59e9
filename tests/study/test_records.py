"""A study's finished runs live on in its folder's ``runs.jsonl``: a later session whose
run directories are gone neither retrains them nor loses them from the report."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from contrastkit.cli import main
from contrastkit.provenance import code_info
from contrastkit.study import load_study, run_study, write_report
from contrastkit.study.records import RECORDS, RunRecord, code_versions, load_records
from contrastkit.study.report_text import _code_line

from .tiny import TINY, write_study


def _study(tmp_path: Path, epochs: int = 2) -> Path:
    return write_study(
        tmp_path / f"study{epochs}.yaml",
        claim="c",
        runs_dir=str(tmp_path / "runs"),
        base={**TINY, "eval_every": 1, "epochs": epochs},
        seeds=[0, 1],
        min_seeds=1,
        arms=[{"label": "ntxent", "loss": "ntxent"}, {"label": "dcl", "loss": "dcl"}],
    )


def test_recorded_runs_are_neither_retrained_nor_lost_when_run_dirs_are_gone(
    tmp_path: Path,
) -> None:
    study = load_study(_study(tmp_path))
    assert len(run_study(study, log=False).finished) == 4
    first = write_report(study, "cmd")
    records = load_records(study.out)
    assert sorted(records) == [("dcl", 0), ("dcl", 1), ("ntxent", 0), ("ntxent", 1)]
    final = json.loads((study.runs_dir / "dcl" / "seed1" / "final.json").read_text())
    assert records[("dcl", 1)].final == final
    assert [r["epoch"] for r in records[("dcl", 1)].history] == [1, 2]

    shutil.rmtree(study.runs_dir)  # a new machine: checkpoints and run dirs gone
    again = run_study(study, log=False)
    assert again.finished == [] and len(again.skipped) == 4
    assert not (study.runs_dir / "dcl").exists()
    second = write_report(study, "cmd")
    for key in ("arms", "comparisons", "runs_finished"):
        assert second[key] == first[key]


def test_a_record_of_another_epoch_count_is_trained_again(tmp_path: Path) -> None:
    study = load_study(_study(tmp_path))
    run_study(study, log=False, seeds=[0], arms=["ntxent"])
    write_report(study, "cmd")
    shutil.rmtree(study.runs_dir)
    longer = load_study(_study(tmp_path, epochs=3))  # same folder, more epochs
    done = run_study(longer, log=False, seeds=[0], arms=["ntxent"])
    assert done.finished == ["ntxent seed 0"]  # no checkpoint to extend: from the start
    assert write_report(longer, "cmd")["arms"]["ntxent"]["seeds"] == [0]


def test_a_damaged_records_file_is_one_error_naming_its_line(tmp_path: Path) -> None:
    study = load_study(_study(tmp_path))
    study.out.mkdir(parents=True)
    (study.out / RECORDS).write_text('{"arm": "ntxent", "seed": 0}\n')
    with pytest.raises(ValueError, match=r"runs\.jsonl:1: not a run record"):
        run_study(study, log=False)


def test_per_step_traces_are_kept_as_their_spread(tmp_path: Path) -> None:
    (tmp_path / "final.json").write_text(json.dumps({"epochs": 1, "config": {}}))
    line = {"epoch": 1, "temperature": 0.2, "temperature_steps": [0.1, 0.2, 0.3], "a_steps": [5]}
    (tmp_path / "metrics.jsonl").write_text(json.dumps(line) + "\n")
    (record,) = RunRecord.from_directory(tmp_path).history
    assert set(record) == {"epoch", "temperature", "temperature_step_sd"}
    assert record["temperature_step_sd"] == pytest.approx((2 / 3) ** 0.5 * 0.1)


def test_machine_settings_reach_every_arm_and_keep_recorded_runs(tmp_path: Path) -> None:
    study = load_study(_study(tmp_path))
    assert len(run_study(study, log=False).finished) == 4
    write_report(study, "cmd")
    shutil.rmtree(study.runs_dir)
    # another machine: its own device and threads; the recorded runs are still the study's
    here = load_study(_study(tmp_path), settings={"device": "cpu", "threads": 2})
    assert {(a.config.device, a.config.threads) for a in here.arms} == {("cpu", 2)}
    again = run_study(here, log=False)
    assert again.finished == [] and len(again.skipped) == 4


def test_set_refuses_the_protocol_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(ValueError, match="--set epochs, lr: a study's protocol is its config's"):
        load_study(_study(tmp_path), settings={"epochs": 3, "lr": 0.1, "device": "cpu"})
    path = str(_study(tmp_path))
    assert main(["study", path, "--set", "batch_size=8", "--status"]) == 2
    err = capsys.readouterr().err.strip()
    assert "--set batch_size" in err and len(err.splitlines()) == 1
    assert main(["study", path, "--set", "threads", "--status"]) == 2
    assert "--set expects key=value" in capsys.readouterr().err


def test_the_report_counts_the_runs_each_commit_trained() -> None:
    finals = [
        {"git_commit": "a" * 40, "git_dirty": False, "contrastkit_version": "0.1.0"},
        {"git_commit": "b" * 40, "git_dirty": True, "contrastkit_version": "0.1.0"},
        {"git_commit": "a" * 40, "git_dirty": False, "contrastkit_version": "0.1.0"},
        {"git_commit": None, "git_dirty": None, "contrastkit_version": "0.2.0"},
        {},  # written before final.json carried the code
    ]
    code = code_versions(RunRecord(f, []) for f in finals)
    assert list(code.items()) == [
        ("aaaaaaaaaa", 2),
        ("bbbbbbbbbb + changes", 1),
        ("contrastkit 0.2.0", 1),
        ("not recorded", 1),
    ]
    line = "".join(_code_line(code))
    assert line.endswith(
        ": aaaaaaaaaa: 2 runs; bbbbbbbbbb + changes: 1 run; contrastkit 0.2.0: 1 run; "
        "not recorded: 1 run."
    )
    assert _code_line({"not recorded": 3}) == []  # old studies' reports keep their text


def test_a_trained_run_records_its_code_and_the_report_says_so(tmp_path: Path) -> None:
    study = load_study(_study(tmp_path))
    run_study(study, log=False, seeds=[0])
    results = write_report(study, "cmd")
    info = code_info()
    final = json.loads((study.runs_dir / "dcl" / "seed0" / "final.json").read_text())
    assert {k: final[k] for k in info} == info
    assert sum(results["code"].values()) == 2 and "not recorded" not in results["code"]
    assert (
        "Code that trained the runs (git commit in each `final.json`): "
        in (study.out / "REPORT.md").read_text()
    )
