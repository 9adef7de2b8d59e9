"""Crash trials: ``contrastkit train`` killed with SIGKILL (or sent SIGTERM, which it
unwinds from) at random instants or inside a random file write, resumed with ``--resume``
until it finishes, compared with an uninterrupted run (metrics records, final.json and the
checkpoint's weights and optimiser state, timing fields aside).

Each trial stops the run once or twice: with ``--signal`` at a random instant in
``[0, T]`` (``T`` the uninterrupted run's wall time, imports included) or inside the K-th
write of ``checkpoint.pt`` / ``metrics.jsonl`` / ``final.json`` (``CONTRASTKIT_FAULT_WRITE``).

Usage: ``python benchmarks/crash.py [--trials 20] [--seed 0] [--signal KILL|TERM]
[--work DIR]``; prints one line per trial and a summary, exits 1 if any resumed run
differs.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

from contrastkit.checkpoint_file import load_checkpoint
from contrastkit.rundir import FAULT_ENV, read_jsonl
from contrastkit.training import TIMING_KEYS  # measurements of the machine, not of the run

TRAIN = ["--dataset=digits", "--epochs=3", "--batch-size=256", "--feature-dim=8", "--width=2"]
TRAIN += ["--proj-dim=8", "--knn-k=20", "--loss=macl", "--no-progress", "--threads=1"]
FILES = {"checkpoint.pt": 3, "metrics.jsonl": 3, "final.json": 1}  # writes per run


def train(out: Path, resume: bool, fault: str | None = None, kill_after: float | None = None,
          signum: int = signal.SIGKILL) -> int:  # fmt: skip
    """One ``contrastkit train`` process, sent ``signum`` after ``kill_after`` seconds; its
    exit code (-9 when killed, 143 when it unwound from SIGTERM)."""
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    env.pop(FAULT_ENV, None)
    if fault:
        env[FAULT_ENV] = fault
    cmd = [sys.executable, "-m", "contrastkit.cli", "train", *TRAIN, "--out", str(out)]
    proc = subprocess.Popen(cmd + (["--resume"] if resume else []), env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        return proc.wait(timeout=kill_after)
    except subprocess.TimeoutExpired:
        proc.send_signal(signum)
        return proc.wait()


def result(out: Path) -> tuple[list[dict], dict, dict]:
    records = [
        {k: v for k, v in r.items() if k not in TIMING_KEYS}
        for r in read_jsonl(out / "metrics.jsonl")[0]
    ]
    final = json.loads((out / "final.json").read_text())
    state = load_checkpoint(out / "checkpoint.pt")
    return records, {k: v for k, v in final.items() if k not in TIMING_KEYS}, state


def same(a: tuple[list[dict], dict, dict], b: tuple[list[dict], dict, dict]) -> bool:
    weights = a[2]["model"].keys() == b[2]["model"].keys() and all(
        torch.equal(a[2]["model"][k], b[2]["model"][k]) for k in a[2]["model"]
    )
    return (
        a[0] == b[0]
        and a[1] == b[1]
        and weights
        and str(a[2]["optimizer"]) == str(b[2]["optimizer"])
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--signal", choices=("KILL", "TERM"), default="KILL",
                        help="what stops a run at a random instant")  # fmt: skip
    parser.add_argument("--work", help="scratch directory (default: a temporary one)")
    args = parser.parse_args(argv)
    signum = signal.Signals[f"SIG{args.signal}"]
    work = Path(args.work or tempfile.mkdtemp(prefix="contrastkit-crash-"))
    shutil.rmtree(work / "straight", ignore_errors=True)
    start = time.monotonic()
    assert train(work / "straight", resume=False) == 0, "the uninterrupted run failed"
    duration = time.monotonic() - start
    reference = result(work / "straight")
    rng = random.Random(args.seed)
    kills = identical = 0
    for trial in range(args.trials):
        out = work / f"trial{trial}"
        shutil.rmtree(out, ignore_errors=True)
        events = []
        for _ in range(rng.choice((1, 2))):
            if rng.random() < 0.5:
                name = rng.choice(sorted(FILES))
                fault, kill_after = f"{name}:{rng.randint(1, FILES[name])}", None
            else:
                fault, kill_after = None, rng.uniform(0.0, duration)
            code = train(out, out.exists(), fault, kill_after, signum)
            kills += code != 0
            events.append(f"{fault or f'{signum.name}@{kill_after:.2f}s'}->{code}")
        runs = 0
        while train(out, out.exists()) != 0 and runs < 3:  # resume to the end
            runs += 1
        ok = (out / "final.json").exists() and same(result(out), reference)
        identical += ok
        print(f"trial {trial}: {', '.join(events)}; resumed: {'identical' if ok else 'DIFFERS'}",
              flush=True)  # fmt: skip
    print(f"{args.trials} trials, {kills} processes stopped, {identical} identical to the "
          f"uninterrupted run (T = {duration:.1f} s)")  # fmt: skip
    return 0 if identical == args.trials else 1


if __name__ == "__main__":
    sys.exit(main())
