"""STS evaluation of frozen embeddings, as SentEval computes it and SimCSE reports it.

For each pair the system score is the cosine similarity of the two sentence embeddings;
each subset gets Spearman's (and Pearson's) correlation with the gold scores. For a
year of STS12–16 three aggregates are reported:

* ``all``   — one correlation over the concatenation of every subset's pairs, which
  SimCSE's copy of SentEval adds (``SentEval/senteval/sts.py`` in princeton-nlp/SimCSE) and
  its table prints for STS12–16 (``results[task]["all"]["spearman"]["all"]``);
* ``wmean`` — the mean of the subsets' correlations weighted by their pair counts, and
* ``mean``  — their plain mean, the two that facebookresearch/SentEval computes.

STS-B and SICK-R are single sets (SimCSE evaluates their test split without training).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np
from scipy.stats import pearsonr, spearmanr

from .readers import Pairs

Embed = Callable[[list[str]], np.ndarray]


def cosine_rows(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Row-wise cosine similarity of ``u, v [P, d]`` in float64 (zero rows give 0)."""
    u = np.asarray(u, dtype=np.float64)
    v = np.asarray(v, dtype=np.float64)
    norms = np.linalg.norm(u, axis=1) * np.linalg.norm(v, axis=1)
    return (u * v).sum(axis=1) / np.maximum(norms, 1e-12)


def pair_scores(pairs_list: list[Pairs], embed: Embed) -> list[np.ndarray]:
    """Cosine scores of every pair set; all distinct sentences are embedded in one call."""
    unique = list(dict.fromkeys(s for p in pairs_list for s in (*p.a, *p.b)))
    emb = embed(unique)
    index = {s: i for i, s in enumerate(unique)}
    return [
        cosine_rows(emb[[index[s] for s in p.a]], emb[[index[s] for s in p.b]]) for p in pairs_list
    ]


def correlations(scores: np.ndarray, gold: list[float] | np.ndarray) -> dict[str, float]:
    """``{"spearman", "pearson"}`` × 100 of system ``scores`` against ``gold``.

    Constant system scores (a collapsed encoder) carry no ranking: both are reported as
    0 rather than scipy's undefined NaN (SentEval would print ``nan``).
    """
    gold = np.asarray(gold, dtype=np.float64)
    if scores.size < 2 or np.ptp(gold) == 0:
        raise ValueError(f"a correlation needs >= 2 pairs with varying gold, got {scores.size}")
    if np.ptp(scores) == 0:
        return {"spearman": 0.0, "pearson": 0.0}
    return {
        "spearman": 100.0 * float(spearmanr(scores, gold).statistic),
        "pearson": 100.0 * float(pearsonr(scores, gold).statistic),
    }


def evaluate_sts_year(subsets: Mapping[str, Pairs], embed: Embed) -> dict[str, object]:
    """Per-subset correlations plus ``all``, ``wmean`` and ``mean`` (module doc)."""
    names = list(subsets)
    scores = pair_scores([subsets[n] for n in names], embed)
    per = {
        n: {**correlations(s, subsets[n].y), "pairs": len(subsets[n])}
        for n, s in zip(names, scores, strict=True)
    }
    weights = np.array([len(subsets[n]) for n in names], dtype=np.float64)
    out: dict[str, object] = {"subsets": per, "pairs": int(weights.sum())}
    pooled = correlations(np.concatenate(scores), np.concatenate([subsets[n].y for n in names]))
    for metric in ("spearman", "pearson"):
        values = np.array([per[n][metric] for n in names])
        out[metric] = {
            "all": pooled[metric],
            "wmean": float((values * weights).sum() / weights.sum()),
            "mean": float(values.mean()),
        }
    return out


def evaluate_sts_set(pairs: Pairs, embed: Embed) -> dict[str, object]:
    """Correlations of one pair set (STS-B, SICK-R)."""
    (scores,) = pair_scores([pairs], embed)
    return {**correlations(scores, pairs.y), "pairs": len(pairs)}
