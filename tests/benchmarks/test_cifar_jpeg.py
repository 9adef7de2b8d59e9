"""``benchmarks/cifar_jpeg.py``: CIFAR-10's python release -> the JPEG image-folder archive
that ``gpu_bench.sh``'s ``train`` and ``run`` sections read. On a tiny release made here,
the archive loads as ``--dataset imagefolder`` with the release's split sizes, labels
(one folder per class name) and, at JPEG quality 95, nearly its pixels; an existing
``--out`` is kept, and a missing release is one line."""

from __future__ import annotations

import pickle
import subprocess
import sys
import tarfile
from pathlib import Path

import numpy as np
import pytest

from contrastkit.data import load_dataset

pytest.importorskip("PIL")
ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "cifar_jpeg.py"


def _release(root: Path) -> tuple[np.ndarray, np.ndarray]:
    """CIFAR-10's python layout: five train batches of 20 images and a test batch of 10;
    smooth images (JPEG keeps them) with labels 0-9 in turn. Returns the test batch."""
    folder = root / "cifar-10-batches-py"
    folder.mkdir(parents=True)
    rng = np.random.default_rng(0)
    ramp = np.linspace(0, 200, 32)[None, None, :] + np.linspace(0, 50, 32)[None, :, None]
    for name, n in [*((f"data_batch_{i}", 20) for i in range(1, 6)), ("test_batch", 10)]:
        offsets = rng.integers(0, 50, (n, 3, 1, 1))
        images = (ramp[None] + offsets).astype(np.uint8)
        batch = {b"data": images.reshape(n, 3072), b"labels": [i % 10 for i in range(n)]}
        (folder / name).write_bytes(pickle.dumps(batch, protocol=2))
    return images, np.arange(10)


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=120
    )


def test_the_archive_loads_as_an_image_folder_with_the_release_s_splits(tmp_path: Path) -> None:
    test_images, test_labels = _release(tmp_path / "raw")
    out = tmp_path / "cifar10-jpeg.tar.gz"
    proc = _run("--data-root", str(tmp_path / "raw"), "--out", str(out), "--quality", "95")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"{out}: 110 JPEGs (quality 95)"
    with tarfile.open(out) as tar:
        names = tar.getnames()
    assert "cifar10/train/airplane/0009.jpg" in names and "cifar10/test/truck/0000.jpg" in names
    data = load_dataset("imagefolder", data_root=str(out), cache_dir=str(tmp_path / "cache"))
    assert (len(data.x_train), len(data.x_test)) == (100, 10)
    assert np.bincount(data.y_train.numpy()).tolist() == [10] * 10
    # image folders number classes by sorted folder name; CIFAR's order is already sorted
    assert data.y_test.tolist() == test_labels.tolist()
    error = np.abs(data.x_test.numpy().astype(int) - test_images.astype(int))
    assert error.mean() < 5.0  # chroma subsampling; a wrong pixel layout gives tens


def test_an_existing_out_is_kept_and_a_missing_release_is_one_line(tmp_path: Path) -> None:
    out = tmp_path / "cifar10-jpeg.tar.gz"
    out.write_bytes(b"kept")
    proc = _run("--data-root", str(tmp_path), "--out", str(out))
    assert proc.returncode == 2 and "--out" in proc.stderr and "--overwrite" in proc.stderr
    assert out.read_bytes() == b"kept"
    proc = _run("--data-root", str(tmp_path / "nowhere"), "--out", str(out), "--overwrite")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith("cifar_jpeg.py: ") and len(proc.stderr.strip().splitlines()) == 1
    assert out.read_bytes() == b"kept" and sorted(p.name for p in tmp_path.iterdir()) == [out.name]
