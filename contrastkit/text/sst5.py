"""LASCon's text task on SST-5: supervised contrastive fine-tuning, then a prediction head.

LASCon (Kim et al., 2023) fine-tunes BERT on IMDB ratings (§4.1, App. D.2) with SimCLR
(NT-Xent on two EDA views, Eq. 1), SupCon on labels binarised at a threshold (Eq. 2; IMDB
threshold 7) and LASCon with the label similarity of Eq. (5) (linear or tanh, steepness
``c``; "out" and "in" versions, §3.4.4), then trains a prediction module on the
representations and reports MAE and correlation. IMDB is not available here; SST-5's
fine-grained labels (0 very negative … 4 very positive) are an ordinal label set of the
same kind.

One run (:func:`run_sst5`):

1. reads SentEval's ``SST/fine/sentiment-{train,dev,test}`` (:func:`load_sst5`);
2. fine-tunes the encoder on a seeded subset of ``train`` (``train_size`` sentences) in
   the sentence loop :func:`~contrastkit.text.simcse.train_simcse` (the same
   :class:`~contrastkit.engine.Engine` loop as SimCSE), the two views being two EDA
   augmentations (:mod:`contrastkit.text.eda`; dropout stays on as in any fine-tuning) in
   SimCLR's 2N layout; a "labeled" loss (ask the registry) gets the labels: the float
   labels 0–4 for LASCon (Eq. 5 normalises them by the batch's largest |y|, so the linear
   similarity with ``c = 1`` lies in [0.5, 1]), ``1[y >= threshold]`` when
   ``binarize_threshold`` is set (SupCon);
3. encodes a seeded subset of ``train`` (``head_train_size`` sentences, drawn from the
   seed alone, so every method of a seed uses the same sentences) and the whole ``test``
   split with the fine-tuned encoder in evaluation mode, L2-normalised (the hypersphere the
   loss shapes, LASCon App. D.1), and trains two heads on the frozen train features
   (:func:`~contrastkit.evaluation.downstream.prediction_head`: an MLP, 20 % of the
   head-training sentences held out for early stopping, the test split never seen): a
   regression head with the L1 loss (as LASCon App. D.2) → MAE, Pearson, Spearman of its
   predictions; and a 5-way classification head with cross-entropy → accuracy.

The dev split is not used (no model selection: the last step's encoder is evaluated).
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from .. import losses
from ..data.regression import binarize
from ..evaluation.downstream import prediction_head
from ..rundir import atomic_write_text
from .eda import DEFAULT_ALPHA, EDAAugment
from .encoder import SentenceEncoder
from .senteval.readers import Labelled, MissingTaskFilesError, read_sst_fine
from .simcse import SimCSEConfig, loss_hyperparameters, train_simcse

SST5_FILES = ("sentiment-train", "sentiment-dev", "sentiment-test")
# SST's positive classes are 3 and 4 (SST-2 keeps exactly those as "positive"), mirroring
# LASCon's IMDB rule "rating >= 7 is positive" (Table 1); neutral 2 joins the negatives.
SUPCON_THRESHOLD = 3


@dataclass
class SST5Config:
    """What the SST-5 task adds to :class:`~contrastkit.text.simcse.SimCSEConfig`.

    ``train_size``: sentences of ``train`` used for contrastive fine-tuning (``None``: all
    8,544); ``head_train_size``: sentences of ``train`` the heads are trained on (``None``:
    all); ``augment``/``alpha``: EDA operation and strength (α = 0.1, EDA's default);
    ``binarize_threshold``: labels the loss sees are ``1[y >= t]`` (SupCon);
    ``zero_shot``: no fine-tuning, the heads on the encoder as loaded.
    """

    data: str
    train_size: int | None = None
    head_train_size: int | None = 2000
    augment: str = "swap"
    alpha: float = DEFAULT_ALPHA
    binarize_threshold: float | None = None
    zero_shot: bool = False
    eval_batch_size: int = 64

    def __post_init__(self) -> None:
        for name in ("train_size", "head_train_size"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or value < 10):
                raise ValueError(f"{name} must be an integer >= 10 or None, got {value!r}")


def load_sst5(folder: str | Path) -> dict[str, Labelled]:
    """The three SST-5 splits; a wrong folder is one error line naming the files expected."""
    root = Path(folder)
    try:
        return read_sst_fine(root)
    except MissingTaskFilesError as exc:
        missing = [f.name for f in exc.files if not f.is_file()]
        raise FileNotFoundError(
            f"--data {str(root)!r}: SST-5 expects {', '.join(SST5_FILES)} (SentEval's "
            f"SST/fine folder, 'LABEL sentence' lines); missing: {', '.join(missing)}"
        ) from None


def seeded_subset(n: int, size: int | None, seed: int) -> list[int]:
    """``size`` distinct indices of ``range(n)`` drawn with ``seed`` (all, in order, if
    ``size`` is ``None`` or ≥ ``n``)."""
    if size is None or size >= n:
        return list(range(n))
    gen = torch.Generator().manual_seed(seed)
    return sorted(torch.randperm(n, generator=gen)[:size].tolist())


def loss_labels(loss_name: str, y: torch.Tensor, threshold: float | None) -> torch.Tensor | None:
    """What the loss is given: ``None`` for an unlabelled loss (SimCLR), ``1[y >= t]`` with
    a threshold, else the float labels. The registry says which losses take labels."""
    labeled = losses.info(loss_name).inputs == "labeled"
    if threshold is not None:
        if not labeled:
            raise ValueError(
                f"--binarize-threshold needs a labelled loss (supcon, lascon), got {loss_name!r}"
            )
        y_bin = binarize(y.double(), float(threshold))
        if y_bin.min() == y_bin.max():
            raise ValueError(f"--binarize-threshold {threshold} puts every sentence in one class")
        return y_bin
    return y.double() if labeled else None


def head_metrics(
    encoder: SentenceEncoder,
    train: Labelled,
    test: Labelled,
    seed: int,
    batch_size: int = 64,
) -> dict[str, float]:
    """Accuracy (5 classes), MAE, Pearson and Spearman on ``test`` of heads trained on the
    frozen, L2-normalised embeddings of ``train`` (module docstring, step 3)."""
    f_tr = nn.functional.normalize(encoder.encode(train.x, batch_size), dim=1)
    f_te = nn.functional.normalize(encoder.encode(test.x, batch_size), dim=1)
    y_tr, y_te = torch.tensor(train.y), torch.tensor(test.y)
    reg = prediction_head(f_tr, y_tr.float(), f_te, y_te.float(), "regression", seed=seed)
    cls = prediction_head(f_tr, y_tr, f_te, y_te, "classification", seed=seed)
    return {
        "accuracy": cls["head_accuracy"],
        "mae": reg["head_mae"],
        "pearson": reg["head_pearson"],
        "spearman": reg["head_spearman"],
    }


def _take(split: Labelled, idx: list[int]) -> Labelled:
    return Labelled([split.x[i] for i in idx], [split.y[i] for i in idx])


def run_sst5(
    encoder: SentenceEncoder,
    loss: nn.Module | None,
    loss_name: str,
    cfg: SimCSEConfig,
    task: SST5Config,
    out_dir: str | Path | None = None,
    progress: bool = True,
) -> dict[str, Any]:
    """Fine-tune (unless ``task.zero_shot``) and evaluate; writes ``out_dir/sst5.json``."""
    data = load_sst5(task.data)
    start = time.perf_counter()
    train = _take(data["train"], seeded_subset(len(data["train"]), task.train_size, cfg.seed))
    history = None
    if not task.zero_shot:
        if loss is None:
            raise ValueError("a loss is needed unless zero_shot is set")
        labels = loss_labels(loss_name, torch.tensor(train.y), task.binarize_threshold)
        history = train_simcse(
            encoder,
            loss,
            train.x,
            None,
            cfg,
            out_dir=out_dir,
            progress=progress,
            labels=labels,
            augment=EDAAugment(task.augment, task.alpha),
            layout="simclr",
        )
    train_seconds = time.perf_counter() - start
    # the head's training subset depends on the seed only, so runs of a seed are paired
    head_idx = seeded_subset(len(data["train"]), task.head_train_size, 10_000 + cfg.seed)
    metrics = head_metrics(
        encoder, _take(data["train"], head_idx), data["test"], cfg.seed, task.eval_batch_size
    )
    result: dict[str, Any] = {
        "task": "sst5",
        "loss": None if task.zero_shot else loss_name,
        "loss_args": {} if loss is None else loss_hyperparameters(loss),
        "config": asdict(cfg),
        "sst5": asdict(task),
        "train_sentences": 0 if task.zero_shot else len(train.x),
        "head_train_sentences": len(head_idx),
        "test_sentences": len(data["test"]),
        "steps": 0 if history is None else history.steps,
        "train_seconds": train_seconds,
        "seconds": time.perf_counter() - start,
        "final_train_loss": None if history is None else history.train_loss[-1],
        "test": metrics,
    }
    if out_dir is not None:
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        atomic_write_text(out / "sst5.json", json.dumps(result, indent=2) + "\n")
    return result
