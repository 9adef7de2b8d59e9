"""benchmarks/gpu_bench.sh in its tiny CPU mode (torch backend only): it runs end to end
and records every case (the GPU numbers of issue #38 come from the same script on a GPU)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_tiny_cpu_mode_measures_every_case(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "DEVICE": "cpu",
        "SIZES": "16",
        "DTYPES": "fp32",
        "LOSSES": "ntxent,infonce_queue,supcon,cacr",
        "REPEATS": "1",
        "TILED": "32",
        "OUT": str(tmp_path),
        "PYTHON": sys.executable,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
        "OMP_NUM_THREADS": "1",
    }
    proc = subprocess.run(
        ["bash", str(ROOT / "benchmarks" / "gpu_bench.sh")],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "| fp32 | 16 | floor | torch | " in proc.stdout
    records = json.loads((tmp_path / "gpu_bench_losses.json").read_text())["records"]
    cases = [(r.get("case") or r["tiled"], r.get("backend")) for r in records]
    assert cases == [
        ("floor", "torch"),
        ("plain_ntxent", "torch"),
        ("ntxent", "torch"),
        ("infonce_queue", "torch"),
        ("supcon", "torch"),
        ("cacr", "torch"),
        ("tiled", None),
        ("dense", None),
    ]
    assert all(r["result"]["ms"] > 0 for r in records)


def test_unknown_section_is_refused() -> None:
    env = {**os.environ, "DEVICE": "cpu", "SECTIONS": "train_step", "PYTHON": sys.executable}
    proc = subprocess.run(
        ["bash", str(ROOT / "benchmarks" / "gpu_bench.sh")], capture_output=True, text=True, env=env
    )
    assert proc.returncode == 2
    assert "unknown section 'train_step' (known: losses)" in proc.stderr
