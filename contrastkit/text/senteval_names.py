"""SentEval's names, declared once: its tasks and the transfer classifiers it can fit.

A light module beside :mod:`contrastkit.text.senteval` (whose package imports
scikit-learn), so that building a command's parser and checking a config name the same
values without loading scikit-learn: :mod:`.senteval.run` and :mod:`.senteval.transfer`
use them, as do ``contrastkit senteval`` and ``contrastkit simcse`` (their flags'
choices) and the text modality's config check (:mod:`.modality`).
"""

from __future__ import annotations

# the seven STS tasks (Spearman of cosine similarities) and the seven transfer tasks
# (a classifier on frozen embeddings), in the order of SentEval's and SimCSE's tables
STS_TASKS: tuple[str, ...] = (
    "STS12",
    "STS13",
    "STS14",
    "STS15",
    "STS16",
    "STSBenchmark",
    "SICKRelatedness",
)
TRANSFER_TASKS: tuple[str, ...] = ("MR", "CR", "SUBJ", "MPQA", "SST2", "TREC", "MRPC")
TASKS: tuple[str, ...] = STS_TASKS + TRANSFER_TASKS

# how the transfer classifiers are fitted (senteval.transfer.Fitting kind): scikit-learn's
# logistic regression (the default), or SentEval's PyTorch one (the one SimCSE's evaluation
# trains)
CLASSIFIERS: tuple[str, ...] = ("sklearn", "pytorch")
KFOLD = 10  # SentEval's cross-validation folds for the transfer tasks (Conneau & Kiela, 2018)
