"""Image folders streamed through ``DataLoader`` workers instead of decoded into the cache.

An ImageNet-100 training set (≈126,700 images) is ≈19 GB as uint8 at 224 px: too much to
decode into memory or a cache in one go. Streamed, the set is a list of files; each batch's
images are read and decoded with Pillow (the cache's :func:`~.folder_files.decode`: RGB, the
short side resized to ``image_size`` and centre-cropped) in ``DataLoader`` worker processes,
collated into one uint8 ``[B, 3, S, S]`` tensor, and then augmented on the device by the
same batched :class:`~contrastkit.images.ImageAugment` as cached data. The trainer's loop is
unchanged: it asks :func:`~contrastkit.data.sources.iter_batches` for the batches of its
index rows, whatever the source.

* The images are numbered as the cache numbers them (sorted paths of a folder, archive
  order of a ``.tar``), with the same train/test split, so index ``i`` is the same image
  either way.
* A folder or an **uncompressed** ``.tar`` (read per image at the member's offset; every
  worker process opens its own handle). A ``.tar.gz`` cannot be read per image.
* :data:`STREAM_BYTES` (4 GiB) is the size of the decoded set above which ``imagefolder``
  streams by default: Tiny-ImageNet (110,000 × 3 × 64 × 64 ≈ 1.35 GB) is cached,
  ImageNet-100 at 224 px streams. The estimate is ``count × 3 × S²`` with ``S`` the
  ``image_size`` (or the first image's height × width).
* The channel mean / std come from a seeded sample of :data:`STATS_SAMPLES` training
  images (the cached path uses all of them).
* Without ``image_size`` every image must have the first image's size; a different one
  raises ``ValueError`` naming it when its batch is decoded.
"""

from __future__ import annotations

import os
import tarfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import torch
from torch import Tensor
from torch.utils.data import DataLoader, Dataset

from ..data import Split
from ..data.sources import LazyImages, Rows, _as_index
from .folder_files import decode, image_members, labels_and_split, shown
from .readers import image_split

STREAM_BYTES = 4 * 2**30
STATS_SAMPLES = 2048


def streamable(root: Path) -> bool:
    """Whether ``root`` can be read per image: a folder or an uncompressed tar."""
    if root.is_dir():
        return True
    try:
        with tarfile.open(root, "r:"):
            return True
    except tarfile.ReadError:
        return False


def estimated_bytes(root: Path, image_size: int | None) -> int:
    """The uint8 size of the decoded set: image count × 3 × S² (``S = image_size``, else
    the first image's height × width)."""
    members = list(image_members(root))
    if not members:
        return 0
    if image_size is not None:
        return len(members) * 3 * image_size * image_size
    reader = _Reader(root, members[:1])
    return len(members) * decode(reader.read(0), reader.where(0), None).size


class _Reader:
    """Bytes of image ``i``: ``root / name`` in a folder, or ``(offset, size)`` in a tar,
    read through a file handle opened once per process."""

    def __init__(self, root: Path, members: list[tuple[str, Any]]) -> None:
        self.root = root
        self.names = [rel for rel, _ in members]
        self.spans = (
            None
            if root.is_dir()
            else np.array([[m.offset_data, m.size] for _, m in members], dtype=np.int64)
        )
        self._fh: BinaryIO | None = None
        self._pid = -1

    def __getstate__(self) -> dict[str, Any]:  # worker processes open their own handle
        return {**self.__dict__, "_fh": None, "_pid": -1}

    def where(self, i: int) -> str:
        """Image ``i``'s path for messages: in the folder, or ``archive:member``."""
        return shown(self.root, self.names[i], archive=self.spans is not None)

    def read(self, i: int) -> bytes:
        if self.spans is None:
            return (self.root / self.names[i]).read_bytes()
        if self._pid != os.getpid():
            self._fh, self._pid = open(self.root, "rb"), os.getpid()  # noqa: SIM115
        assert self._fh is not None
        offset, size = (int(v) for v in self.spans[i])
        self._fh.seek(offset)
        return self._fh.read(size)


class StreamedImages(LazyImages):
    """The images of an image folder or tar, decoded on demand (see the module docstring).

    ``x[idx]`` decodes in this process; :meth:`batches` decodes in ``workers``
    ``DataLoader`` processes (``pin``: page-locked batches for an asynchronous copy)."""

    def __init__(self, reader: _Reader, image_size: int | None, item: tuple[int, ...]) -> None:
        self.reader, self.image_size = reader, image_size
        self.shape = (len(reader.names), *item)

    def decode_one(self, i: int) -> Tensor:
        name = self.reader.where(i)
        arr = decode(self.reader.read(i), name, self.image_size)
        if arr.shape != self.shape[1:]:
            raise ValueError(
                f"imagefolder: {name} is {arr.shape[1]}x{arr.shape[2]}, the first image "
                f"{self.shape[2]}x{self.shape[3]}; pass image_size to resize all images"
            )
        return torch.tensor(arr)  # a contiguous, writable copy of Pillow's buffer

    def gather(self, idx: Tensor) -> Tensor:
        if not idx.numel():
            return torch.empty((0, *self.shape[1:]), dtype=torch.uint8)
        return torch.stack([self.decode_one(i) for i in idx.tolist()])

    def batches(
        self, rows: Sequence[Rows], workers: int = 0, pin: bool = False
    ) -> Iterator[Tensor]:
        sampler = [_as_index(r, len(self)).tolist() for r in rows]
        loader = DataLoader(
            _Decoded(self),
            batch_sampler=sampler,
            num_workers=workers,
            collate_fn=torch.stack,
            pin_memory=pin,
        )
        return iter(loader)


class _Decoded(Dataset):
    """Image ``i`` of a :class:`StreamedImages` as uint8 ``[3, S, S]`` (a worker's task)."""

    def __init__(self, images: StreamedImages) -> None:
        self.images = images

    def __len__(self) -> int:
        return len(self.images)

    def __getitem__(self, i: int) -> Tensor:
        return self.images.decode_one(i)


def load_streamed(
    root: Path,
    num_samples: int | None,
    image_size: int | None,
    test_fraction: float,
    split_seed: int,
) -> Split:
    """The ``imagefolder`` split of ``root`` with :class:`StreamedImages` train and test
    sets (labels, split and numbering as the cached path)."""
    if not streamable(root):
        raise ValueError(
            f"imagefolder: {root} is a compressed archive, which cannot be read per image; "
            "extract it to a folder or an uncompressed .tar to stream it, or set stream "
            "false to decode it into the cache"
        )
    members = list(image_members(root))
    y, test, classes = labels_and_split([rel for rel, _ in members], test_fraction, split_seed)
    reader = _Reader(root, members)
    first = decode(reader.read(0), reader.where(0), image_size)
    images = StreamedImages(reader, image_size, first.shape)
    train_idx, test_idx = (torch.from_numpy(np.flatnonzero(m)) for m in (~test, test))
    return image_split(
        "imagefolder",
        images.take(train_idx),
        y[~test],
        images.take(test_idx),
        y[test],
        num_classes=len(classes),
        num_samples=num_samples,
        stats_samples=STATS_SAMPLES,
    )
