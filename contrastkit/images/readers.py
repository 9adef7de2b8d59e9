"""Image datasets read from disk in their official formats; nothing is downloaded.

Every loader takes ``data_root`` (the dataset's own folder or the folder holding it, as
torchvision's ``root``), validates what it reads (file set, byte counts, shapes, dtype,
class count) and raises ``FileNotFoundError`` / ``ValueError`` naming the files it
expected; a file that cannot be decoded (truncated, not gzip, a refused pickle global)
raises :class:`~.reading.DataFileError` naming it (:func:`~.reading.reading`). Images are
returned as **uint8** ``[N, C, H, W]`` tensors (kind ``"image"``):
CIFAR-10's 50,000 training images are 150 MB as uint8 and would be 600 MB as float32; the
augmentation (:mod:`contrastkit.images.image_augment`) or the encoder's input layer converts
them. ``mean``/``std`` are the training split's per-channel statistics of ``x / 255``.

* ``cifar10`` / ``cifar100``: ``cifar-10-batches-py/`` (``data_batch_1..5``, ``test_batch``)
  and ``cifar-100-python/`` (``train``, ``test``; fine labels), or their ``.tar.gz``.
  The pickles are read by :class:`RestrictedUnpickler`, which resolves only the numpy
  reconstruction globals these files need; anything else (``os.system``...) is refused.
* ``stl10``: ``stl10_binary/`` with ``{train,test}_X.bin`` / ``{train,test}_y.bin`` (uint8,
  column-major 3×96×96 images, labels 1-10) and ``unlabeled_X.bin`` (100,000 images,
  memory-mapped into ``Split.x_unlabeled`` when present and ``unlabeled=True``).
* ``mnist`` / ``fashion_mnist``: the four idx files ``{train,t10k}-{images-idx3,
  labels-idx1}-ubyte``, gzipped or not, in the root, ``root/<name>/`` or torchvision's
  ``root/MNIST/raw/`` / ``root/FashionMNIST/raw/``.

``num_samples`` keeps a seeded random subset of the training split (seed
:data:`SUBSET_SEED`); the test split is never subsampled.
"""

from __future__ import annotations

import gzip
import io
import pickle
import tarfile
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor

from ..data import Split
from ..data.reading import reading
from ..data.sources import LazyImages, take

SUBSET_SEED = 0
STL_SIDE = 96


# --------------------------------------------------------------- shared helpers
def channel_stats(x: Tensor, chunk: int = 4096) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """Per-channel mean and standard deviation of ``x / 255`` for uint8 ``x [N, C, H, W]``,
    accumulated in float64 over chunks (never a float copy of the whole set)."""
    c = x.shape[1]
    s, s2, n = torch.zeros(c, dtype=torch.float64), torch.zeros(c, dtype=torch.float64), 0
    for part in x.split(chunk):
        v = part.to(torch.float64).div_(255.0).transpose(0, 1).reshape(c, -1)
        s += v.sum(1)
        s2 += (v * v).sum(1)
        n += v.shape[1]
    mean = s / n
    std = (s2 / n - mean * mean).clamp(min=0).sqrt()
    return tuple(mean.tolist()), tuple(std.tolist())


