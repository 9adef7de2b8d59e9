"""`contrastkit train` / `compare`: end-to-end on tiny runs, one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from contrastkit.cli import build_parser, main
from contrastkit.commands.compare import plan
from contrastkit.commands.train_flags import overrides_from_args
from contrastkit.training import load_yaml

TINY = [
    "--dataset",
    "digits",
    "--batch-size",
    "128",
    "--feature-dim",
    "16",
    "--width",
    "4",
    "--proj-dim",
    "16",
    "--threads",
    "1",
    "--no-progress",
    "--knn-k",
    "50",
]


def test_train_writes_run_files_and_flags_override_yaml(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text("loss: ntxent\nepochs: 5\nloss_args: {temperature: 0.5}\n")
    out = tmp_path / "run"
    argv = [
        "train",
        "--config",
        str(cfg),
        *TINY,
        "--loss",
        "macl",
        "--epochs",
        "1",
        "--temperature",
        "0.2",
        "--loss-arg",
        "alpha=0.25",
        "--out",
        str(out),
    ]
    assert main(argv) == 0
    final = json.loads((out / "final.json").read_text())
    assert final["config"]["loss"] == "macl" and final["config"]["epochs"] == 1
    assert final["config"]["loss_args"] == {"temperature": 0.2, "alpha": 0.25}
    assert (out / "metrics.jsonl").exists() and (out / "checkpoint.pt").exists()
    assert json.loads(capsys.readouterr().out)["knn_accuracy"] == final["knn_accuracy"]
    # resume to 2 epochs continues the same run
    assert main([*argv[:-2], "--epochs", "2", "--out", str(out), "--resume"]) == 0
    assert len((out / "metrics.jsonl").read_text().splitlines()) == 2


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["train", "--loss", "nope"], "unknown loss 'nope'; available: "),
        (["train", "--batch-size", "1"], "batch_size must be >= 2"),
        (["train", "--dataset", "cifar10"], "cifar10 needs data_root"),
        (
            ["train", "--config", "/nonexistent/x.yaml"],
            "config file '/nonexistent/x.yaml' does not exist",
        ),
        (["train", "--framework", "simsiam", "--loss", "ntxent"], "compatible losses: simsiam"),
        (["train", "--loss-arg", "temperature"], "--loss-arg expects key=value"),
        (["train", "--resume"], "--resume needs --out"),
        (["compare", "--losses", "ntxent,nope"], "unknown loss 'nope'"),
        (["compare"], "nothing to compare"),
        (["compare", "--losses", "ntxent", "--seeds", "a"], "--seeds must be comma-separated"),
    ],
)
def test_user_errors_are_one_line(
    argv: list[str], message: str, capsys: pytest.CaptureFixture
) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("contrastkit: error: ") and message in err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_compare_table_plots_and_summary(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "cmp"
    argv = [
        "compare",
        "--losses",
        "ntxent,macl",
        "--seeds",
        "0,1",
        "--epochs",
        "1",
        *TINY,
        "--out",
        str(out),
    ]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "| run | kNN k=50 |" in printed and "| macl |" in printed  # --knn-k 50
    summary = json.loads((out / "summary.json").read_text())
    assert summary["seeds"] == [0, 1]
    knn = summary["runs"]["macl"]["metrics"]["knn_accuracy"]
    finals = [json.loads((out / "macl" / f"seed{s}" / "final.json").read_text()) for s in (0, 1)]
    assert knn["values"] == [f["knn_accuracy"] for f in finals]
    assert knn["mean"] == pytest.approx(sum(knn["values"]) / 2)
    assert knn["std"] == pytest.approx(abs(knn["values"][0] - knn["values"][1]) / 2**0.5)
    assert (out / "accuracy.png").stat().st_size > 0 and (out / "temperature.png").exists()
    # --resume reuses the finished runs (nothing retrained: the files are untouched)
    stamp = (out / "macl" / "seed0" / "final.json").stat().st_mtime_ns
    assert main([*argv, "--resume"]) == 0
    assert (out / "macl" / "seed0" / "final.json").stat().st_mtime_ns == stamp
    # --summarize-only tabulates finished runs only and trains nothing
    capsys.readouterr()
    assert main([*argv[:2], "ntxent,dcl", "--out", str(out), "--summarize-only"]) == 0
    printed = capsys.readouterr().out
    assert "| ntxent |" in printed and "| dcl |" not in printed
    assert not (out / "dcl").exists()


CONFIGS = sorted((Path(__file__).parents[2] / "configs").glob("*.yaml"))


@pytest.mark.parametrize("config", CONFIGS, ids=lambda p: p.stem)
def test_shipped_configs_plan_valid_runs(config: Path) -> None:
    """Every experiment config the docs cite builds valid runs (no training), and a
    top-level ``joint_views`` reaches every run."""
    runs, seeds, _ = plan(build_parser().parse_args(["compare", "--config", str(config)]))
    assert runs and seeds
    pinned = load_yaml(config).get("joint_views")
    if pinned is not None:
        assert all(cfg.joint_views is pinned for _, cfg in runs)


@pytest.mark.parametrize(
    ("flags", "expected"), [(["--joint-views"], True), (["--no-joint-views"], False), ([], None)]
)
def test_joint_views_flag_reaches_the_config(flags: list[str], expected: bool | None) -> None:
    values = overrides_from_args(build_parser().parse_args(["train", *flags]))
    assert values.get("joint_views") is expected


@pytest.mark.parametrize(
    "entry,match",
    [
        ("runs: []", "runs must be a non-empty list of mappings"),
        ("runs: 5", "runs must be a non-empty list of mappings"),
        ("runs: [5]", "runs must be a non-empty list of mappings"),
        ("seeds: 3", "seeds must be a list of integers >= 0"),
        ("seeds: [0.5]", "seeds must be a list of integers >= 0"),
        ("losses: ntxent", "losses must be a list of loss names"),
        ("losses: [ntxent]\nruns: [{loss: dcl}]", "gives 'losses' or 'runs', not both"),
        ("losses: [ntxent]\nseeds: [1, 1]", "seeds must be distinct"),
    ],
)
def test_a_malformed_compare_config_is_one_line(
    tmp_path: Path, entry: str, match: str, capsys: pytest.CaptureFixture
) -> None:
    """Tracebacks (IndexError, TypeError) or silent readings (seed 0.5 run as 0, 'ntxent'
    read letter by letter, losses dropped beside runs) before; nothing is trained."""
    config = tmp_path / "c.yaml"
    config.write_text(f"dataset: digits\n{entry}\n")
    assert main(["compare", "--config", str(config), "--out", str(tmp_path / "o")]) == 2
    assert match in capsys.readouterr().err
    assert not (tmp_path / "o").exists()
