"""STS evaluation: Spearman against scipy and a loop-based float64 reference, and the
pairing of cosine scores with their sentences."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from scipy.stats import spearmanr

from contrastkit.text import SentenceEncoder, StsPairs, cosine_scores, spearman, sts_spearman


def ranks_with_ties(x: list[float]) -> list[float]:
    """1-based ranks, tied values getting the mean of their positions (loop reference)."""
    out = [0.0] * len(x)
    for i, v in enumerate(x):
        below = sum(1 for w in x if w < v)
        equal = sum(1 for w in x if w == v)
        out[i] = below + (equal + 1) / 2.0
    return out


def pearson(a: list[float], b: list[float]) -> float:
    ma, mb = sum(a) / len(a), sum(b) / len(b)
    cov = sum((x - ma) * (y - mb) for x, y in zip(a, b, strict=True))
    va = sum((x - ma) ** 2 for x in a)
    vb = sum((y - mb) ** 2 for y in b)
    return cov / (va * vb) ** 0.5


def test_spearman_known_value() -> None:
    # rank differences 0, 0, 1, -1: rho = 1 - 6 * 2 / (4 * 15) = 0.8
    assert spearman([1, 2, 3, 4], [10, 20, 40, 30]) == pytest.approx(0.8, abs=1e-12)
    assert spearman([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0, abs=1e-12)


def test_spearman_matches_scipy_and_loop_reference_with_ties() -> None:
    rng = np.random.default_rng(0)
    x = rng.integers(0, 6, size=40).astype(float).tolist()  # gold-like scores with ties
    y = rng.normal(size=40).round(1).tolist()
    expected = pearson(ranks_with_ties(x), ranks_with_ties(y))
    assert spearman(x, y) == pytest.approx(expected, abs=1e-12)
    assert spearman(x, y) == pytest.approx(spearmanr(x, y).statistic, abs=1e-12)


@pytest.mark.parametrize(
    ("x", "y", "message"),
    [
        ([1, 2], [1, 2, 3], "same length"),
        ([1], [2], "at least 2"),
        ([1, 1, 1], [1, 2, 3], "undefined"),
    ],
)
def test_spearman_errors(x: list[float], y: list[float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        spearman(x, y)


def test_cosine_scores_pair_sentences_correctly(tiny_bert: Path, sentences: list[str]) -> None:
    enc = SentenceEncoder.from_pretrained(tiny_bert, pooling="mean")
    # repeated sentences on both sides, so the de-duplication must map indices correctly
    pairs = StsPairs([*sentences[:6], sentences[0]], [*sentences[3:9], sentences[0]], [0.0] * 7)
    got = cosine_scores(enc, pairs, batch_size=2)
    for k, (a, b) in enumerate(zip(pairs.sentences1, pairs.sentences2, strict=True)):
        ea, eb = (enc.encode([s])[0].double() for s in (a, b))
        ref = float(ea @ eb / (ea.norm() * eb.norm()))
        assert got[k] == pytest.approx(ref, abs=1e-5)
    assert got[-1] == pytest.approx(1.0, abs=1e-6)  # identical sentences


def test_sts_spearman_reports_rho_and_pair_count(tiny_bert: Path, sentences: list[str]) -> None:
    enc = SentenceEncoder.from_pretrained(tiny_bert)
    gold = [float(i % 5) for i in range(6)]
    pairs = StsPairs(sentences[:6], sentences[6:], gold)
    result = sts_spearman(enc, pairs)
    e1, e2 = enc.encode(pairs.sentences1), enc.encode(pairs.sentences2)
    cos = torch.nn.functional.cosine_similarity(e1.double(), e2.double()).numpy()
    assert result["pairs"] == 6
    assert result["spearman"] == pytest.approx(spearmanr(cos, gold).statistic, abs=1e-9)
