"""``imagefolder``: ``root/<class>/*.{jpg,png,...}`` trees, or a .tar/.tar.gz of one.

Layouts accepted (inside a folder or an archive, optionally under ONE wrapping folder,
as in ``cifar10-jpeg.tar.gz`` whose members are ``cifar10/train/<class>/*.jpg``):

* ``train/<class>/*`` and ``test/<class>/*``: the given split (``val/`` is read as test);
* ``<class>/*``: split per class with seed ``split_seed`` (0), ``test_fraction`` (0.2) of
  each class going to test.

Images are decoded once with Pillow (converted to RGB, or resized to ``image_size``²
by resizing the short side and centre-cropping when given; otherwise all images must
share one size) and cached as uint8 ``.npy`` files under ``cache_dir``
(``$CONTRASTKIT_CACHE`` or ``~/.cache/contrastkit``), never beside the data, which may be
read-only. Later loads memory-map the cache: no decoding, and pages load on demand. The
cache key hashes the source path, its size and modification time, and the decoding
options, so a changed source is decoded again (in a folder: every image's path, size and
modification time). Runs started together (a study's processes) may each decode a missing
cache; every file is written whole under a name of its own and renamed into place, so
neither fails and the cache they leave is complete.

Large sets (ImageNet-100) are not decoded into the cache but streamed: each image is read
and decoded with Pillow in ``DataLoader`` worker processes as its batch is drawn
(:mod:`.imagestream`). ``stream=None`` (the default) streams when the decoded uint8 set
would exceed :data:`~contrastkit.images.imagestream.STREAM_BYTES` (4 GiB); ``stream=True`` /
``False`` force either path. Streaming reads a folder or an uncompressed ``.tar`` (a
compressed archive cannot be read per image).
"""

from __future__ import annotations

import hashlib
import json
import os
import tarfile
from pathlib import Path

import numpy as np
import torch

from ..data import Split
from ..rundir import atomic_file, atomic_write_text
from . import imagestream
from .folder_files import EXPECTED, decode, entries, image_members, labels_and_split, shown
from .readers import image_split

CACHE_ENV, CACHE_HOME = "CONTRASTKIT_CACHE", "~/.cache/contrastkit"
CACHE_HELP = f"default ${CACHE_ENV}, else {CACHE_HOME}"


def default_cache_dir() -> Path:
    """``$CONTRASTKIT_CACHE``, else ``~/.cache/contrastkit`` (:data:`CACHE_HELP`)."""
    return Path(os.environ.get(CACHE_ENV) or Path(CACHE_HOME).expanduser())


def _decode_all(
    root: Path, image_size: int | None, test_fraction: float, split_seed: int
) -> tuple[dict[str, np.ndarray], list[str]]:
    items = list(entries(root))
    if not items:
        raise FileNotFoundError(f"imagefolder: no image files under {root}; {EXPECTED}")
    y, test, classes = labels_and_split([p for p, _ in items], test_fraction, split_seed)
    images, shape = [], None
    archive = root.is_file()
    for path, data in items:
        where = shown(root, path, archive)  # errors name the archive
        arr = decode(data, where, image_size)
        if shape is None:
            shape = arr.shape
        elif arr.shape != shape:
            raise ValueError(
                f"imagefolder: {where} is {arr.shape[1]}x{arr.shape[2]}, the first image "
                f"{shape[1]}x{shape[2]}; pass image_size to resize all images"
            )
        images.append(arr)
    x = np.stack(images)
    arrays = {"x_train": x[~test], "y_train": y[~test], "x_test": x[test], "y_test": y[test]}
    return arrays, classes


def _stamp(root: Path) -> str | list[int]:
    """What the cache key reads of the source: an archive's size and modification time; a
    folder's every image (relative path, size, modification time), hashed, since adding
    or editing a file inside a class folder leaves the root's own entry unchanged."""
    if not root.is_dir():
        stat = root.stat()
        return [stat.st_size, stat.st_mtime_ns]
    digest = hashlib.sha256()
    for rel, path in image_members(root):
        stat = path.stat()
        digest.update(f"{rel}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()


def load_imagefolder(
    data_root: str | None = None,
    num_samples: int | None = None,
    cache_dir: str | None = None,
    image_size: int | None = None,
    test_fraction: float = 0.2,
    split_seed: int = 0,
    stream: bool | None = None,
) -> Split:
    """An image-folder tree or archive at ``data_root``, decoded once into the cache, or
    streamed (``stream``; ``None``: when a folder or uncompressed ``.tar`` without a
    cache would decode to more than :data:`~contrastkit.images.imagestream.STREAM_BYTES`)."""
    if data_root is None:
        raise ValueError("imagefolder needs data_root (--data-root PATH to a folder or .tar[.gz])")
    root = Path(data_root).expanduser().resolve()
    if not root.exists():
        raise FileNotFoundError(f"imagefolder: {root} does not exist; {EXPECTED}")
    if root.is_file() and not tarfile.is_tarfile(root):
        raise ValueError(f"imagefolder: {root} is a file but not a .tar/.tar.gz archive")
    if not 0.0 < test_fraction < 1.0:
        raise ValueError(f"test_fraction must be in (0, 1), got {test_fraction}")
    if image_size is not None and image_size < 1:
        raise ValueError(f"image_size must be >= 1, got {image_size}")
    key = json.dumps([str(root), _stamp(root), image_size, test_fraction, split_seed])
    folder = (Path(cache_dir).expanduser() if cache_dir else default_cache_dir()).resolve()
    folder = folder / f"imagefolder-{hashlib.sha256(key.encode()).hexdigest()[:16]}"
    if root == folder or root in folder.parents:
        raise ValueError(f"cache_dir {folder} lies inside the data {root}; choose another")
    meta_path = folder / "meta.json"
    if stream is None and not meta_path.is_file() and imagestream.streamable(root):
        stream = imagestream.estimated_bytes(root, image_size) > imagestream.STREAM_BYTES
    if stream:
        return imagestream.load_streamed(root, num_samples, image_size, test_fraction, split_seed)
    if not meta_path.is_file():
        arrays, classes = _decode_all(root, image_size, test_fraction, split_seed)
        folder.mkdir(parents=True, exist_ok=True)
        for name, arr in arrays.items():  # two runs may decode at once: each file is atomic
            with atomic_file(folder / f"{name}.npy") as fh:
                np.save(fh, arr)
        meta = {"source": str(root), "classes": classes, "key": key}
        # written last: its presence marks a complete cache
        atomic_write_text(meta_path, json.dumps(meta, indent=1))
    classes = json.loads(meta_path.read_text())["classes"]
    loaded = {
        n: torch.from_numpy(np.load(folder / f"{n}.npy", mmap_mode="c"))
        for n in ("x_train", "y_train", "x_test", "y_test")
    }
    return image_split(
        "imagefolder",
        loaded["x_train"],
        loaded["y_train"],
        loaded["x_test"],
        loaded["y_test"],
        num_classes=len(classes),
        num_samples=num_samples,
    )
