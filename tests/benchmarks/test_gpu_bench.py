"""``benchmarks/gpu_bench.sh`` on the CPU: its ``sweep`` section (Triton against torch and
float64, then a tile configuration) runs in Triton's interpreter on tiny shapes, and its
``losses`` section on the torch backend, so the GPU script cannot rot between GPU runs."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]


def test_gpu_bench_sections_run_on_the_cpu(tmp_path: Path) -> None:
    pytest.importorskip("triton", reason="the sweep needs the gpu extra (triton)")
    env = {
        **os.environ,
        "TRITON_INTERPRET": "1",
        "DEVICE": "cpu",
        "SIZES": "16",
        "DTYPES": "fp32",
        "LOSSES": "ntxent,supcon",
        "REPEATS": "1",
        "TILED": "0",
        "SECTIONS": "sweep losses",
        "OUT": str(tmp_path),
        "PYTHONPATH": str(ROOT),
        "PYTHON": sys.executable,
    }
    sweep_args = "--check-n 12 --sizes 16 --configs 16x16x4x2 --repeats 1 --losses ntxent,macl"
    env["SWEEP_ARGS"] = sweep_args
    done = subprocess.run(
        ["bash", str(ROOT / "benchmarks" / "gpu_bench.sh")],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    sweep = (tmp_path / "gpu_bench_sweep.txt").read_text()
    for name in ("ntxent", "macl"):  # agreement rows: Triton vs torch, fp32 and bf16
        rows = re.findall(rf"^\| {name} \| (fp32|bf16) \| ([0-9.e+-]+) \|", sweep, re.M)
        assert [dtype for dtype, _ in rows] == ["fp32", "bf16"]
        assert all(float(error) < 1e-5 for _, error in rows)
    for operands in ("fp32 ieee", "fp32 tf32x3", "bf16"):  # timed, and checked on float64
        row = rf"^\| {operands} \| 16 \| 16x16x4x2 \| [0-9.]+ \| [0-9.]+ \| [0-9.]+× \| (\S+) \|"
        found = re.search(row, sweep, re.M)
        assert found and float(found.group(1)) < (1e-2 if operands == "bf16" else 1e-5)
    assert (tmp_path / "gpu_bench_losses.json").exists()
    assert "| fp32 | 16 | supcon | torch |" in done.stdout
