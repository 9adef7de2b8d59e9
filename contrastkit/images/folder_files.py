"""What the image-folder cache (:mod:`.imagefolder`) and the image stream
(:mod:`.imagestream`) both read: the image files of a folder or ``.tar`` in one order, their
layout (``<class>/*`` or ``{train,test}/<class>/*``), class labels and split, and one
image decoded with Pillow."""

from __future__ import annotations

import io
import tarfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from ..data.reading import reading

EXTENSIONS = (".jpg", ".jpeg", ".png", ".bmp", ".gif", ".tif", ".tiff", ".webp", ".ppm")
TEST_DIRS = ("test", "val")
ARCHIVE = "a .tar/.tar.gz archive of images"


def wanted(rel: str) -> bool:
    """An image file, not hidden (names starting with ``.``, e.g. macOS ``._x.jpg``)."""
    parts = rel.split("/")
    return Path(rel).suffix.lower() in EXTENSIONS and not any(p.startswith(".") for p in parts)


def image_members(root: Path) -> Iterator[tuple[str, tarfile.TarInfo | Path]]:
    """``(relative path, file or tar member)`` of every image, in the order both the cache
    and the stream number them: sorted paths in a folder, archive order in a tar."""
    if root.is_dir():
        for p in sorted(root.rglob("*")):
            rel = p.relative_to(root).as_posix()
            if p.is_file() and wanted(rel):
                yield rel, p
        return
    with reading(root, ARCHIVE), tarfile.open(root, "r:*") as tar:
        for m in tar:
            rel = m.name[2:] if m.name.startswith("./") else m.name
            if m.isfile() and wanted(rel):
                yield rel, m


def shown(root: Path, rel: str, archive: bool) -> str:
    """Image ``rel`` of ``root`` as messages name it: ``archive:member`` or its path."""
    return f"{root}:{rel}" if archive else str(root / rel)


def entries(root: Path) -> Iterator[tuple[str, bytes]]:
    """``(relative path, file bytes)`` of every image file, from a folder or an archive."""
    if root.is_dir():
        for rel, path in image_members(root):
            yield rel, path.read_bytes()  # type: ignore[union-attr]
        return
    # one sequential pass, also through .tar.gz; a truncated archive: one error naming it
    with reading(root, ARCHIVE), tarfile.open(root, "r:*") as tar:
        for m in tar:
            rel = m.name[2:] if m.name.startswith("./") else m.name
            if m.isfile() and wanted(rel):
                fh = tar.extractfile(m)
                if fh is not None:
                    yield rel, fh.read()


def layout(paths: list[str]) -> tuple[int, bool]:
    """How many leading path parts to drop (0, or 1 wrapping folder) and whether the
    tree has train/test folders; ``ValueError`` describing the expected layout otherwise."""
    depths = {len(p.split("/")) for p in paths}
    if len(depths) != 1:
        raise ValueError(f"imagefolder: images at mixed depths {sorted(depths)}; {EXPECTED}")
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
    raise ValueError(f"imagefolder: cannot read the layout of e.g. {paths[0]!r}; {EXPECTED}")


EXPECTED = (
    "expected <class>/<image> or {train,test}/<class>/<image>, optionally inside one "
    "wrapping folder, with image files ending in " + ", ".join(EXTENSIONS)
)


def decode(data: bytes, name: str, size: int | None) -> np.ndarray:
    """uint8 ``[3, H, W]`` of one image file (RGB; with ``size``, the short side resized
    to ``size`` bilinearly and the centre ``size × size`` cropped). A 16-bit grayscale
    image keeps its top 8 bits (Pillow's RGB conversion clips it to 255); 32-bit integer
    and float images, whose range no format fixes, are refused."""
    from PIL import Image

    try:
        img = Image.open(io.BytesIO(data))
        mode = img.mode
        if mode.startswith("I;16"):
            img = Image.fromarray((np.asarray(img, dtype=np.uint16) >> 8).astype(np.uint8))
        if mode not in ("I", "F"):
            img = img.convert("RGB")
    except Exception as exc:  # Pillow raises several types for corrupt files
        raise ValueError(f"imagefolder: cannot decode {name}: {exc}") from None
    if mode in ("I", "F"):
        raise ValueError(
            f"imagefolder: {name} has {mode!r} pixels (32-bit integer or float), whose range "
            "is not defined; save it with 8- or 16-bit channels"
        )
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
        raise FileNotFoundError(f"imagefolder: no image files found; {EXPECTED}")
    drop, has_split = layout(paths)
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
