"""Linear probe on known data; alignment / uniformity on held-out positive pairs."""

from __future__ import annotations

import math

import pytest
import torch
from sklearn.datasets import load_digits
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import StandardScaler

from contrastkit.evaluation import alignment_uniformity, linear_probe


def test_linear_probe_on_digits_pixels_matches_an_independent_sklearn_fit() -> None:
    x, y = load_digits(return_X_y=True)
    x_tr, y_tr, x_te, y_te = x[:1200], y[:1200], x[1200:], y[1200:]
    scaler = StandardScaler().fit(x_tr)
    clf = LogisticRegression(max_iter=1000).fit(scaler.transform(x_tr), y_tr)
    expected = float((clf.predict(scaler.transform(x_te)) == y_te).mean())
    ours = linear_probe(
        torch.tensor(x_tr), torch.tensor(y_tr), torch.tensor(x_te), torch.tensor(y_te)
    )
    assert ours == pytest.approx(expected, abs=1e-9)
    assert ours > 0.9  # raw digit pixels are nearly linearly separable


def test_linear_probe_random_labels_is_near_chance() -> None:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(600, 8, generator=g)
    y = torch.randint(0, 4, (600,), generator=g)
    assert linear_probe(x[:400], y[:400], x[400:], y[400:]) < 0.4
    with pytest.raises(ValueError, match=r"\[N, d\]"):
        linear_probe(x[:, 0], y, x, y)


def _loop_uniformity(z: torch.Tensor, t: float = 2.0) -> float:
    n = z.shape[0]
    total = sum(
        math.exp(-t * float((z[i] - z[j]).pow(2).sum()))
        for i in range(n)
        for j in range(n)
        if i != j
    )
    return math.log(total / (n * (n - 1)))


def test_alignment_uniformity_against_loop_reference() -> None:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(40, 6, generator=g)

    def identity(v: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
        return v

    out = alignment_uniformity(lambda v: v, x, identity, g)
    z = torch.nn.functional.normalize(x.double(), dim=1)
    assert out["alignment"] == pytest.approx(0.0, abs=1e-12)
    assert out["uniformity"] == pytest.approx(_loop_uniformity(z), rel=1e-9)

    def noisy(v: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
        return v + 0.3 * torch.randn(v.shape, generator=gen)

    out = alignment_uniformity(lambda v: v, x, noisy, torch.Generator().manual_seed(1))
    a = torch.nn.functional.normalize(noisy(x, torch.Generator().manual_seed(1)).double(), dim=1)
    b_gen = torch.Generator().manual_seed(1)
    noisy(x, b_gen)  # the second view uses the generator's next draws
    b = torch.nn.functional.normalize(noisy(x, b_gen).double(), dim=1)
    expected_align = float((a - b).pow(2).sum(1).mean())
    assert out["alignment"] == pytest.approx(expected_align, rel=1e-9)
    assert out["uniformity"] == pytest.approx(
        (_loop_uniformity(a) + _loop_uniformity(b)) / 2, rel=1e-9
    )
