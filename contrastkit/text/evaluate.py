"""STS evaluation: Spearman correlation of cosine similarity against gold scores.

This is the protocol of SimCSE (Gao et al., 2021) and of the MACL and gradient-paradigm
papers for STS-B (SentEval's "all" setting on one file): embed both sentences of every pair,
take their cosine similarity, and rank-correlate it with the gold scores over all pairs.
It is also what sentence-transformers' ``EmbeddingSimilarityEvaluator`` reports as
``spearman_cosine``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import torch.nn.functional as tf

from .._optional import require
from .data import StsPairs
from .encoder import SentenceEncoder


def spearman(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray) -> float:
    """Spearman's rank correlation of ``x`` and ``y`` (ties get average ranks), in [-1, 1].

    Raises ``ValueError`` when the lengths differ, there are fewer than 2 values, or
    either side is constant (the correlation is undefined).
    """
    a = np.asarray(x, dtype=np.float64).ravel()
    b = np.asarray(y, dtype=np.float64).ravel()
    if a.shape != b.shape:
        raise ValueError(f"x and y must have the same length, got {a.size} and {b.size}")
    if a.size < 2:
        raise ValueError(f"need at least 2 pairs for a correlation, got {a.size}")
    if np.ptp(a) == 0 or np.ptp(b) == 0:
        raise ValueError("Spearman correlation is undefined when all values of one side are equal")
    rho = float(require("scipy.stats", "text", "spearman").spearmanr(a, b).statistic)
    if not math.isfinite(rho):
        raise ValueError("Spearman correlation is undefined for these values")
    return rho


def cosine_scores(encoder: SentenceEncoder, pairs: StsPairs, batch_size: int = 128) -> np.ndarray:
    """``[P]`` cosine similarities of the pairs; each distinct sentence is encoded once."""
    unique = list(dict.fromkeys([*pairs.sentences1, *pairs.sentences2]))
    index = {s: i for i, s in enumerate(unique)}
    emb = tf.normalize(encoder.encode(unique, batch_size=batch_size), dim=-1)
    a = emb[[index[s] for s in pairs.sentences1]]
    b = emb[[index[s] for s in pairs.sentences2]]
    return (a * b).sum(dim=1).double().numpy()


def sts_spearman(
    encoder: SentenceEncoder, pairs: StsPairs, batch_size: int = 128
) -> dict[str, float | int]:
    """``{"spearman": ρ, "pairs": P}``: ρ in [-1, 1] (×100 is the usual STS figure)."""
    rho = spearman(cosine_scores(encoder, pairs, batch_size), pairs.scores)
    return {"spearman": rho, "pairs": len(pairs)}
