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
options, so a changed source is decoded again. Runs started together (a study's
processes) may each decode a missing cache; every file is written whole under a name of
its own and renamed into place, so neither fails and the cache they leave is complete.

Large sets (ImageNet-100) are not decoded into the cache but streamed: each image is read
and decoded with Pillow in ``DataLoader`` worker processes as its batch is drawn
(:mod:`.imagestream`). ``stream=None`` (the default) streams when the decoded uint8 set
would exceed :data:`~contrastkit.data.imagestream.STREAM_BYTES` (4 GiB); ``stream=True`` /
``False`` force either path. Streaming reads a folder or an uncompressed ``.tar`` (a
compressed archive cannot be read per image).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import tarfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import torch

from ..rundir import atomic_file, atomic_write_text
from .images import image_split
from .reading import reading
from .registry import Split, register_dataset

EXTENSIONS = (".jpg", ".jpeg", ".png", ".bmp", ".gif", ".tif", ".tiff", ".webp", ".ppm")
TEST_DIRS = ("test", "val")
ARCHIVE = "a .tar/.tar.gz archive of images"


def default_cache_dir() -> Path:
    """``$CONTRASTKIT_CACHE`` or ``~/.cache/contrastkit``."""
    return Path(os.environ.get("CONTRASTKIT_CACHE", Path.home() / ".cache" / "contrastkit"))


def _wanted(rel: str) -> bool:
    """An image file, not hidden (names starting with ``.``, e.g. macOS ``._x.jpg``)."""
    parts = rel.split("/")
    return Path(rel).suffix.lower() in EXTENSIONS and not any(p.startswith(".") for p in parts)


def _members(root: Path) -> Iterator[tuple[str, tarfile.TarInfo | Path]]:
    """``(relative path, file or tar member)`` of every image, in the order both the cache
    and the stream number them: sorted paths in a folder, archive order in a tar."""
    if root.is_dir():
        for p in sorted(root.rglob("*")):
            rel = p.relative_to(root).as_posix()
            if p.is_file() and _wanted(rel):
                yield rel, p
        return
    with reading(root, ARCHIVE), tarfile.open(root, "r:*") as tar:
        for m in tar:
            rel = m.name[2:] if m.name.startswith("./") else m.name
            if m.isfile() and _wanted(rel):
                yield rel, m


def _entries(root: Path) -> Iterator[tuple[str, bytes]]:
    """``(relative path, file bytes)`` of every image file, from a folder or an archive."""
    if root.is_dir():
        for rel, path in _members(root):
            yield rel, path.read_bytes()  # type: ignore[union-attr]
        return
    # one sequential pass, also through .tar.gz; a truncated archive: one error naming it
    with reading(root, ARCHIVE), tarfile.open(root, "r:*") as tar:
        for m in tar:
            rel = m.name[2:] if m.name.startswith("./") else m.name
            if m.isfile() and _wanted(rel):
                fh = tar.extractfile(m)
                if fh is not None:
                    yield rel, fh.read()


def _layout(paths: list[str]) -> tuple[int, bool]:
    """How many leading path parts to drop (0, or 1 wrapping folder) and whether the
    tree has train/test folders; ``ValueError`` describing the expected layout otherwise."""
    depths = {len(p.split("/")) for p in paths}
    if len(depths) != 1:
        raise ValueError(f"imagefolder: images at mixed depths {sorted(depths)}; {_EXPECTED}")
    depth, parts = depths.pop(), [p.split("/") for p in paths]
    for drop in (0, 1):
        if drop and len({q[0] for q in parts}) != 1:
            break
        splits = {q[drop] for q in parts}
        if depth - drop == 3 and "train" in splits and splits <= {"train", *TEST_DIRS}:
            if splits == {"train"}:
                raise ValueError(f"imagefolder: train/ but no {' or '.join(TEST_DIRS)}/ folder")
            return drop, True
        if depth - drop == 2:
            return drop, False
    raise ValueError(f"imagefolder: cannot read the layout of e.g. {paths[0]!r}; {_EXPECTED}")


_EXPECTED = (
    "expected <class>/<image> or {train,test}/<class>/<image>, optionally inside one "
    "wrapping folder, with image files ending in " + ", ".join(EXTENSIONS)
)


