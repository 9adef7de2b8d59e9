"""``contrastkit senteval`` end to end with a tiny random BERT on fixture folders."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from contrastkit.cli import main
from contrastkit.text.senteval import resolve_model

from .fixtures import write_downstream


def test_cli_writes_json_and_table_and_reuses_the_cache(
    tmp_path: Path, tiny_st_bert: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = write_downstream(tmp_path / "downstream", n=10)
    # a SimCSE run directory: the model sits in best/
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "best").symlink_to(tiny_st_bert, target_is_directory=True)
    assert resolve_model(run_dir) == run_dir / "best"
    out = tmp_path / "res" / "senteval.json"
    argv = ["senteval", "--model", str(run_dir), "--data", str(root), "--device", "cpu"]
    argv += ["--tasks", "STS16,SICKRelatedness,MRPC", "--kfold", "2", "--out", str(out)]
    argv += ["--cache-dir", str(tmp_path / "cache")]
    assert main(argv) == 0
    first = capsys.readouterr().out
    data = json.loads(out.read_text())
    assert set(data["STS16"]["subsets"]) == {
        "answer-answer",
        "headlines",
        "plagiarism",
        "postediting",
        "question-question",
    }
    assert data["SICKRelatedness"]["test"]["pairs"] == 20
    assert {"acc", "f1", "C"} <= data["MRPC"].keys()
    assert data["encoder"]["pooling"] == "mean"
    assert "| Model | MR | CR |" in out.with_suffix(".md").read_text()
    assert "encoded 0 sentences" not in first
    assert main(argv) == 0
    assert "encoded 0 sentences" in capsys.readouterr().out
    assert json.loads(out.read_text())["STS16"] == data["STS16"]


def test_cli_bad_input_is_one_line_exit_2(
    tmp_path: Path, tiny_st_bert: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = write_downstream(tmp_path / "d", n=4)
    base = ["senteval", "--model", str(tiny_st_bert), "--no-cache"]
    assert main([*base, "--data", str(root), "--tasks", "STS99"]) == 2
    assert "--tasks: unknown" in capsys.readouterr().err
    assert main([*base, "--data", str(tmp_path / "nope")]) == 2
    assert "--data" in capsys.readouterr().err
    assert main(["senteval", "--model", str(tmp_path), "--data", str(root)]) == 2
    assert "config.json" in capsys.readouterr().err


def test_cli_task_list_matches_the_library() -> None:
    from contrastkit.commands.senteval import TASKS as CLI_TASKS
    from contrastkit.text.senteval import TASKS

    assert CLI_TASKS.split(",") == list(TASKS)