def image_split(
    name: str,
    x_train: np.ndarray | Tensor | LazyImages,
    y_train: np.ndarray | Tensor,
    x_test: np.ndarray | Tensor | LazyImages,
    y_test: np.ndarray | Tensor,
    num_classes: int,
    num_samples: int | None = None,
    x_unlabeled: Tensor | None = None,
    stats_samples: int | None = None,
) -> Split:
    """Validate uint8 ``[N, C, H, W]`` images (tensors, arrays or :class:`LazyImages`) and
    labels in ``[0, num_classes)``, keep a seeded subset of ``num_samples`` training images,
    and build the :class:`Split`. ``mean``/``std`` are over all training images, or over a
    seeded sample of ``stats_samples`` of them."""
    xs = [a if isinstance(a, LazyImages) else torch.as_tensor(a) for a in (x_train, x_test)]
    ys = [torch.as_tensor(np.asarray(a), dtype=torch.int64) for a in (y_train, y_test)]
    for part, x, y in zip(("train", "test"), xs, ys, strict=True):
        if x.dtype != torch.uint8 or len(x.shape) != 4:
            raise ValueError(
                f"{name}: {part} images must be uint8 [N, C, H, W], got {x.dtype} {tuple(x.shape)}"
            )
        if y.shape != (x.shape[0],):
            raise ValueError(f"{name}: {x.shape[0]} {part} images but {tuple(y.shape)} labels")
        if y.numel() and (int(y.min()) < 0 or int(y.max()) >= num_classes):
            raise ValueError(
                f"{name}: {part} labels must lie in [0, {num_classes}), got "
                f"[{int(y.min())}, {int(y.max())}]"
            )
    if xs[0].shape[1:] != xs[1].shape[1:]:
        raise ValueError(
            f"{name}: train images {tuple(xs[0].shape[1:])} and test images "
            f"{tuple(xs[1].shape[1:])} differ in shape"
        )
    found = int(torch.unique(ys[0]).numel())
    if found != num_classes:
        raise ValueError(f"{name}: expected {num_classes} classes in train, found {found}")
    if num_samples is not None:
        n = xs[0].shape[0]
        if not 1 <= num_samples <= n:
            raise ValueError(f"num_samples must be in [1, {n}] for {name}, got {num_samples}")
        keep = torch.randperm(n, generator=torch.Generator().manual_seed(SUBSET_SEED))
        keep = keep[:num_samples].sort().values
        xs[0], ys[0] = take(xs[0], keep), ys[0][keep]
    stats_x = xs[0]
    if stats_samples is not None and stats_samples < len(stats_x):
        gen = torch.Generator().manual_seed(SUBSET_SEED)
        stats_x = stats_x[torch.randperm(len(stats_x), generator=gen)[:stats_samples].sort().values]
    mean, std = channel_stats(stats_x[:] if isinstance(stats_x, LazyImages) else stats_x)
    return Split(name, "image", xs[0], ys[0], xs[1], ys[1], mean, std, x_unlabeled)


def locate(root: str | Path | None, candidates: list[str], what: str) -> Path:
    """The first existing ``root / c`` (``c = ""`` is the root itself); else an error
    naming every path tried."""
    if root is None:
        raise ValueError(f"{what} needs data_root (--data-root PATH); nothing is downloaded")
    base = Path(root).expanduser()
    for c in candidates:
        path = base / c if c else base
        if path.exists():
            return path
    tried = ", ".join(str(base / c) if c else str(base) for c in candidates)
    raise FileNotFoundError(f"{what}: none of these exist: {tried}")


# ------------------------------------------------------------------ CIFAR
class RestrictedUnpickler(pickle.Unpickler):
    """An unpickler that resolves only the globals a numpy array needs.

    Unpickling calls whatever global a file names, so a plain ``pickle.load`` of a
    downloaded file is arbitrary code execution. The CIFAR pickles hold dicts, lists,
    strings, bytes, ints and numpy arrays; arrays are rebuilt through
    ``numpy.core.multiarray._reconstruct``, ``numpy.ndarray``, ``numpy.dtype``, numpy
    scalars through ``numpy.core.multiarray.scalar`` (and
    ``_codecs.encode`` for bytes written by Python 3 at protocol 2). Every other global
    raises ``pickle.UnpicklingError`` naming it.
    """

    ALLOWED = frozenset(
        {
            ("numpy.core.multiarray", "_reconstruct"),
            ("numpy._core.multiarray", "_reconstruct"),
            ("numpy.core.multiarray", "scalar"),
            ("numpy._core.multiarray", "scalar"),
            ("numpy", "ndarray"),
            ("numpy", "dtype"),
            ("_codecs", "encode"),
        }
    )

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) not in self.ALLOWED:
            raise pickle.UnpicklingError(f"refused to load global {module}.{name}")
        if module.endswith("multiarray"):  # numpy 1 and 2 spell the module differently
            from numpy._core import multiarray

            return getattr(multiarray, name)
        return super().find_class(module, name)


def restricted_loads(data: bytes) -> Any:
    """Unpickle ``data`` with :class:`RestrictedUnpickler` (bytes keys of Python-2
    pickles kept as bytes, strings decoded as latin-1)."""
    return RestrictedUnpickler(io.BytesIO(data), encoding="bytes").load()


