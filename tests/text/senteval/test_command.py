"""``contrastkit senteval`` end to end with a tiny random BERT on fixture folders."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from contrastkit.cli import main
from contrastkit.text.senteval import resolve_model
from contrastkit.text.senteval.logreg import L2_GRID

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
    torch_out = tmp_path / "res" / "pytorch.json"  # SentEval's PyTorch classifier
    assert main([*argv[:-4], "--out", str(torch_out), "--classifier", "pytorch", "--no-cache"]) == 0
    assert json.loads(torch_out.read_text())["MRPC"]["C"] in L2_GRID
    capsys.readouterr()
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
    assert data["encoder"]["pooling"] == "mean" and data["classifier"] == "sklearn"
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
    # --out is checked before any work: a folder, or a name the table would overwrite
    (tmp_path / "res").mkdir()
    assert main([*base, "--data", str(root), "--out", str(tmp_path / "res")]) == 2
    err = capsys.readouterr().err
    assert "is a directory, not a file" in err and len(err.strip().splitlines()) == 1
    assert main([*base, "--data", str(root), "--out", str(tmp_path / "res" / "t.md")]) == 2
    assert "must not end in .md" in capsys.readouterr().err
    assert sorted(p.name for p in (tmp_path / "res").iterdir()) == []
    # an existing file that is not an earlier result, or a table beside a missing result,
    # is never replaced: here the task's own data given as --out by mistake
    data_file = next(p for p in root.rglob("*") if p.is_file())
    before = data_file.read_bytes()
    assert main([*base, "--data", str(root), "--out", str(data_file)]) == 2
    assert "exists and is not a result this command wrote" in capsys.readouterr().err
    assert data_file.read_bytes() == before
    # every task asked for is evaluated: missing files, or no task at all, are refused
    assert main([*base, "--data", str(tmp_path / "res"), "--tasks", "MR"]) == 2
    err = capsys.readouterr().err
    assert "MR: missing" in err and "rt-polarity" in err and len(err.strip().splitlines()) == 1
    assert main([*base, "--data", str(root), "--tasks", ","]) == 2
    assert "--tasks names no task" in capsys.readouterr().err
    (tmp_path / "res" / "r.md").write_text("my table\n")
    assert main([*base, "--data", str(root), "--out", str(tmp_path / "res" / "r.json")]) == 2
    assert "its table would replace" in capsys.readouterr().err
    assert (tmp_path / "res" / "r.md").read_text() == "my table\n"


def test_cli_task_list_matches_the_library() -> None:
    from contrastkit.commands.senteval import TASKS as CLI_TASKS
    from contrastkit.text.senteval import TASKS

    assert CLI_TASKS.split(",") == list(TASKS)


def test_bf16_encodes_under_autocast_into_its_own_cache(tmp_path: Path, tiny_st_bert: Path) -> None:
    import numpy as np

    from contrastkit.text.senteval import encoder_embedder

    sentences = ["a cat sat on the mat", "dogs bark at night", "the sun is hot today"]
    caches = {}
    embs = {}
    for precision in ("fp32", "bf16"):
        embed, info = encoder_embedder(
            tiny_st_bert, device="cpu", cache_dir=tmp_path / "cache", precision=precision
        )
        assert info["precision"] == precision
        embs[precision] = embed("STS12", sentences)
        caches[precision] = embed.cache_dir
    assert caches["fp32"] != caches["bf16"]
    assert embs["bf16"].dtype == np.float32
    # bfloat16 keeps 8 mantissa bits: close to float32, but not equal to it
    diff = np.abs(embs["bf16"] - embs["fp32"]).max()
    assert 0 < diff < 0.05 * np.abs(embs["fp32"]).max()


def test_cli_bad_precision_and_threads_are_one_line_exit_2(
    tmp_path: Path, tiny_st_bert: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = write_downstream(tmp_path / "d", n=4)
    base = ["senteval", "--model", str(tiny_st_bert), "--no-cache", "--data", str(root)]
    assert main([*base, "--threads", "0"]) == 2
    assert "--threads must be a positive integer" in capsys.readouterr().err
    assert main([*base, "--jobs", "0"]) == 2
    assert "--jobs must be a positive integer" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        main([*base, "--precision", "fp8"])
    assert exc.value.code == 2
    assert "--precision" in capsys.readouterr().err
