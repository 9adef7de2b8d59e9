"""Suites (``contrastkit.study.suite``): several studies run, resumed and reported by one
``contrastkit study SUITE``, each in its own folders, with one column per study."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from contrastkit.cli import main
from contrastkit.commands import study as study_command
from contrastkit.study import Suite, load_config
from contrastkit.study.suite import markdown

from .tiny import TINY


def _part(folder: Path, name: str, batch_size: int, **extra: object) -> str:
    spec = {
        "name": name,
        "table": f"T (batch {batch_size})",
        "claim": "dcl beats ntxent",
        "base": {**TINY, "batch_size": batch_size},
        "baseline": "ntxent",
        "seeds": [0],
        "min_seeds": 1,
        "arms": [{"label": "ntxent", "loss": "ntxent"}],
        **extra,
    }
    (folder / f"{name}.yaml").write_text(yaml.safe_dump(spec))
    return f"{name}.yaml"


def _suite(folder: Path, parts: list[str], **extra: object) -> Path:
    path = folder / "suite.yaml"
    spec = {"name": "s", "paper": "P", "table": "T", "claim": "c", "parts": parts, **extra}
    path.write_text(yaml.safe_dump(spec))
    return path


def test_a_suite_runs_resumes_and_reports_each_part_in_its_own_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _suite(tmp_path, [_part(tmp_path, "small", 64), _part(tmp_path, "large", 128)])
    runs, out = tmp_path / "runs", tmp_path / "out"
    args = ["study", str(path), "--runs-dir", str(runs), "--out", str(out)]
    assert main([*args, "--status"]) == 0
    text = capsys.readouterr().out
    assert "[study] small: 0 of 1" in text and "[study] large: 0 of 1" in text
    assert main(args) == 0
    finals = [runs / name / "ntxent" / "seed0" / "final.json" for name in ("small", "large")]
    stamps = [f.stat().st_mtime_ns for f in finals]
    summary = json.loads((out / "suite.json").read_text())
    names, parts = ("small", "large"), summary["parts"]
    for name, part, final, batch in zip(names, parts, finals, (64, 128), strict=True):
        own = json.loads((out / name / "results.json").read_text())
        assert part["name"] == name and part["runs_finished"] == 1
        assert part["arms"]["ntxent"] == own["arms"]["ntxent"]["interval"]
        assert part["report"] == f"{name}/REPORT.md"
        assert json.loads(final.read_text())["config"]["batch_size"] == batch
    report = (out / "REPORT.md").read_text()
    assert "| arm: knn_accuracy mean [95 % CI] | T (batch 64) | T (batch 128) |" in report
    assert not (out / "results.json").exists()  # README rows come from the parts only
    capsys.readouterr()
    assert main(args) == 0  # resumed: nothing left to train
    assert "small: 0 runs finished now, 1 already finished" in capsys.readouterr().out
    assert [f.stat().st_mtime_ns for f in finals] == stamps


def test_the_time_limit_spans_the_parts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _suite(tmp_path, [_part(tmp_path, "first", 64), _part(tmp_path, "second", 64)])
    runs = tmp_path / "runs"
    clock = iter([0.0, 0.0, 600.0])  # start, first part, second part 10 min later
    monkeypatch.setattr(study_command, "monotonic", lambda: next(clock))
    args = ["study", str(path), "--runs-dir", str(runs), "--out", str(tmp_path / "out")]
    assert main([*args, "--max-minutes", "5"]) == 0
    assert (runs / "first" / "ntxent" / "seed0" / "final.json").exists()
    assert not (runs / "second").exists()  # no minute was left for it


def test_bad_suites_are_one_line_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    part = _part(tmp_path, "a", 64)
    other = _part(tmp_path, "b", 64, metric="linear_accuracy")
    wider = _part(tmp_path, "c", 64, confidence=0.9)
    (tmp_path / "n").mkdir()
    _suite(tmp_path / "n", [f"../{part}"])
    cases = {
        "does not exist": [part, "missing.yaml"],
        "must share 'metric'": [part, other],
        "must share 'confidence'": [part, wider],
        "distinct names": [part, part],
        "is a suite": ["n/suite.yaml"],
        "parts must be a list": [],
    }
    for message, parts in cases.items():
        path = _suite(tmp_path, parts)
        assert main(["study", str(path), "--status"]) == 2, message
        err = capsys.readouterr().err
        assert message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    path = _suite(tmp_path, [part], epochs=3)
    assert main(["study", str(path), "--status"]) == 2
    assert "unknown suite key(s) epochs" in capsys.readouterr().err
    path = _suite(tmp_path, [part])
    assert main(["study", str(path), "--probe", "3"]) == 2
    assert "is a suite: probe one of its parts" in capsys.readouterr().err
    assert main(["study", str(path), "--status", "--arms", "dcl"]) == 2  # in no part


def test_load_config_reroots_each_part_under_runs_dir_and_out(tmp_path: Path) -> None:
    path = _suite(tmp_path, [_part(tmp_path, "a", 64), _part(tmp_path, "b", 128)])
    suite = load_config(path, runs_dir=tmp_path / "r", out=tmp_path / "o")
    assert isinstance(suite, Suite) and suite.out == tmp_path / "o"
    assert [p.runs_dir for p in suite.parts] == [tmp_path / "r" / "a", tmp_path / "r" / "b"]
    assert [p.out for p in suite.parts] == [tmp_path / "o" / "a", tmp_path / "o" / "b"]
    plain = load_config(tmp_path / "a.yaml")
    assert not isinstance(plain, Suite) and plain.name == "a"


def test_markdown_puts_each_part_in_its_column_and_dashes_what_a_part_lacks() -> None:
    interval = {"mean": 0.5, "low": 0.4, "high": 0.6, "n": 3}
    comp = {"difference": interval, "verdict": "holds", "interval_verdict": "holds"}
    empty = {"difference": None, "verdict": "too few seeds", "interval_verdict": "too few seeds"}
    part = {"name": "x", "table": "", "report": "x/REPORT.md", "runs_planned": 2, "epochs": 5}
    data = {
        "name": "s",
        "paper": "P",
        "table": "T",
        "claim": "c",
        "metric": "m",
        "confidence": 0.95,
        "parts": [
            {**part, "runs_finished": 2, "arms": {"a": interval}, "comparisons": {"a vs b": comp}},
            {**part, "name": "y", "runs_finished": 0, "arms": {"b": None}, "comparisons": {
                "a vs b": empty, "b vs a": empty}},
        ],
    }  # fmt: skip
    text = markdown(data, "cmd")
    assert "| arm: m mean [95 % CI] | x | y |" in text
    assert "| a | 0.5000 [0.4000, 0.6000] | - |" in text and "| b | - | - |" in text
    assert "| a vs b | 0.5000 [0.4000, 0.6000] **holds** | - |" in text
    assert "| b vs a | - | - |" in text and "| x | 2 of 2 | 5 | [x](x/REPORT.md) |" in text
