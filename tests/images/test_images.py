"""Image loaders on tiny fixtures written by the tests in each official format."""

from __future__ import annotations

import gzip
import os
import pickle
import tarfile
from pathlib import Path

import numpy as np
import pytest
import torch

from contrastkit.data import load_dataset
from contrastkit.images.readers import RestrictedUnpickler, channel_stats, restricted_loads


def _cifar_batch(n: int, seed: int, classes: int, key: str) -> dict:
    rng = np.random.default_rng(seed)
    labels = [i % classes for i in range(n)]
    return {"data": rng.integers(0, 256, (n, 3072), dtype=np.uint8), key: labels}


def _write_cifar10(root: Path) -> Path:
    folder = root / "cifar-10-batches-py"
    folder.mkdir(parents=True)
    for i in range(1, 6):
        batch = _cifar_batch(20, i, 10, "labels")
        (folder / f"data_batch_{i}").write_bytes(pickle.dumps(batch, protocol=2))
    (folder / "test_batch").write_bytes(pickle.dumps(_cifar_batch(10, 9, 10, "labels")))
    return folder


def test_cifar10_folder_parent_and_tarball_agree(tmp_path: Path) -> None:
    folder = _write_cifar10(tmp_path / "raw")
    a = load_dataset("cifar10", data_root=str(folder))
    b = load_dataset("cifar10", data_root=str(tmp_path / "raw"))  # the parent, as torchvision
    tar_path = tmp_path / "cifar-10-python.tar.gz"
    with tarfile.open(tar_path, "w:gz") as tar:
        tar.add(folder, arcname="cifar-10-batches-py")
    c = load_dataset("cifar10", data_root=str(tar_path))
    only_tar = tmp_path / "only_tar"
    only_tar.mkdir()
    tar_path.rename(only_tar / tar_path.name)  # the parent of the official tarball
    d = load_dataset("cifar10", data_root=str(only_tar))
    assert torch.equal(d.x_train, c.x_train)
    assert a.x_train.shape == (100, 3, 32, 32) and a.x_train.dtype == torch.uint8
    assert a.kind == "image" and a.num_classes == 10 and a.x_test.shape[0] == 10
    # pickle row = R plane, G plane, B plane (CHW order)
    raw = pickle.loads((folder / "data_batch_1").read_bytes())["data"][3]
    assert torch.equal(a.x_train[3].flatten(), torch.from_numpy(raw))
    for other in (b, c):
        assert torch.equal(a.x_train, other.x_train) and torch.equal(a.y_test, other.y_test)
    sub = load_dataset("cifar10", 30, str(folder))
    assert sub.x_train.shape[0] == 30 and torch.equal(sub.x_test, a.x_test)


def test_cifar100_fine_labels(tmp_path: Path) -> None:
    folder = tmp_path / "cifar-100-python"
    folder.mkdir()
    (folder / "train").write_bytes(pickle.dumps(_cifar_batch(200, 0, 100, "fine_labels")))
    (folder / "test").write_bytes(pickle.dumps(_cifar_batch(50, 1, 100, "fine_labels")))
    d = load_dataset("cifar100", data_root=str(tmp_path))
    assert d.num_classes == 100 and d.x_train.shape == (200, 3, 32, 32)


def test_cifar_missing_file_is_named(tmp_path: Path) -> None:
    folder = _write_cifar10(tmp_path)
    (folder / "data_batch_3").unlink()
    with pytest.raises(FileNotFoundError, match="cifar-10-batches-py/data_batch_3"):
        load_dataset("cifar10", data_root=str(folder))


class _Evil:
    def __reduce__(self) -> tuple:
        return (os.system, ("echo pwned",))


