"""Sentence datasets for the shared training loop: SST-5 with its 0–4 labels as regression
targets (LASCon's text task) and unlabelled sentences for SimCSE.

A sentence set is a :class:`Sentences` sequence, which the loop indexes like a tensor of
samples: ``len(x)``, ``x[idx]`` for a tensor of row indices and ``x[a:b]`` give lists of
``str``; augmentations and the sentence encoder take those lists. ``Split.input_shape``
does not apply (the encoder is a pretrained transformer, not built from a shape).

``sst5`` reads SentEval's ``SST/fine`` folder (``data_root``: ``sentiment-{train,dev,test}``,
``LABEL sentence`` lines, label 0 very negative … 4 very positive). LASCon (an anonymous
ICLR 2023 submission, §4.1, App. D.2) fine-tunes on IMDB ratings; IMDB is not available
here and SST-5's ordinal labels are of the same kind, so they are continuous targets here
(the downstream head's MAE is the metric; SupCon sees ``1[y >= 3]`` with
``binarize_threshold``).
``num_samples`` keeps a seeded subset of the training split (seed :data:`SUBSET_SEED`, the
same for every run, so the runs of a study are paired). The dev
split is read (the reader checks the folder whole) but not used: nothing is selected on it.

``sentences`` reads one sentence per line from the file ``data_root`` (SimCSE's Wikipedia
sample); its labels are zeros and its test split is empty: the ``simcse`` framework's runs
are scored on STS pairs (:mod:`contrastkit.text.simcse_trainer`).

>>> x = Sentences(["a b", "c", "d e f"])
>>> x[1:], x[torch.tensor([2, 0])]
(['c', 'd e f'], ['d e f', 'a b'])
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import torch

from ..data import Split

SUBSET_SEED = 0
SST5_FILES = ("sentiment-train", "sentiment-dev", "sentiment-test")


class Sentences(Sequence[str]):
    """An immutable list of sentences indexed by slices, ints or integer tensors."""

    def __init__(self, sentences: Sequence[str]) -> None:
        self._items = tuple(sentences)

    def __len__(self) -> int:
        return len(self._items)

    def __getitem__(  # type: ignore[override]
        self, rows: int | slice | torch.Tensor | Sequence[int]
    ) -> str | list[str]:
        """One sentence for an ``int``; a list of them for a slice or row indices."""
        if isinstance(rows, int):
            return self._items[rows]
        if isinstance(rows, slice):
            return list(self._items[rows])
        idx = torch.as_tensor(rows, dtype=torch.int64).reshape(-1).tolist()
        return [self._items[i] for i in idx]

    def __repr__(self) -> str:
        return f"Sentences({len(self)} sentences)"


def subset(n: int, num_samples: int | None, name: str) -> torch.Tensor:
    """Sorted rows of the seeded subset of ``num_samples`` of ``n`` (all rows for ``None``)."""
    if num_samples is None:
        return torch.arange(n)
    if not 2 <= num_samples <= n:
        raise ValueError(f"num_samples must be in [2, {n}] for {name}, got {num_samples}")
    gen = torch.Generator().manual_seed(SUBSET_SEED)
    return torch.randperm(n, generator=gen)[:num_samples].sort().values


def load_sst5(num_samples: int | None = None, data_root: str | None = None) -> Split:
    """SST-5 train and test as sentences with float labels 0–4 (module docstring)."""
    from .senteval.readers import MissingTaskFilesError, read_sst_fine

    if data_root is None:
        raise ValueError(
            "sst5 is read from a path: set data_root to SentEval's SST/fine folder "
            f"(files {', '.join(SST5_FILES)})"
        )
    root = Path(data_root)
    try:
        splits = read_sst_fine(root)
    except MissingTaskFilesError as exc:
        missing = ", ".join(f.name for f in exc.files if not f.is_file())
        raise FileNotFoundError(
            f"data_root {str(root)!r}: sst5 expects SentEval's SST/fine files "
            f"{', '.join(SST5_FILES)} ('LABEL sentence' lines); missing: {missing}"
        ) from None
    train, test = splits["train"], splits["test"]
    keep = subset(len(train.x), num_samples, "sst5")
    return Split(
        "sst5",
        "text",
        Sentences([train.x[i] for i in keep.tolist()]),
        torch.tensor(train.y, dtype=torch.float32)[keep],
        Sentences(test.x),
        torch.tensor(test.y, dtype=torch.float32),
    )


def load_sentences(num_samples: int | None = None, data_root: str | None = None) -> Split:
    """Unlabelled sentences, one per line of the file ``data_root`` (SimCSE's Wikipedia
    sample); labels are zeros and the test split is empty: the ``simcse`` framework's
    runs are evaluated on STS pairs (``sts_dev``)."""
    from .data import read_sentences

    if data_root is None:
        raise ValueError(
            "sentences is read from a path: set data_root to a file of one sentence per line"
        )
    lines = read_sentences(data_root)
    keep = subset(len(lines), num_samples, "sentences")
    return Split(
        "sentences",
        "text",
        Sentences([lines[i] for i in keep.tolist()]),
        torch.zeros(len(keep)),
        Sentences([]),
        torch.zeros(0),
    )
