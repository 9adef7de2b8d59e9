"""SentEval-compatible evaluation of sentence embeddings (``contrastkit senteval``).

Seven STS tasks (Spearman × 100 of cosine similarities, no training) and seven transfer
tasks (logistic regression on frozen embeddings), read from SentEval's own
``data/downstream`` folder layout; see :mod:`.readers`, :mod:`.sts`, :mod:`.transfer`.

Example on frozen features (any ``embed(task, sentences) -> [N, d]`` function):
    >>> from pathlib import Path
    >>> from contrastkit.text.senteval import Layout, run_senteval
    >>> res = run_senteval(Layout(Path("downstream")), embed, tasks=("STS12",))  # doctest: +SKIP
"""

from .embed import CachedEmbedder, encoder_embedder, resolve_model
from .run import (
    STS_TASKS,
    TASKS,
    TRANSFER_TASKS,
    Layout,
    SentEvalResult,
    markdown_table,
    run_senteval,
)

__all__ = [
    "STS_TASKS",
    "TASKS",
    "TRANSFER_TASKS",
    "CachedEmbedder",
    "Layout",
    "SentEvalResult",
    "encoder_embedder",
    "markdown_table",
    "resolve_model",
    "run_senteval",
]