def test_restricted_unpickler_refuses_code_and_reads_arrays() -> None:
    with pytest.raises(pickle.UnpicklingError, match=r"refused to load global .*system"):
        restricted_loads(pickle.dumps({"data": _Evil()}))
    arr = np.arange(12, dtype=np.uint8).reshape(3, 4)
    for proto in (2, 4):
        out = restricted_loads(pickle.dumps({"a": arr, "l": [1, 2]}, protocol=proto))
        assert np.array_equal(out["a"], arr) and out["l"] == [1, 2]
    assert ("builtins", "eval") not in RestrictedUnpickler.ALLOWED


def test_stl10_binary_column_major_and_unlabeled(tmp_path: Path) -> None:
    folder = tmp_path / "stl10_binary"
    folder.mkdir()
    rng = np.random.default_rng(0)
    imgs = {s: rng.integers(0, 256, (n, 3, 96, 96), dtype=np.uint8) for s, n in
            (("train", 20), ("test", 10), ("unlabeled", 7))}  # fmt: skip
    for split, x in imgs.items():
        # the release stores each channel column-major: write the transpose
        x.transpose(0, 1, 3, 2).tofile(folder / f"{split}_X.bin")
    (np.arange(20) % 10 + 1).astype(np.uint8).tofile(folder / "train_y.bin")
    (np.arange(10) % 10 + 1).astype(np.uint8).tofile(folder / "test_y.bin")
    d = load_dataset("stl10", data_root=str(tmp_path))
    assert torch.equal(d.x_train, torch.from_numpy(imgs["train"]))
    assert d.y_train.tolist() == [i % 10 for i in range(20)]
    assert d.x_unlabeled is not None and torch.equal(
        d.x_unlabeled, torch.from_numpy(imgs["unlabeled"])
    )
    (folder / "test_y.bin").unlink()
    with pytest.raises(FileNotFoundError, match=r"test_y\.bin"):
        load_dataset("stl10", data_root=str(tmp_path))


def _idx(arr: np.ndarray) -> bytes:
    header = bytes([0, 0, 8, arr.ndim]) + b"".join(d.to_bytes(4, "big") for d in arr.shape)
    return header + arr.tobytes()


@pytest.mark.parametrize("gz", [True, False])
def test_mnist_idx_files(tmp_path: Path, gz: bool) -> None:
    folder = tmp_path / "FashionMNIST" / "raw"
    folder.mkdir(parents=True)
    rng = np.random.default_rng(1)
    x_tr = rng.integers(0, 256, (30, 28, 28), dtype=np.uint8)
    files = {
        "train-images-idx3-ubyte": x_tr,
        "train-labels-idx1-ubyte": (np.arange(30) % 10).astype(np.uint8),
        "t10k-images-idx3-ubyte": rng.integers(0, 256, (10, 28, 28), dtype=np.uint8),
        "t10k-labels-idx1-ubyte": (np.arange(10) % 10).astype(np.uint8),
    }
    for name, arr in files.items():
        data = _idx(arr)
        (folder / (name + ".gz" if gz else name)).write_bytes(gzip.compress(data) if gz else data)
    d = load_dataset("fashion_mnist", data_root=str(tmp_path))
    assert d.x_train.shape == (30, 1, 28, 28) and torch.equal(
        d.x_train[:, 0], torch.from_numpy(x_tr)
    )
    bad = folder / ("t10k-labels-idx1-ubyte" + (".gz" if gz else ""))
    data = _idx(np.zeros(9, dtype=np.uint8))  # 9 labels for 10 images
    bad.write_bytes(gzip.compress(data) if gz else data)
    with pytest.raises(ValueError, match="images for"):
        load_dataset("fashion_mnist", data_root=str(tmp_path))


def test_channel_stats_match_float64() -> None:
    x = torch.randint(0, 256, (50, 3, 4, 4), dtype=torch.uint8)
    mean, std = channel_stats(x, chunk=7)
    ref = x.double().div(255).transpose(0, 1).reshape(3, -1)
    assert np.allclose(mean, ref.mean(1)) and np.allclose(std, ref.std(1, unbiased=False))