_CIFAR = {
    "cifar10": (
        "cifar-10-batches-py",
        [f"data_batch_{i}" for i in range(1, 6)],
        ["test_batch"],
        "labels",
        10,
    ),
    "cifar100": ("cifar-100-python", ["train"], ["test"], "fine_labels", 100),
}


def _read_members(path: Path, folder: str, names: list[str]) -> dict[str, bytes]:
    """Raw bytes of ``folder/name`` for each name, from a directory or a .tar(.gz)."""
    out: dict[str, bytes] = {}
    if path.is_dir():
        for n in names:
            f = path / n
            if f.is_file():
                out[n] = f.read_bytes()
    else:
        with reading(path, f"a .tar.gz archive of {folder}/"), tarfile.open(path) as tar:
            for n in names:
                try:
                    member = tar.extractfile(f"{folder}/{n}")
                except KeyError:
                    continue
                if member is not None:
                    out[n] = member.read()
    missing = [n for n in names if n not in out]
    if missing:
        raise FileNotFoundError(
            f"{path} lacks {', '.join(f'{folder}/{m}' for m in missing)} (expected "
            f"{', '.join(f'{folder}/{n}' for n in names)})"
        )
    return out


def load_cifar(name: str, data_root: str | None = None, num_samples: int | None = None) -> Split:
    """CIFAR-10 or CIFAR-100 (fine labels) from the python-pickle release."""
    folder, train_files, test_files, label_key, classes = _CIFAR[name]
    tarball = {"cifar10": "cifar-10-python.tar.gz", "cifar100": "cifar-100-python.tar.gz"}[name]
    path = locate(data_root, [folder, tarball, ""], name)
    if path.is_file() and not tarfile.is_tarfile(path):
        raise ValueError(f"{name}: {path} is neither the {folder}/ folder nor its .tar.gz")
    raw = _read_members(path, folder, train_files + test_files)
    parts = []
    for files in (train_files, test_files):
        xs, ys = [], []
        for f in files:
            source = path / f if path.is_dir() else f"{path}:{folder}/{f}"
            with reading(source, f"a {name} python pickle (a dict of 'data' and {label_key!r})"):
                batch = restricted_loads(raw[f])
            if isinstance(batch, dict):  # Python-2 pickles (the release) have bytes keys
                batch = {k.decode() if isinstance(k, bytes) else k: v for k, v in batch.items()}
            if not isinstance(batch, dict) or "data" not in batch or label_key not in batch:
                raise ValueError(f"{name}: {source} lacks the keys 'data' and {label_key!r}")
            data = np.asarray(batch["data"])
            if data.dtype != np.uint8 or data.ndim != 2 or data.shape[1] != 3072:
                raise ValueError(
                    f"{name}: {source} data must be uint8 [N, 3072], got {data.dtype} {data.shape}"
                )
            xs.append(data.reshape(-1, 3, 32, 32))
            with reading(source, f"{name} labels (integers)"):
                ys.append(np.asarray(batch[label_key], dtype=np.int64))
        parts += [np.concatenate(xs), np.concatenate(ys)]
    return image_split(name, *parts, num_classes=classes, num_samples=num_samples)


def load_cifar10(data_root: str | None = None, num_samples: int | None = None) -> Split:
    """CIFAR-10: 50,000 train / 10,000 test, 3×32×32, 10 classes."""
    return load_cifar("cifar10", data_root, num_samples)


def load_cifar100(data_root: str | None = None, num_samples: int | None = None) -> Split:
    """CIFAR-100: 50,000 train / 10,000 test, 3×32×32, 100 fine classes."""
    return load_cifar("cifar100", data_root, num_samples)


