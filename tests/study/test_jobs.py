"""``contrastkit study --jobs N``: the runs trained by N child processes, one report after."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from contrastkit.cli import INTERRUPTED, TERMINATED, main
from contrastkit.commands import study as study_command
from contrastkit.study import runner as runner_module
from contrastkit.study.claims import claim_path
from contrastkit.study.jobs import VISIBLE, run_jobs, worker_env

from .tiny import TINY, write_study

ARMS = [{"label": "ntxent", "loss": "ntxent"}, {"label": "dcl", "loss": "dcl"}]


def test_each_child_sees_one_gpu_round_robin_and_none_is_narrowed_below_two() -> None:
    assert worker_env(1, {"A": "1"}, gpus=0) == {"A": "1"}
    assert worker_env(3, {VISIBLE: "2"}, gpus=1) == {VISIBLE: "2"}
    assert [worker_env(i, {}, gpus=2)[VISIBLE] for i in range(3)] == ["0", "1", "0"]
    listed = {VISIBLE: "3, 5", "A": "1"}
    assert [worker_env(i, listed, gpus=2)[VISIBLE] for i in range(3)] == ["3", "5", "3"]
    assert worker_env(0, listed, gpus=2)["A"] == "1" and listed[VISIBLE] == "3, 5"


def test_children_train_every_run_and_the_parent_writes_the_report_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    path = write_study(tmp_path / "study.yaml", arms=ARMS, seeds=[0], min_seeds=1)

    def parent_trains(*_: object) -> None:
        raise AssertionError("the parent process trained a run")

    monkeypatch.setattr(runner_module, "train", parent_trains)  # children are unaffected
    assert main(["study", str(path), "--jobs", "2"]) == 0
    out = tmp_path / "out"
    for arm in ("ntxent", "dcl"):
        assert (out / "runs" / arm / "seed0" / "final.json").exists()
        assert not claim_path(out / "runs" / arm / "seed0").exists()
    results = json.loads((out / "results.json").read_text())
    assert results["runs_finished"] == 2
    log = [json.loads(line) for line in (out / "study_log.jsonl").read_text().splitlines()]
    assert sorted(r["run"] for r in log) == ["dcl seed 0", "ntxent seed 0"]  # each run once
    assert capfd.readouterr().out.count("report: ") == 1


def test_a_failing_child_fails_the_command_and_no_report_writes_none(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    path = write_study(tmp_path / "study.yaml", arms=ARMS, seeds=[0], min_seeds=1)
    blocker = tmp_path / "out" / "runs"
    blocker.parent.mkdir(parents=True)
    blocker.write_text("a file where the runs' folder goes")
    assert main(["study", str(path), "--jobs", "2", "--no-report"]) == 1
    err = capfd.readouterr().err
    assert err.count("contrastkit: error: ") == 2  # each child's own line
    assert "failed processes: 0 (exit 2), 1 (exit 2)" in err
    assert not (tmp_path / "out" / "REPORT.md").exists()


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--jobs", "0"], "--jobs must be a positive integer, got 0"),
        (["--jobs", "2", "--status"], "--probe, --trial and --status run alone"),
        (["--jobs", "2", "--report-only"], "--report-only trains nothing"),
    ],
)
def test_jobs_outside_training_is_a_one_line_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str], message: str
) -> None:
    path = write_study(tmp_path / "study.yaml", arms=ARMS, seeds=[0])
    assert main(["study", str(path), *flags]) == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize(
    ("signum", "group", "status", "line"),
    [
        (signal.SIGTERM, False, TERMINATED, "contrastkit: terminated\n"),
        (signal.SIGINT, True, INTERRUPTED, "contrastkit: interrupted\n"),
    ],
    ids=["sigterm-to-the-command", "ctrl-c-to-its-process-group"],
)
def test_a_signal_to_the_command_stops_its_children_and_they_release_their_runs(
    tmp_path: Path, signum: int, group: bool, status: int, line: str
) -> None:
    path = write_study(tmp_path / "study.yaml", arms=ARMS, seeds=[0], base={**TINY, "epochs": 500})
    command = [sys.executable, "-m", "contrastkit", "study", str(path), "--jobs", "2"]
    pipes = {"stdout": subprocess.DEVNULL, "stderr": subprocess.PIPE, "text": True}
    # a group to clean up, with SIGINT at its default: a shell that starts this test as a
    # background job ignores SIGINT for it, and the command's children would inherit that
    parent = subprocess.Popen(command, start_new_session=True, preexec_fn=_sigint_default, **pipes)
    try:
        runs = [tmp_path / "out" / "runs" / a / "seed0" for a in ("ntxent", "dcl")]
        claims = [claim_path(run) for run in runs]
        deadline = time.monotonic() + 120
        # both children training: a claim with its pid, and the trainer's metrics file
        while not all(c.exists() and c.read_text().strip() for c in claims) or not all(
            (run / "metrics.jsonl").exists() for run in runs
        ):
            assert time.monotonic() < deadline and parent.poll() is None, "no run started"
            time.sleep(0.2)
        children = [int(c.read_text()) for c in claims]
        if group:  # what Ctrl-C in a terminal does: every process of the group gets SIGINT
            os.killpg(parent.pid, signum)
        else:
            parent.send_signal(signum)
        _, err = parent.communicate(timeout=60)
        assert parent.returncode == status
        for pid in children:
            with pytest.raises(ProcessLookupError):
                os.kill(pid, 0)
        # each child unwound: its claim released, its part of the run's time logged
        assert not any(c.exists() for c in claims)
        log = (tmp_path / "out" / "study_log.jsonl").read_text().splitlines()
        assert sorted(json.loads(r)["run"] for r in log) == ["dcl seed 0", "ntxent seed 0"]
        assert not any(json.loads(r)["finished"] for r in log)
        # no traceback; the command's own line comes last
        assert "Traceback" not in err and err.endswith(line), err
    finally:  # whatever failed above, leave no training process behind
        with contextlib.suppress(ProcessLookupError):
            os.killpg(parent.pid, signal.SIGKILL)


def _sigint_default() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_run_jobs_works_from_a_thread_other_than_the_main_one(tmp_path: Path) -> None:
    path = write_study(tmp_path / "study.yaml", arms=ARMS, seeds=[0])
    codes: list[object] = []
    worker = threading.Thread(target=lambda: codes.append(run_jobs([str(path), "--status"], 1)))
    worker.start()
    worker.join(timeout=120)
    assert codes == [[0]]


# flags of the command that starts the processes, not of the processes: they train, it reports
PARENT_ONLY = {"help", "jobs", "no_report", "readme_rows"}
MODES = {"report_only", "probe", "trial", "status"}  # refused beside --jobs


def _sample(action: argparse.Action) -> list[str]:
    """The flag of ``action`` with a value other than its default."""
    flag = action.option_strings[-1]
    if action.nargs == 0:  # store_true
        return [flag]
    if action.nargs == "+":  # --seeds 0 1, --arms a b
        return [flag, "x", "y"]
    value = {int: "3", float: "2.5"}.get(action.type, "a=b" if action.default == [] else "x")
    return [flag, value]


def test_each_process_of_jobs_gets_every_training_flag_of_the_command() -> None:
    parser = argparse.ArgumentParser()
    study_command.add_arguments(parser)
    flags = [a for a in parser._actions if a.option_strings and a.dest not in PARENT_ONLY | MODES]
    assert {a.dest for a in flags} >= {"runs_dir", "out", "set", "max_minutes", "seeds"}
    for action in flags:
        args = parser.parse_args(["study.yaml", "--jobs", "2", *_sample(action)])
        assert getattr(args, action.dest) != action.default
        child = parser.parse_args(study_command._worker_argv(args))
        given, passed = getattr(args, action.dest), getattr(child, action.dest)
        if action.nargs == "+":  # the child may get the values as one comma-separated item
            given, passed = study_command._items(given), study_command._items(passed)
        assert passed == given, action.dest
        assert child.config == "study.yaml" and child.no_report and child.jobs == 1


PLUGIN = """
from typing import ClassVar

