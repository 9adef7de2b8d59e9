"""``contrastkit train`` under ``torchrun --nproc-per-node 2`` (gloo, CPU)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch


def torchrun(tmp_path: Path, name: str, *args: str) -> Path:
    out = tmp_path / name
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2"]
    cmd += ["-m", "contrastkit.cli", "train", "--dataset", "digits", "--epochs", "1"]
    cmd += ["--batch-size", "64", "--out", str(out), "--no-progress", *args]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return out


@pytest.mark.parametrize(
    "framework,loss", [("simclr", "macl"), ("moco", "infonce"), ("barlow_twins", "barlow_twins")]
)
def test_two_processes_train_and_rank_zero_writes(
    tmp_path: Path, framework: str, loss: str
) -> None:
    out = torchrun(tmp_path, "run", "--framework", framework, "--loss", loss)
    final = json.loads((out / "final.json").read_text())
    assert final["world_size"] == 2 and 0.0 <= final["knn_accuracy"] <= 1.0
    record = json.loads((out / "metrics.jsonl").read_text().splitlines()[0])
    assert record["epoch"] == 1 and torch.isfinite(torch.tensor(record["loss"]))
    state = torch.load(out / "checkpoint.pt", weights_only=True)
    if framework == "moco":  # the shared queue holds every rank's keys: the full batch
        assert int(state["model"]["queue_ptr"]) == (1797 * 4 // 5 // 64 * 64) % 4096