# ------------------------------------------------------------------ STL-10
def _stl_images(path: Path) -> np.ndarray:
    per = 3 * STL_SIDE * STL_SIDE
    size = path.stat().st_size
    if size == 0 or size % per:
        raise ValueError(f"stl10: {path} holds {size} bytes, not a multiple of 3·96·96 = {per}")
    raw = np.memmap(path, dtype=np.uint8, mode="c", shape=(size // per, 3, STL_SIDE, STL_SIDE))
    return raw.transpose(0, 1, 3, 2)  # the files are column-major (Fortran) per image


def load_stl10(
    data_root: str | None = None, num_samples: int | None = None, unlabeled: bool = True
) -> Split:
    """STL-10: 5,000 train / 8,000 test labelled images (3×96×96, 10 classes) and, with
    ``unlabeled``, the 100,000 unlabelled images memory-mapped as ``x_unlabeled``."""
    path = locate(data_root, ["stl10_binary", ""], "stl10")
    names = ["train_X.bin", "train_y.bin", "test_X.bin", "test_y.bin"]
    missing = [n for n in names if not (path / n).is_file()]
    if missing:
        raise FileNotFoundError(
            f"stl10: {path} lacks {', '.join(missing)} (expected stl10_binary/ with "
            f"{', '.join(names)}[, unlabeled_X.bin])"
        )
    parts = []
    for split in ("train", "test"):
        x = np.ascontiguousarray(_stl_images(path / f"{split}_X.bin"))
        y = np.fromfile(path / f"{split}_y.bin", dtype=np.uint8).astype(np.int64) - 1
        parts += [x, y]
    extra = None
    if unlabeled and (path / "unlabeled_X.bin").is_file():
        extra = torch.from_numpy(_stl_images(path / "unlabeled_X.bin"))
    return image_split("stl10", *parts, num_classes=10, num_samples=num_samples, x_unlabeled=extra)


# ------------------------------------------------------------------ MNIST idx
_IDX_FILES = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte",
              "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")  # fmt: skip


def read_idx(path: Path) -> np.ndarray:
    """An idx file (gzipped if its name ends in .gz) as a uint8 array; validates the
    magic number (0x08 = unsigned byte), the dimension count and the byte count."""
    with reading(path, "a gzipped idx file"):
        data = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    if len(data) < 4 or data[0] != 0 or data[1] != 0 or data[2] != 0x08:
        raise ValueError(f"{path} is not an unsigned-byte idx file (bad magic number)")
    ndim = data[3]
    dims = tuple(int.from_bytes(data[4 + 4 * i : 8 + 4 * i], "big") for i in range(ndim))
    body = memoryview(data)[4 + 4 * ndim :]
    if len(body) != int(np.prod(dims)):
        raise ValueError(
            f"{path}: header says {dims} = {int(np.prod(dims))} bytes, found {len(body)}"
        )
    return np.frombuffer(body, dtype=np.uint8).reshape(dims).copy()


def load_idx_dataset(
    name: str, folders: list[str], data_root: str | None, num_samples: int | None
) -> Split:
    """The four idx files of an MNIST-format set, from the first folder that has them."""
    root = locate(data_root, [""], name)
    with_files = [root / f for f in folders if any((root / f).glob(f"{_IDX_FILES[0]}*"))]
    base = with_files[0] if with_files else root
    found: list[Path] = []
    for stem in _IDX_FILES:
        hits = [base / f"{stem}{ext}" for ext in ("", ".gz") if (base / f"{stem}{ext}").is_file()]
        if not hits:
            raise FileNotFoundError(
                f"{name}: {base} (also searched {', '.join(folders[1:])} below it) lacks "
                f"{stem}[.gz] (expected {', '.join(_IDX_FILES)}, "
                "gzipped or not)"
            )
        found.append(hits[0])
    x_tr, y_tr, x_te, y_te = (read_idx(p) for p in found)
    for x, y, p in ((x_tr, y_tr, found[0]), (x_te, y_te, found[2])):
        if x.ndim != 3 or y.ndim != 1 or x.shape[0] != y.shape[0]:
            raise ValueError(f"{name}: {p} holds {x.shape} images for {y.shape} labels")
    return image_split(
        name, x_tr[:, None], y_tr, x_te[:, None], y_te, num_classes=10, num_samples=num_samples
    )


def load_mnist(data_root: str | None = None, num_samples: int | None = None) -> Split:
    """MNIST: 60,000 train / 10,000 test, 1×28×28, 10 classes."""
    return load_idx_dataset("mnist", ["", "mnist", "MNIST/raw"], data_root, num_samples)


def load_fashion_mnist(data_root: str | None = None, num_samples: int | None = None) -> Split:
    """Fashion-MNIST: 60,000 train / 10,000 test, 1×28×28, 10 classes."""
    folders = ["", "fashion-mnist", "fashion_mnist", "FashionMNIST/raw"]
    return load_idx_dataset("fashion_mnist", folders, data_root, num_samples)
