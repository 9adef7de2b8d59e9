"""Image sets that are not one in-memory tensor, and the one way the trainer reads batches.

The training loop (:class:`contrastkit.training.Trainer`) reads a dataset as a sequence of
index batches: :func:`iter_batches` ``(x, rows)`` yields ``x[r]`` for each ``r`` of
``rows`` (a ``LongTensor`` of indices or a ``slice``), in order. For a tensor (or a
graph container) that is plain indexing, done when the batch is asked for. For a
:class:`LazyImages` it is the set's own :meth:`LazyImages.batches`, so the data source
changes and the loop does not:

* :class:`ConcatImages`: several uint8 ``[N_k, C, H, W]`` tensors read as one, e.g. STL-10's
  5,000 labelled training images followed by its 100,000 unlabelled ones, which stay
  memory-mapped (100,000 × 3 × 96 × 96 uint8 ≈ 2.8 GB): each batch gathers its rows from
  the parts, so only the pages of the rows drawn are read and nothing is copied whole;
* :class:`~contrastkit.images.imagestream.StreamedImages`: an image folder or ``.tar``
  decoded per image with Pillow in ``DataLoader`` worker processes.

Every batch is uint8 ``[B, C, H, W]`` on the CPU; the trainer moves it to the device and
augments it there, whatever the source.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import torch
from torch import Tensor

Rows = Tensor | slice


class LazyImages:
    """A read-only uint8 image set ``[N, C, H, W]`` whose rows are produced on demand.

    Subclasses implement :meth:`gather` (rows → uint8 tensor); ``x[idx]`` and ``x[a:b]``
    return uint8 tensors, :meth:`take` a lazy subset, :meth:`batches` the batches of a
    list of index rows (in order)."""

    shape: tuple[int, ...]
    dtype = torch.uint8

    def __len__(self) -> int:
        return self.shape[0]

    def gather(self, idx: Tensor) -> Tensor:
        """uint8 ``[len(idx), C, H, W]`` of rows ``idx`` (int64, in ``[0, len)``)."""
        raise NotImplementedError

    def __getitem__(self, rows: Rows) -> Tensor:
        return self.gather(_as_index(rows, len(self)))

    def take(self, idx: Tensor) -> LazyImages:
        """The lazy subset of rows ``idx`` (in that order)."""
        return Subset(self, _as_index(idx, len(self)))

    def batches(
        self, rows: Sequence[Rows], workers: int = 0, pin: bool = False
    ) -> Iterator[Tensor]:
        """``self[r]`` for each ``r`` of ``rows``, in order. ``workers`` and ``pin`` are for
        sources that decode in ``DataLoader`` workers; gathering from memory ignores them."""
        return (self[r] for r in rows)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(shape={self.shape})"


class Subset(LazyImages):
    """Rows ``idx`` of another :class:`LazyImages`, still lazy."""

    def __init__(self, base: LazyImages, idx: Tensor) -> None:
        self.base, self.idx = base, idx
        self.shape = (int(idx.numel()), *base.shape[1:])

    def gather(self, idx: Tensor) -> Tensor:
        return self.base.gather(self.idx[idx])

    def batches(
        self, rows: Sequence[Rows], workers: int = 0, pin: bool = False
    ) -> Iterator[Tensor]:
        mapped = [self.idx[_as_index(r, len(self))] for r in rows]
        return self.base.batches(mapped, workers, pin)


class ConcatImages(LazyImages):
    """uint8 tensors ``parts`` (same ``[C, H, W]``; memory-mapped ones stay so) read as
    one set: row ``i`` of the whole is row ``i - offset_k`` of part ``k``."""

    def __init__(self, parts: Iterable[Tensor]) -> None:
        self.parts = [p for p in parts if p.shape[0]]
        if not self.parts:
            raise ValueError("ConcatImages needs at least one non-empty part")
        item = {tuple(p.shape[1:]) for p in self.parts}
        if len(item) != 1 or any(p.dtype != torch.uint8 or p.dim() != 4 for p in self.parts):
            got = [(str(p.dtype), tuple(p.shape)) for p in self.parts]
            raise ValueError(
                f"ConcatImages parts must be uint8 [N, C, H, W] of one size, got {got}"
            )
        sizes = torch.tensor([p.shape[0] for p in self.parts])
        self.ends = sizes.cumsum(0)
        self.shape = (int(self.ends[-1]), *item.pop())

    def gather(self, idx: Tensor) -> Tensor:
        out = torch.empty((idx.numel(), *self.shape[1:]), dtype=torch.uint8)
        part = torch.bucketize(idx, self.ends, right=True)  # which part each row is in
        for k in part.unique().tolist():
            mask = part == k
            start = int(self.ends[k - 1]) if k else 0
            out[mask] = self.parts[k][idx[mask] - start]  # only these rows are read
        return out


def _as_index(rows: Rows, n: int) -> Tensor:
    if isinstance(rows, slice):
        return torch.arange(n)[rows]
    idx = torch.as_tensor(rows, dtype=torch.int64).reshape(-1)
    if idx.numel() and (int(idx.min()) < -n or int(idx.max()) >= n):
        raise IndexError(f"row index out of range for {n} images")
    return idx % n if idx.numel() else idx


def iter_batches(
    x: Any, rows: Sequence[Rows], workers: int = 0, pin: bool = False, keep: slice | None = None
) -> Iterator[Any]:
    """``x[r]`` for each ``r`` of ``rows``, in order: a :class:`LazyImages` set produces
    them itself (:meth:`LazyImages.batches`: gathered from memory maps or decoded in
    ``workers`` processes), anything else (tensors, graph containers) is indexed as the
    batch is asked for.

    ``keep`` (a slice of every row; tensor rows only): a :class:`LazyImages` set reads and
    decodes only those positions and fills the others with zero images. Under ``torchrun``
    each rank keeps its slice of the global batch after augmentation, and every image
    augmentation acts per sample, so a rank decodes its share instead of the whole batch
    and the zeros reach no model."""
    if not isinstance(x, LazyImages):
        return (x[r] for r in rows)
    if keep is None:
        return x.batches(rows, workers, pin)
    parts = x.batches([r[keep] for r in rows], workers, pin)
    return (_zero_filled(part, len(r), keep, pin) for r, part in zip(rows, parts, strict=True))


def _zero_filled(part: Tensor, n: int, keep: slice, pin: bool) -> Tensor:
    full = torch.zeros((n, *part.shape[1:]), dtype=part.dtype, pin_memory=pin)
    full[keep] = part
    return full


def take(x: Any, idx: Tensor) -> Any:
    """Rows ``idx`` of ``x``: a lazy subset of a :class:`LazyImages`, else ``x[idx]``."""
    return x.take(idx) if isinstance(x, LazyImages) else x[idx]


def pretraining_set(
    split: Any, unlabeled: bool | None = None, labelled_only: Sequence[str] = ()
) -> tuple[Any, Tensor]:
    """The images a loss pre-trains on and their labels.

    ``split.x_train`` / ``y_train``, followed, when ``split.x_unlabeled`` exists and
    ``unlabeled`` is not ``False``, by the unlabelled images (label −1) as a
    :class:`ConcatImages` that gathers each batch from their memory map. ``None`` uses them
    when present: STL-10 self-supervised training reads its ``train+unlabeled`` split
    (Wang & Isola 2020's STL-10 code, whose setting CACR App. B.1 follows; AMCL App. A
    describes the unlabelled set as STL-10's pre-training data). ``unlabeled=True`` on a
    dataset without unlabelled images, or unlabelled images with any of ``labelled_only``
    (uses that need a label for every image, named in the error), raise ``ValueError``.
    """
    extra = split.x_unlabeled if unlabeled is not False else None
    if unlabeled and extra is None:
        raise ValueError(
            f"unlabeled: {split.name} has no unlabelled images (stl10 has); leave it unset"
        )
    if extra is None:
        return split.x_train, split.y_train
    if labelled_only:
        raise ValueError(
            f"{split.name}'s unlabelled pre-training images have no labels for "
            f"{', '.join(labelled_only)}; set unlabeled false (--no-unlabeled)"
        )
    x = ConcatImages([split.x_train.cpu(), extra])
    y = torch.cat([split.y_train.cpu(), torch.full((len(extra),), -1, dtype=torch.int64)])
    return x, y
