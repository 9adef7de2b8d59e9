"""The ``sts-eval`` and ``simcse`` sub-commands on tiny fixtures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from contrastkit.cli import main
from contrastkit.text import SentenceEncoder, read_sts, sts_spearman


def write_pairs(path: Path, sentences: list[str]) -> Path:
    halves = zip(sentences[0::2], sentences[1::2], strict=True)
    lines = [f"{a}\t{b}\t{i % 5}" for i, (a, b) in enumerate(halves)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def write_corpus(tmp_path: Path, sentences: list[str]) -> tuple[Path, Path]:
    """A one-sentence-per-line training file and STS pairs made of the same sentences."""
    train = tmp_path / "train.txt"
    train.write_text("\n".join(sentences) + "\n")
    return train, write_pairs(tmp_path / "dev.tsv", sentences)


def test_sts_eval_prints_and_writes_json(
    tmp_path: Path, tiny_st_bert: Path, sentences: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    data = write_pairs(tmp_path / "pairs.tsv", sentences)
    out = tmp_path / "res" / "sts.json"
    code = main(
        [
            "sts-eval",
            "--model",
            str(tiny_st_bert),
            "--data",
            str(data),
            "--format",
            "tsv",
            "--out",
            str(out),
        ]
    )
    assert code == 0
    result = json.loads(out.read_text())
    expected = sts_spearman(SentenceEncoder.from_pretrained(tiny_st_bert), read_sts(data, "tsv"))
    assert result == pytest.approx(expected)
    assert result["pairs"] == 6
    assert f"{100 * expected['spearman']:.2f}" in capsys.readouterr().out
    base = ["sts-eval", "--model", str(tiny_st_bert), "--data", str(data), "--format", "tsv"]
    assert main([*base, "--out", str(out)]) == 0  # an earlier result is replaced
    # any other file is not: the input data given as --out by mistake, a user's file
    mine = tmp_path / "notes.txt"
    mine.write_text("mine\n")
    for victim in (data, mine):
        before = victim.read_bytes()
        assert main([*base, "--out", str(victim)]) == 2
        assert "exists and is not a result this command wrote" in capsys.readouterr().err
        assert victim.read_bytes() == before


def test_sts_eval_user_errors_are_one_line(
    tmp_path: Path, tiny_st_bert: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.tsv"
    bad.write_text("only\ttwo\n")
    assert (
        main(["sts-eval", "--model", str(tiny_st_bert), "--data", str(bad), "--format", "tsv"]) == 2
    )
    assert "contrastkit: error: bad.tsv line 1" in capsys.readouterr().err


def test_simcse_command_trains_and_saves(
    tmp_path: Path, tiny_bert: Path, sentences: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    train, dev = write_corpus(tmp_path, sentences)
    out = tmp_path / "run"
    argv = ["simcse", "--model", str(tiny_bert), "--train-file", str(train), "--sts-dev", str(dev)]
    argv += ["--sts-format", "tsv", "--out", str(out), "--batch-size", "4", "--max-steps", "2"]
    argv += [
        "--loss",
        "macl",
        "--loss-arg",
        "alpha=1.5",
        "--loss-arg",
        "reweight=true",
        "--no-progress",
    ]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert '"alpha": 1.5' in printed and '"reweight": true' in printed and '"a0": 0.8' in printed
    history = json.loads((out / "history.json").read_text())
    assert history["steps"] == 2 and [e["step"] for e in history["evals"]] == [0, 2]
    assert (out / "best" / "config.json").is_file()


def test_simcse_engine_flags_reach_the_run(
    tmp_path: Path, tiny_bert: Path, sentences: list[str]
) -> None:
    """--device/--precision/--grad-accum go to the engine: 2 batches, 2 per optimiser
    step, under bf16 autocast on the CPU, and the config records them."""
    train, _ = write_corpus(tmp_path, sentences)
    out = tmp_path / "run"
    argv = ["simcse", "--model", str(tiny_bert), "--train-file", str(train), "--out", str(out)]
    argv += ["--batch-size", "4", "--max-steps", "2", "--no-progress", "--device", "cpu"]
    argv += ["--precision", "bf16", "--grad-accum", "2"]
    assert main(argv) == 0
    history = json.loads((out / "history.json").read_text())
    assert history["steps"] == 2
    assert (history["config"]["precision"], history["config"]["grad_accum"]) == ("bf16", 2)
    assert history["config"]["device"] == "cpu"
    with pytest.raises(SystemExit):
        main([*argv[:-4], "--precision", "fp8"])


def test_simcse_rejects_losses_without_two_views(
    tmp_path: Path, tiny_bert: Path, sentences: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    train, _ = write_corpus(tmp_path, sentences)
    argv = [
        "simcse",
        "--model",
        str(tiny_bert),
        "--train-file",
        str(train),
        "--out",
        str(tmp_path / "r"),
    ]
    assert main([*argv, "--loss", "supcon"]) == 2
    assert "framework 'simcse' cannot train with loss 'supcon'" in capsys.readouterr().err
    assert main([*argv, "--loss-arg", "alpha"]) == 2  # the parser of train's --loss-arg
    assert "--loss-arg expects key=value, got 'alpha'" in capsys.readouterr().err


def test_train_command_runs_simcse_on_the_shared_loop(
    tmp_path: Path, tiny_bert: Path, sentences: list[str]
) -> None:
    train, dev = write_corpus(tmp_path, sentences)
    out = tmp_path / "run"
    argv = ["train", "--dataset", "sentences", "--data-root", str(train), "--framework"]
    argv += ["simcse", "--loss", "mmhe", "--text-model", str(tiny_bert), "--sts-dev", str(dev)]
    argv += ["--sts-format", "tsv", "--eval-steps", "2", "--batch-size", "4", "--epochs", "1"]
    argv += ["--pooling", "mean", "--mlp-head", "--out", str(out), "--no-progress"]
    assert main(argv) == 0
    final = json.loads((out / "final.json").read_text())
    assert final["steps"] == 3 and final["config"]["framework"] == "simcse"
    history = json.loads((out / "history.json").read_text())
    assert [e["step"] for e in history["evals"]] == [0, 2, 3]
    trained = [e["spearman"] for e in history["evals"] if e["step"] > 0]  # SimCSE's selection
    assert final["sts_dev_spearman_best"] == max(trained)
    assert SentenceEncoder.from_pretrained(out / "best").pooling == "mean"
    assert main(["export", str(out), "--out", str(tmp_path / "exported")]) == 0
    assert (tmp_path / "exported" / "config.json").is_file()  # the trained transformer


def test_compare_tabulates_the_sts_dev_scores_of_simcse_runs(
    tmp_path: Path, tiny_bert: Path, sentences: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    train, dev = write_corpus(tmp_path, sentences)
    argv = ["compare", "--dataset", "sentences", "--data-root", str(train), "--framework"]
    argv += ["simcse", "--losses", "infonce,mmhe", "--text-model", str(tiny_bert), "--sts-dev"]
    argv += [str(dev), "--sts-format", "tsv", "--batch-size", "4", "--epochs", "1"]
    assert main([*argv, "--out", str(tmp_path / "cmp"), "--no-progress"]) == 0
    table = capsys.readouterr().out
    assert "| run | STS dev before | STS dev best |" in table
    best = json.loads((tmp_path / "cmp" / "mmhe" / "seed0" / "final.json").read_text())
    assert f"| mmhe | {best['sts_dev_spearman_before']:.4f}" in table
