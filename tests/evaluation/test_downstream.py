"""Downstream head and regression metrics: MAE / Pearson / Spearman agree with scipy."""

from __future__ import annotations

import pytest
import torch
from scipy import stats

from contrastkit.evaluation.downstream import (
    pearson,
    prediction_head,
    regression_metrics,
    spearman,
)


@pytest.mark.parametrize("ties", [False, True])
def test_metrics_agree_with_scipy(ties: bool) -> None:
    g = torch.Generator().manual_seed(0)
    target = torch.randn(200, generator=g, dtype=torch.float64)
    pred = target + 0.7 * torch.randn(200, generator=g, dtype=torch.float64)
    if ties:  # many tied values in both: Spearman must average the tied ranks
        target, pred = target.round(), (2 * pred).round()
    got = regression_metrics(pred, target)
    assert got["mae"] == pytest.approx(float((pred - target).abs().mean()), rel=1e-12)
    assert got["pearson"] == pytest.approx(stats.pearsonr(pred, target)[0], abs=1e-12)
    assert got["spearman"] == pytest.approx(stats.spearmanr(pred, target)[0], abs=1e-12)


def test_spearman_is_rank_based_and_pearson_is_not() -> None:
    x = torch.linspace(0.1, 3.0, 30, dtype=torch.float64)
    y = x.exp() ** 3  # monotone, far from linear
    assert spearman(x, y) == pytest.approx(1.0, abs=1e-12)
    assert pearson(x, y) < 0.9
    assert spearman(x, -y) == pytest.approx(-1.0, abs=1e-12)


def test_constant_input_gives_zero_correlation_not_nan() -> None:
    x, c = torch.arange(5.0), torch.full((5,), 2.0)
    assert pearson(x, c) == 0.0 and spearman(c, x) == 0.0


@pytest.mark.parametrize(
    ("x", "y", "match"),
    [
        (torch.zeros(3, 1), torch.zeros(3), r"x must be a tensor of shape \[N\]"),
        (torch.zeros(3), torch.zeros(4), "same shape"),
        (torch.zeros(1), torch.zeros(1), "N >= 2"),
    ],
)
def test_metric_input_errors(x: torch.Tensor, y: torch.Tensor, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        regression_metrics(x, y)


def _regression_data(informative: bool) -> tuple[torch.Tensor, ...]:
    g = torch.Generator().manual_seed(1)
    y = torch.rand(400, generator=g) * 100.0 + 20.0
    noise = 0.1 * torch.randn(400, 8, generator=g)
    feats = noise + (y[:, None] / 30.0 if informative else 0.0)  # Bayes MAE ~0.85
    return feats[:300], y[:300], feats[300:], y[300:]


def test_head_recovers_an_informative_representation() -> None:
    good = prediction_head(*_regression_data(True), task="regression")
    bad = prediction_head(*_regression_data(False), task="regression")
    assert set(good) == {"head_mae", "head_pearson", "head_spearman"}
    # labels span 100 units: predicting the mean gives MAE ~25; the features carry y
    assert good["head_mae"] < 5.0 and good["head_pearson"] > 0.98
    assert bad["head_mae"] > 18.0 and abs(bad["head_pearson"]) < 0.3
    again = prediction_head(*_regression_data(True), task="regression")
    assert again == good  # seeded: deterministic


def test_head_classification_accuracy() -> None:
    g = torch.Generator().manual_seed(2)
    y = torch.randint(0, 3, (300,), generator=g)
    feats = torch.randn(300, 5, generator=g) * 0.3 + torch.nn.functional.one_hot(y, 5) * 3.0
    out = prediction_head(feats[:200], y[:200], feats[200:], y[200:], task="classification")
    assert set(out) == {"head_accuracy"} and out["head_accuracy"] > 0.97
    shuffled = prediction_head(
        feats[:200],
        y[:200][torch.randperm(200, generator=g)],
        feats[200:],
        y[200:],
        task="classification",
    )
    assert shuffled["head_accuracy"] < 0.6


def test_head_input_errors() -> None:
    f, y = torch.zeros(10, 3), torch.zeros(10)
    with pytest.raises(ValueError, match="task must be"):
        prediction_head(f, y, f, y, task="ranking")
    with pytest.raises(ValueError, match=r"train_features must be \[N, d\]"):
        prediction_head(f, y[:5], f, y)
    with pytest.raises(ValueError, match="feature widths differ"):
        prediction_head(f, y, torch.zeros(10, 4), y)
