"""The bad-input table of issue 17: every user error exits 2 with one line naming the file
or field, no traceback, and leaves an existing run directory untouched."""

from __future__ import annotations

import os
import shutil
import signal
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import torch

from contrastkit.cli import main
from contrastkit.commands import train as train_command

TINY = ["--dataset=digits", "--batch-size=256", "--feature-dim=8", "--width=2", "--proj-dim=8"]
TINY += ["--knn-k=20", "--epochs=1", "--no-progress"]


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run = tmp_path_factory.mktemp("finished") / "run"
    assert main(["train", *TINY, "--out", str(run)]) == 0
    return run


def _snapshot(root: Path) -> dict[str, bytes | None]:
    """Every file's bytes and every folder (``None``) under ``root``."""
    return {
        str(p.relative_to(root)): p.read_bytes() if p.is_file() else None for p in root.rglob("*")
    }


NO_DATA_STUDY = """name: s
paper: P
table: T
claim: c
out: {tmp}/study
runs_dir: {tmp}/runs
base: {dataset: cifar10, data_root: {tmp}/nowhere, epochs: 1}
baseline: a
seeds: [0]
arms: [{label: a, loss: ntxent}]
"""  # {tmp}: the test's folder


def _damage(kind: str) -> Callable[[Path], None]:
    def apply(run: Path) -> None:
        ckpt = run / "checkpoint.pt"
        data = ckpt.read_bytes()
        if kind == "empty":
            ckpt.write_bytes(b"")
        elif kind == "truncated":
            ckpt.write_bytes(data[: len(data) // 3])
        elif kind == "garbage":
            ckpt.write_bytes(b"\x00garbage" * 50)
        elif kind == "foreign":
            torch.save({"weights": torch.ones(3)}, ckpt)
        elif kind == "missing_key":
            state = torch.load(ckpt, weights_only=True)
            del state["optimizer"], state["sha256"]
            torch.save(state, ckpt)
        elif kind == "no_metrics":
            (run / "metrics.jsonl").unlink()
        elif kind == "bad_metrics":
            (run / "metrics.jsonl").write_text("not json\n")

    return apply


# (argv after the command, files to create {name: bytes}, damage to a copied run, message)
CASES: list[tuple[str, list[str], dict[str, bytes], str | None, str]] = [
    (
        "yaml",
        ["train", "--config", "{tmp}/bad.yaml"],
        {"bad.yaml": b"a: [1, 2\n"},
        None,
        "bad.yaml' line",
    ),
    (
        "yaml_utf8",
        ["train", "--config", "{tmp}/b.yaml"],
        {"b.yaml": b"\xff\xfe:1"},
        None,
        "not UTF-8",
    ),
    ("out_file", ["train", *TINY, "--out", "{tmp}/f"], {"f": b"x"}, None, "is a file"),
    (
        "out_under_file",
        ["train", *TINY, "--out", "{tmp}/f/run"],
        {"f": b"x"},
        None,
        "which is a file",
    ),
    ("out_empty", ["train", *TINY, "--out", ""], {}, None, "empty string"),
    (
        "temperature_abc",
        ["train", *TINY, "--loss-arg", "temperature=abc"],
        {},
        None,
        "temperature must be a finite number > 0, got 'abc'",
    ),
    (
        "loss_arg_yaml",
        ["train", *TINY, "--loss-arg", "temperature=[1"],
        {},
        None,
        "--loss-arg 'temperature=[1'",
    ),
    (
        "supcon_negative",
        ["train", *TINY, "--framework=supervised", "--loss=supcon", "--temperature=-0.5"],
        {},
        None,
        "temperature must be",
    ),
    (
        "lascon_nan",
        ["train", *TINY, "--framework=supervised", "--loss=lascon", "--c=nan"],
        {},
        None,
        "c must be a finite number > 0, got nan",
    ),
    ("views_simclr", ["train", *TINY, "--views", "3"], {}, None, "num_views is not used"),
    (
        "senteval_classifier_svm",
        ["train", *TINY, "--senteval-classifier", "svm"],
        {},
        None,
        "senteval_classifier must be sklearn or pytorch, got 'svm'",
    ),
    (
        "sts_format_csv",
        ["train", *TINY, "--sts-format", "csv"],
        {},
        None,
        "sts_format must be stsb or tsv, got 'csv'",
    ),
    ("queue_simclr", ["train", *TINY, "--queue-size", "64"], {}, None, "queue_size is not used"),
    (
        "momentum_moco",
        ["train", *TINY, "--framework=moco", "--loss=infonce", "--momentum=1.5"],
        {},
        None,
        "momentum must be",
    ),
    ("seed_overflow", ["train", *TINY, "--seed", str(2**70)], {}, None, "seed must be"),
    ("ckpt_empty", ["train", *TINY, "--resume", "--out", "{run}"], {}, "empty", "is empty"),
    (
        "ckpt_truncated",
        ["train", *TINY, "--resume", "--out", "{run}"],
        {},
        "truncated",
        "cannot be loaded",
    ),
    (
        "ckpt_garbage",
        ["train", *TINY, "--resume", "--out", "{run}"],
        {},
        "garbage",
        "cannot be loaded",
    ),
    ("ckpt_foreign", ["train", *TINY, "--resume", "--out", "{run}"], {}, "foreign", "lacks key"),
    (
        "ckpt_missing_key",
        ["train", *TINY, "--resume", "--out", "{run}"],
        {},
        "missing_key",
        "lacks key(s): optimizer",
    ),
    (
        "no_metrics",
        ["train", *TINY, "--resume", "--out", "{run}"],
        {},
        "no_metrics",
        "metrics.jsonl' is missing",
    ),
    ("rerun_without_resume", ["train", *TINY, "--out", "{run}"], {}, "none", "already holds"),
    (
        "sts_max_length",
        ["sts-eval", "--data", "{tmp}/s.tsv", "--max-length", "0"],
        {},
        None,
        "--max-length must be a positive integer",
    ),
    (
        "sts_inf_score",
        ["sts-eval", "--format", "tsv", "--data", "{tmp}/s.tsv"],
        {"s.tsv": b"a\tb\tinf\n"},
        None,
        "s.tsv line 1: the score must be a finite number",
    ),
    (
        "sts_utf8",
        ["sts-eval", "--format", "tsv", "--data", "{tmp}/s.tsv"],
        {"s.tsv": b"a\tb\t1\n\xff\tb\t2\n"},
        None,
        "line 2 is not UTF-8",
    ),
    (
        "sts_out_dir",
        ["sts-eval", "--data", "{tmp}/s.tsv", "--out", "{tmp}"],
        {},
        None,
        "is a directory",
    ),
    (
        "simcse_epochs",
        ["simcse", "--train-file", "{tmp}/t.txt", "--out", "{tmp}/o", "--epochs", "0"],
        {},
        None,
        "--epochs must be a positive integer",
    ),
    (
        "simcse_loss_arg",
        [
            "simcse",
            "--train-file",
            "{tmp}/t.txt",
            "--out",
            "{tmp}/o",
            "--loss-arg",
            "temprature=0.1",
        ],
        {},
        None,
        "no argument 'temprature'",
    ),
    (
        "simcse_utf8",
        ["simcse", "--train-file", "{tmp}/t.txt", "--out", "{tmp}/o"],
        {"t.txt": b"ok\n\xffbad\n"},
        None,
        "line 2 is not UTF-8",
    ),
    # input found bad once the work starts: the folders made for the output are taken back
    (
        "batch_above_data",
        ["train", *TINY, "--dataset=mnist1d", "--num-samples=10", "--out", "{tmp}/new/run"],
        {},
        None,
        "exceeds the 8 training samples",
    ),
    (
        "compare_batch_above_data",
        [
            "compare",
            *TINY,
            "--dataset=mnist1d",
            "--num-samples=10",
            "--losses",
            "ntxent",
            "--out",
            "{tmp}/cmp",
        ],
        {},
        None,
        "exceeds the 8 training samples",
    ),
    (
        "study_data_missing",
        ["study", "{tmp}/s.yaml"],
        {"s.yaml": NO_DATA_STUDY.encode()},
        None,
        "cifar10: none of these exist",
    ),
    (
        "simcse_no_train_file",
        ["simcse", "--train-file", "{tmp}/none.txt", "--out", "{tmp}/o"],
        {},
        None,
        "none.txt' is not a readable file",
    ),
    (
        "sts_out_new_folder",
        ["sts-eval", "--data", "{tmp}/none.tsv", "--out", "{tmp}/new/r.json"],
        {},
        None,
        "none.tsv' is not a readable file",
    ),
    (
        "compare_bad_metrics",
        ["compare", *TINY, "--losses", "ntxent", "--summarize-only", "--out", "{tmp}/cmp"],
        {},
        "bad_metrics",
        "line 1 is not a JSON",
    ),
]


@pytest.mark.parametrize(
    ("argv", "files", "damage", "message"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_bad_input_is_one_line_exit_2(
    tmp_path: Path,
    finished_run: Path,
    capsys: pytest.CaptureFixture,
    argv: list[str],
    files: dict[str, bytes],
    damage: str | None,
    message: str,
) -> None:
    for name, data in files.items():
        (tmp_path / name).write_bytes(data.replace(b"{tmp}", str(tmp_path).encode()))
    run = tmp_path / "run"
    if damage is not None:
        shutil.copytree(finished_run, run)
        _damage(damage)(run)
        if "compare" in argv:  # compare's layout: OUT/<label>/seed<k>
            (tmp_path / "cmp" / "ntxent").mkdir(parents=True)
            run.rename(tmp_path / "cmp" / "ntxent" / "seed0")
    before = _snapshot(tmp_path)
    capsys.readouterr()
    argv = [a.replace("{tmp}", str(tmp_path)).replace("{run}", str(run)) for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("contrastkit: error: ") and err.count("\n") == 1, err
    assert message in err, err
    assert _snapshot(tmp_path) == before  # nothing written, nothing destroyed


def test_debug_shows_the_traceback(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="seed must be"):
        main(["--debug", "train", *TINY, "--seed", "-1"])


def test_ctrl_c_is_one_line_exit_130_and_debug_keeps_the_traceback(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    def interrupted(_: object) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(train_command, "run", interrupted)
    assert main(["train", *TINY]) == 130
    assert capsys.readouterr().err == "contrastkit: interrupted\n"
    with pytest.raises(KeyboardInterrupt):
        main(["--debug", "train", *TINY])


def test_sigterm_unwinds_as_one_line_exit_143_and_the_handler_is_put_back(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    unwound: list[bool] = []

    def terminated(_: object) -> int:
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(30)  # the handler raises at the next bytecode; never reached
        finally:
            unwound.append(True)
        return 0

    before = signal.getsignal(signal.SIGTERM)
    monkeypatch.setattr(train_command, "run", terminated)
    assert main(["train", *TINY]) == 128 + signal.SIGTERM
    assert capsys.readouterr().err == "contrastkit: terminated\n"
    assert unwound == [True]
    assert signal.getsignal(signal.SIGTERM) is before