import torch
from torch import nn

from contrastkit.losses import Param, register


@register("plug_align", "pair", "a test plug-in: mean cosine distance of the pairs")
class PlugAlign(nn.Module):
    param_ranges: ClassVar[dict[str, Param]] = {}

    def forward(self, z1: torch.Tensor, z2: torch.Tensor) -> torch.Tensor:
        return (1 - nn.functional.cosine_similarity(z1, z2)).mean()
"""


def test_the_processes_of_jobs_import_what_the_command_imported(tmp_path: Path) -> None:
    """``contrastkit --import M study --jobs 2``: an arm with M's loss trains in the child
    processes too (they were started without ``--import`` and failed on its name). The
    command runs in a process of its own, so the plug-in never enters this one's registry."""
    (tmp_path / "plug_align_module.py").write_text(PLUGIN)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path])}
    arms = [{"label": "ntxent", "loss": "ntxent"}, {"label": "plug", "loss": "plug_align"}]
    path = write_study(tmp_path / "study.yaml", arms=arms, seeds=[0], min_seeds=1)
    argv = [sys.executable, "-m", "contrastkit", "--import", "plug_align_module", "study"]
    done = subprocess.run(
        [*argv, str(path), "--jobs", "2"], env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert (tmp_path / "out" / "runs" / "plug" / "seed0" / "final.json").exists()
