"""``benchmarks/gpu_bench.sh`` on the CPU, so the GPU script cannot rot between GPU runs:
its ``losses`` section in the tiny CPU mode (torch backend only) runs end to end and
records every case, its ``sweep`` section (Triton against torch and float64, then tile
configurations) runs in Triton's interpreter on tiny shapes, its ``train`` section times
a tiny image archive made here, its ``views`` section counts and times the views of a
tiny batch, its ``optim`` section times the optimisers' steps, its ``run`` section trains
and evaluates one whole run, its ``kernels`` section runs the Triton kernels' tests, its
``casts`` section counts a ResNet step's kernels with and without bf16 autocast, and an
unknown section is refused. The GPU numbers of
issue #38 come from the same script on a GPU."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tarfile
from pathlib import Path

import numpy as np
import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]


def _gpu_bench(timeout: float | None = 600, **settings: str) -> subprocess.CompletedProcess:
    """``benchmarks/gpu_bench.sh`` on the CPU with ``settings`` as its environment."""
    env = {
        **os.environ,
        "DEVICE": "cpu",
        "PYTHON": sys.executable,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
        "OMP_NUM_THREADS": "1",
        **settings,
    }
    script = ["bash", str(ROOT / "benchmarks" / "gpu_bench.sh")]
    return subprocess.run(script, capture_output=True, text=True, env=env, timeout=timeout)


def test_tiny_cpu_mode_measures_every_case(tmp_path: Path) -> None:
    proc = _gpu_bench(
        timeout=120,
        SECTIONS="losses",
        SIZES="16",
        DTYPES="fp32",
        LOSSES="ntxent,infonce_queue,supcon,cacr,cmc",
        REPEATS="1",
        TILED="32",
        OUT=str(tmp_path),
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
        ("cmc", "torch"),
        ("tiled", None),
        ("dense", None),
    ]
    assert all(r["result"]["ms"] > 0 for r in records)


def test_compiled_backend_times_the_plain_version_and_the_losses_through_torch_compile(
    tmp_path: Path,
) -> None:
    """``BACKENDS=torch,compiled``: each case eager and compiled (inductor on the CPU;
    ``reduce-overhead`` on CUDA), the plain NT-Xent included; the floor stays eager."""
    proc = _gpu_bench(
        timeout=300,
        SECTIONS="losses",
        SIZES="16",
        DTYPES="fp32",
        LOSSES="ntxent,supcon",
        BACKENDS="torch,compiled",
        REPEATS="1",
        TILED="0",
        OUT=str(tmp_path),
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "compile mode default" in proc.stdout
    records = json.loads((tmp_path / "gpu_bench_losses.json").read_text())["records"]
    assert [(r["case"], r["backend"]) for r in records] == [
        ("floor", "torch"),
        ("plain_ntxent", "torch"),
        ("plain_ntxent", "compiled"),
        ("ntxent", "torch"),
        ("ntxent", "compiled"),
        ("supcon", "torch"),
        ("supcon", "compiled"),
    ]
    assert all(r["result"]["ms"] > 0 for r in records)


def test_unknown_section_is_refused() -> None:
    proc = _gpu_bench(timeout=None, SECTIONS="train_step")
    assert proc.returncode == 2
    known = "(known: losses, sweep, train, views, optim, run, kernels, casts)"
    assert f"unknown section 'train_step' {known}" in proc.stderr


def test_kernels_section_runs_the_kernel_tests_and_goes_on_after_a_failure(
    tmp_path: Path,
) -> None:
    """The Triton kernels' tests on the device (here the interpreter): their summary in
    ``gpu_bench_kernels.txt``, then random cases through both backends, one row per fused
    loss; a failing test is reported and the next section still runs."""
    done = _gpu_bench(
        SECTIONS="kernels",
        OUT=str(tmp_path),
        KERNEL_TESTS="tests/losses/test_triton_bf16.py",
        FUZZ_CASES="6",
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert re.search(r"\d+ passed", (tmp_path / "gpu_bench_kernels.txt").read_text())
    fuzz = (tmp_path / "gpu_bench_fuzz.txt").read_text()
    rows = re.findall(r"^\| (\w+) \| (\d+) \| (\d+) \|", fuzz, flags=re.M)
    assert {name for name, _, _ in rows} >= {"ntxent", "cmc", "supcon"}
    assert sum(int(cases) for _, cases, _ in rows) == 6 and all(b == "0" for *_, b in rows)
    failing = tmp_path / "failing"
    failed = _gpu_bench(
        SECTIONS="kernels optim", OUT=str(failing), KERNEL_TESTS="tests/no_such_test.py",
        FUZZ_CASES="1", OPTIM_ARGS="--width 2 --steps 1 --rounds 1",
    )  # fmt: skip
    assert failed.returncode == 0, failed.stderr[-2000:]
    assert "gpu_bench.sh: kernel tests failed" in failed.stderr
    assert (failing / "gpu_bench_optim.txt").is_file()


def test_casts_section_counts_autocasts_extra_kernels(tmp_path: Path) -> None:
    """A float32 ResNet-18 step casts nothing; under bf16 autocast each of its 20
    convolutions' weights is cast in forward and its gradient back in backward."""
    done = _gpu_bench(SECTIONS="casts", OUT=str(tmp_path), CAST_ARGS="--width 2 --size 8")
    assert done.returncode == 0, done.stderr[-2000:]
    text = (tmp_path / "gpu_bench_casts.txt").read_text()
    pattern = r"^\| (fp32|bf16 autocast) \| \d+ \((\d+)\) \| \d+ \((\d+)\)"
    rows = {name: (int(f), int(b)) for name, f, b in re.findall(pattern, text, re.M)}
    assert rows["fp32"] == (0, 0)
    assert min(rows["bf16 autocast"]) >= 20


