"""Kill a training run at random points — inside checkpoint, metrics and final writes and
at random instants, with SIGKILL or with SIGTERM (which the command line turns into an
exception that unwinds, :mod:`contrastkit._signals`) — resume it each time, and compare
with an uninterrupted run bit-for-bit (issue 17: "a run killed at any instant resumes or
restarts to a result bit-identical to an uninterrupted run")."""

from __future__ import annotations

import json
import multiprocessing
import os
import random
import signal
import sys
import time
from pathlib import Path

import pytest
import torch

from contrastkit._signals import Terminated, sigterm_unwinds
from contrastkit.checkpoint_file import load_checkpoint
from contrastkit.rundir import FAULT_ENV, read_jsonl
from contrastkit.training import CHECKPOINT, FINAL, METRICS, TIMING_KEYS, TrainConfig, Trainer

CONFIG = dict(dataset="digits", epochs=3, batch_size=256, feature_dim=8, width=2, proj_dim=8,
              knn_k=20, loss="macl")  # fmt: skip
# one kill inside each kind of write, then kills at random instants
FAULTS = ["checkpoint.pt:1", "metrics.jsonl:2", "checkpoint.pt:3", "final.json:1"]
RANDOM_KILLS = 3
# SIGTERM once metrics.jsonl holds this many rows (an instant set by the run's progress, not
# by a clock: a run faster than the timed one could end before a timed signal): the run
# unwinds from wherever it is then, as under `contrastkit train`, and exits 143
TERM_AT_ROWS = (1, 2)

pytestmark = pytest.mark.skipif(
    "fork" not in multiprocessing.get_all_start_methods(), reason="needs fork"
)


def _train(out: str, fault: str | None) -> None:  # in a forked child
    if fault:
        os.environ[FAULT_ENV] = fault
    torch.set_num_threads(1)
    directory = Path(out)
    resume = directory.exists() and any(directory.iterdir())
    try:
        with sigterm_unwinds():
            Trainer(TrainConfig(**CONFIG), directory, progress=False).fit(resume=resume)
    except Terminated:
        sys.exit(128 + signal.SIGTERM)


def _run(
    out: Path,
    fault: str | None = None,
    kill_after: float | int | None = None,
    signum: int = signal.SIGKILL,
) -> int:
    """The child's exit code; ``signum`` sent after ``kill_after`` seconds (SIGKILL) or,
    for SIGTERM, once ``metrics.jsonl`` holds ``kill_after`` rows."""
    child = multiprocessing.get_context("fork").Process(target=_train, args=(str(out), fault))
    child.start()
    if kill_after is not None and signum == signal.SIGTERM:
        while child.is_alive() and _rows(out / METRICS) < kill_after:
            time.sleep(0.002)
        if child.is_alive():
            os.kill(child.pid, signum)  # type: ignore[arg-type]
    elif kill_after is not None:
        child.join(kill_after)
        if child.is_alive():
            os.kill(child.pid, signum)  # type: ignore[arg-type]
    child.join()
    return int(child.exitcode or 0)


def _rows(path: Path) -> int:
    """Complete lines of ``path`` (0 while it does not exist)."""
    try:
        return path.read_bytes().count(b"\n")
    except FileNotFoundError:
        return 0


def _result(out: Path) -> tuple[list[dict], dict, dict]:
    rows = read_jsonl(out / METRICS)[0]
    records = [{k: v for k, v in r.items() if k not in TIMING_KEYS} for r in rows]
    final = {k: v for k, v in json.loads((out / FINAL).read_text()).items() if k not in TIMING_KEYS}
    state = load_checkpoint(out / CHECKPOINT)
    return records, final, state


def test_killed_runs_resume_bit_identically(tmp_path: Path) -> None:
    Trainer(TrainConfig(**CONFIG), None, progress=False)  # imports and data, before forking
    start = time.monotonic()
    assert _run(tmp_path / "straight") == 0
    duration = time.monotonic() - start
    print(f"uninterrupted run: {duration:.2f} s")
    want_records, want_final, want_state = _result(tmp_path / "straight")
    rng = random.Random(17)
    kill, term = signal.SIGKILL, signal.SIGTERM
    plans = [[(f, None, kill)] for f in FAULTS]
    plans.append([("checkpoint.pt:2", None, kill), ("metrics.jsonl:1", None, kill)])  # rewrite
    plans += [[(None, rng.uniform(0.05, duration), kill)] for _ in range(RANDOM_KILLS)]
    plans += [[(None, rows, term)] for rows in TERM_AT_ROWS]
    killed = 0
    for i, plan in enumerate(plans):
        out = tmp_path / f"run{i}"
        for fault, kill_after, signum in plan:
            code = _run(out, fault, kill_after, signum)
            killed += code != 0
            if signum == term:
                assert code == 128 + term, plan  # unwound mid-run, not killed
        assert _run(out) == 0  # resume to the end
        records, final, state = _result(out)
        assert records == want_records, plan
        assert final == want_final, plan
        for key, tensor in want_state["model"].items():
            assert torch.equal(state["model"][key], tensor), (plan, key)
        assert str(state["optimizer"]) == str(want_state["optimizer"]), plan
    assert killed >= len(FAULTS) + 1  # every fault fired