def decode(data: bytes, name: str, size: int | None) -> np.ndarray:
    """uint8 ``[3, H, W]`` of one image file (RGB; with ``size``, the short side resized
    to ``size`` bilinearly and the centre ``size × size`` cropped)."""
    from PIL import Image

    try:
        img = Image.open(io.BytesIO(data)).convert("RGB")
    except Exception as exc:  # Pillow raises several types for corrupt files
        raise ValueError(f"imagefolder: cannot decode {name}: {exc}") from None
    if size is not None:
        w, h = img.size
        scale = size / min(w, h)
        img = img.resize((max(size, round(w * scale)), max(size, round(h * scale))), Image.BILINEAR)
        w, h = img.size
        left, top = (w - size) // 2, (h - size) // 2
        img = img.crop((left, top, left + size, top + size))
    return np.asarray(img, dtype=np.uint8).transpose(2, 0, 1)


def labels_and_split(
    paths: list[str], test_fraction: float, split_seed: int
) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Class labels ``[N]`` (classes sorted by name), the test mask ``[N]`` and the class
    names of the image ``paths`` (train/test folders, or a seeded per-class split)."""
    if not paths:
        raise FileNotFoundError(f"imagefolder: no image files found; {_EXPECTED}")
    drop, has_split = _layout(paths)
    parts = [p.split("/")[drop:] for p in paths]
    classes = sorted({q[-2] for q in parts})
    index = {c: i for i, c in enumerate(classes)}
    y = np.array([index[q[-2]] for q in parts], dtype=np.int64)
    if has_split:
        return y, np.array([q[0] in TEST_DIRS for q in parts]), classes
    rng = np.random.default_rng(split_seed)
    test = np.zeros(len(y), dtype=bool)
    for c in range(len(classes)):
        members = np.flatnonzero(y == c)
        n_test = round(test_fraction * len(members))
        test[rng.permutation(members)[:n_test]] = True
    return y, test, classes


def _decode_all(
    root: Path, image_size: int | None, test_fraction: float, split_seed: int
) -> tuple[dict[str, np.ndarray], list[str]]:
    items = list(_entries(root))
    if not items:
        raise FileNotFoundError(f"imagefolder: no image files under {root}; {_EXPECTED}")
    y, test, classes = labels_and_split([p for p, _ in items], test_fraction, split_seed)
    images, shape = [], None
    for path, data in items:
        arr = decode(data, path, image_size)
        if shape is None:
            shape = arr.shape
        elif arr.shape != shape:
            raise ValueError(
                f"imagefolder: {path} is {arr.shape[1]}x{arr.shape[2]}, the first image "
                f"{shape[1]}x{shape[2]}; pass image_size to resize all images"
            )
        images.append(arr)
    x = np.stack(images)
    arrays = {"x_train": x[~test], "y_train": y[~test], "x_test": x[test], "y_test": y[test]}
    return arrays, classes


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
    cache would decode to more than :data:`~contrastkit.data.imagestream.STREAM_BYTES`)."""
    if data_root is None:
        raise ValueError("imagefolder needs data_root (--data-root PATH to a folder or .tar[.gz])")
    root = Path(data_root).expanduser().resolve()
    if not root.exists():
        raise FileNotFoundError(f"imagefolder: {root} does not exist; {_EXPECTED}")
    if root.is_file() and not tarfile.is_tarfile(root):
        raise ValueError(f"imagefolder: {root} is a file but not a .tar/.tar.gz archive")
    if not 0.0 < test_fraction < 1.0:
        raise ValueError(f"test_fraction must be in (0, 1), got {test_fraction}")
    if image_size is not None and image_size < 1:
        raise ValueError(f"image_size must be >= 1, got {image_size}")
    stat = root.stat()
    key = json.dumps(
        [str(root), stat.st_size, stat.st_mtime_ns, image_size, test_fraction, split_seed]
    )
    folder = Path(cache_dir).expanduser() if cache_dir else default_cache_dir()
    folder = folder / f"imagefolder-{hashlib.sha256(key.encode()).hexdigest()[:16]}"
    if root == folder or root in folder.parents:
        raise ValueError(f"cache_dir {folder} lies inside the data {root}; choose another")
    meta_path = folder / "meta.json"
    from .imagestream import STREAM_BYTES, estimated_bytes, load_streamed, streamable  # (cycle)

    if stream is None and not meta_path.is_file() and streamable(root):
        stream = estimated_bytes(root, image_size) > STREAM_BYTES
    if stream:
        return load_streamed(root, num_samples, image_size, test_fraction, split_seed)
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


register_dataset("imagefolder", load_imagefolder, "image", description="folder/tar of images")