def test_optim_section_times_each_optimiser_against_foreach_sgd(tmp_path: Path) -> None:
    done = _gpu_bench(
        SECTIONS="optim", OUT=str(tmp_path), OPTIM_ARGS="--width 2 --steps 2 --rounds 1"
    )
    assert done.returncode == 0, done.stderr[-2000:]
    table = (tmp_path / "gpu_bench_optim.txt").read_text()
    rows = dict(
        (name, (int(ops), kernels, float(ms), float(ratio)))
        for name, ops, kernels, ms, ratio in re.findall(
            r"\| ([^|]+?) \| (\d+) \| (\d+|n/a) \| ([\d.]+) \| ([\d.]+) \|", table
        )
    )
    assert list(rows) == ["foreach SGD (baseline)", "sgd", "lars", "lars+skip", "adam", "adamw"]
    assert rows["foreach SGD (baseline)"][3] == 1.0 and all(r[2] > 0 for r in rows.values())
    assert rows["lars"][0] < 40  # multi-tensor: not a dozen operators per tensor
    if not torch.cuda.is_available():  # the CUDA kernels: counted on a GPU only
        assert all(r[1] == "n/a" for r in rows.values())


def test_views_section_counts_kernels_and_blocking_copies(tmp_path: Path) -> None:
    done = _gpu_bench(SECTIONS="views", OUT=str(tmp_path),
                      VIEW_ARGS="--batch 4 --repeats 1 --modes eager")  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    table = (tmp_path / "gpu_bench_views.txt").read_text()
    rows = re.findall(
        r"^\| (simclr|byol) \| (\d+) \| eager \| (\d+) \| (\d+) \| ([0-9.]+) \| ([0-9.]+) \|$",
        table, re.M,
    )  # fmt: skip
    assert [(r[0], r[1]) for r in rows] == [("simclr", "32"), ("byol", "64")]
    assert all(int(kernels) > 0 and copies == "0" for _, _, kernels, copies, _, _ in rows)


def test_views_section_times_the_compiled_views(tmp_path: Path) -> None:
    """The compiled row counts the kernels Inductor generated for the whole pass: far
    fewer than eager mode launches (on the CPU here; a GPU's Triton kernels fuse alike)."""
    args = "--batch 4 --repeats 1 --recipes simclr:16"
    done = _gpu_bench(SECTIONS="views", OUT=str(tmp_path), VIEW_ARGS=args)
    assert done.returncode == 0, done.stderr[-2000:]
    table = (tmp_path / "gpu_bench_views.txt").read_text()
    kernels = dict(re.findall(r"^\| simclr \| 16 \| (eager|compiled) \| (\d+) \|", table, re.M))
    assert 0 < int(kernels["compiled"]) < int(kernels["eager"]) / 3, table


