"""``benchmarks/gpu_smoke.sh`` on the CPU, shortened (2 epochs of 256 samples, its study and
text parts switched off, which it says), on a pair subset without SimCLR + NT-Xent in two
precisions; and the registry derivation of its default pairs (``benchmarks/smoke_pairs.py``).
The study part (CPU minutes) runs with ``STUDY=1``, the default."""

from __future__ import annotations

import importlib.util
import math
import os
import subprocess
import sys
from pathlib import Path

from contrastkit.frameworks import FRAMEWORKS

ROOT = Path(__file__).parents[2]
SCRIPT = ROOT / "benchmarks" / "gpu_smoke.sh"


def _default_pairs() -> list[str]:
    spec = importlib.util.spec_from_file_location("smoke_pairs", SCRIPT.parent / "smoke_pairs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.default_pairs()


def test_default_pairs_cover_every_registered_framework() -> None:
    pairs = [pair.split(":") for pair in _default_pairs()]
    assert {framework for framework, _ in pairs} == set(FRAMEWORKS)
    assert all(loss in FRAMEWORKS[framework].compatible_losses() for framework, loss in pairs)
    names = [f"{framework}:{loss}" for framework, loss in pairs]
    assert len(set(names)) == len(names)
    assert {"moco:macl", "nnclr:ntxent", "nnclr:macl", "simclr:ntxent"} <= set(names)


def test_cpu_smoke_runs_any_pair_subset_in_each_precision(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "DEVICE": "cpu",
        "COMPILE": "--no-compile",
        "TEXT": "0",
        "THREADS": "1",
        "PRECISIONS": "bf16 fp16",
        # no simclr:ntxent; MoCo + MACL and NNCLR crashed in half precision before issue 37
        "PAIRS": "moco:macl nnclr:ntxent",
        "EPOCHS": "2",
        "SAMPLES": "256",
        "BATCH": "64",
        "STUDY": "0",
        "PYTHON": sys.executable,
        "OUT": str(tmp_path / "out"),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    done = subprocess.run(
        ["bash", str(SCRIPT)], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    rows = [line.split() for line in lines if line.startswith(("moco/", "nnclr/"))]
    assert [row[:2] for row in rows] == [
        ["moco/macl", "bf16"], ["nnclr/ntxent", "bf16"],
        ["moco/macl", "fp16"], ["nnclr/ntxent", "fp16"],
    ]  # fmt: skip
    assert all(float(row[2]) > 0 and math.isfinite(float(row[4])) for row in rows)
    assert any(line.startswith("device cpu (None), precisions bf16 fp16,") for line in lines)
    assert "study part: skipped (STUDY=0)" in lines and "text part: skipped (TEXT=0)" in lines