def _tiny_archive(tmp_path: Path) -> Path:
    """An image-folder archive of 2 classes × 8 JPEGs of 8×8 px per split."""
    image = pytest.importorskip("PIL.Image", reason="the archive sections need the images extra")
    rng = np.random.default_rng(0)
    src = tmp_path / "src"
    for split in ("train", "test"):
        for cls in ("a", "b"):
            (src / split / cls).mkdir(parents=True)
            for i in range(8):
                pixels = rng.integers(0, 256, (8, 8, 3), dtype=np.uint8)
                image.fromarray(pixels).save(src / split / cls / f"{i}.jpg")
    archive = tmp_path / "tiny.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(src, arcname="tiny")
    return archive


def test_run_section_trains_and_evaluates_a_whole_run(tmp_path: Path) -> None:
    """The ``run`` section: one ``contrastkit train`` run on the archive, evaluation
    included (here fp32, not compiled, a tiny model: the GPU's settings are overridden by
    ``RUN_ARGS``, as a user would)."""
    archive = _tiny_archive(tmp_path)
    args = ("--device cpu --width 4 --batch-size 8 --epochs 1 --epoch-steps 1 "
            "--linear-epochs 1 --precision fp32 --no-compile --compile-mode default")  # fmt: skip
    out, scratch = tmp_path / "out", tmp_path / "scratch"
    done = _gpu_bench(
        SECTIONS="run", CIFAR=str(archive), OUT=str(out), SCRATCH=str(scratch), RUN_ARGS=args
    )
    assert done.returncode == 0, done.stderr[-2000:]
    final = json.loads((out / "gpu_bench_run_final.json").read_text())
    assert final["epochs"] == 1 and 0 <= final["knn_accuracy"] <= 1
    assert (out / "gpu_bench_run.txt").read_text().strip()
    # the cache and the checkpoints stay out of OUT, which a remote runner copies back
    assert {p.name for p in out.iterdir()} == {
        "gpu_bench_run.txt", "gpu_bench_run_final.json", "gpu_bench_run_metrics.jsonl"
    }  # fmt: skip
    assert (scratch / "run" / "final.json").is_file() and any((scratch / "cache").iterdir())


def test_train_section_times_every_variant_and_each_phase(tmp_path: Path) -> None:
    archive = _tiny_archive(tmp_path)
    args = "--width 4 --batch-size 8 --epochs 1 --epoch-steps 1 --breakdown 2 --threads 1"
    done = _gpu_bench(
        SECTIONS="train", CIFAR=str(archive), OUT=str(tmp_path / "out"), TRAIN_ARGS=args
    )
    assert done.returncode == 0, done.stderr[-2000:]
    table = (tmp_path / "out" / "gpu_bench_train.txt").read_text()
    for variant in ("hand loop", "fp32", "bf16", "bf16+nchw", "bf16+compile"):
        assert re.search(rf"^{re.escape(variant)} +[0-9.]+ ", table, re.M), variant
    row = r"^(fp32|bf16\S*) +((?:[0-9.]+ \( *[0-9.]+%\) *){5}) +([0-9.]+)$"
    from_idle, back_to_back = table.split("steps back to back")  # the two breakdowns
    for part in (from_idle, back_to_back):
        phases = re.findall(row, part, re.M)
        assert [name for name, _, _ in phases] == ["fp32", "bf16", "bf16+nchw", "bf16+compile"]
        for _, cells, step in phases:  # the five phases add up to the step
            spans = [float(v) for v in re.findall(r"([0-9.]+) \(", cells)]
            assert len(spans) == 5 and abs(sum(spans) - float(step)) < 0.02 * float(step) + 0.02
    hosts = re.findall(r"^(fp32|bf16\S*) +host((?: +[0-9.]+){5}) +([0-9.]+)$", table, re.M)
    assert [name for name, _, _ in hosts] == ["fp32", "bf16", "bf16+nchw", "bf16+compile"]


@pytest.mark.parametrize("section", ["train", "run"])
def test_a_section_without_the_archive_is_one_clear_error(section: str, tmp_path: Path) -> None:
    done = _gpu_bench(timeout=None, SECTIONS=section, CIFAR=str(tmp_path / "none.tar.gz"))
    assert done.returncode == 2
    assert f"{section} needs the CIFAR-10 JPEG archive" in done.stderr


def test_sweep_runs_in_the_triton_interpreter(tmp_path: Path) -> None:
    pytest.importorskip("triton", reason="the sweep needs the gpu extra (triton)")
    done = _gpu_bench(
        TRITON_INTERPRET="1",
        SECTIONS="sweep",
        OUT=str(tmp_path),
        SWEEP_ARGS="--check-n 12 --sizes 16 --configs 16x16x4x2 --repeats 1 --losses ntxent,macl",
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
