"""SentEval's PyTorch logistic regression (:mod:`contrastkit.text.senteval.logreg`): its
seeding, early stopping, epoch cap and validation split, against a plain loop that seeds
the global generators as SentEval does."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from contrastkit.text.senteval import logreg
from contrastkit.text.senteval.logreg import LogRegSettings, fit_logreg


def _problem(n: int = 90, d: int = 6, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, d)).astype(np.float32)
    y = (x[:, 0] - 0.5 * x[:, 1] + 0.7 * rng.standard_normal(n) > 0).astype(np.int64)
    return x, y


def _global_seed_reference(
    x: np.ndarray, y: np.ndarray, dev: tuple[np.ndarray, np.ndarray], l2: float, seed: int,
    settings: LogRegSettings,
) -> nn.Linear:  # fmt: skip
    """The documented procedure written with the global NumPy and torch generators, which
    SentEval seeds when a classifier is built."""
    np.random.seed(seed)
    torch.manual_seed(seed)
    model = nn.Linear(x.shape[1], 2)
    opt = torch.optim.Adam(model.parameters(), weight_decay=l2)
    tx, ty = torch.from_numpy(x), torch.from_numpy(y)
    dx, dy = torch.from_numpy(dev[0]), torch.from_numpy(dev[1])
    best, state, count, epochs, stop = -1.0, None, 0, 0, False
    while not stop and epochs <= settings.max_epoch:
        for _ in range(settings.epoch_size):
            perm = np.random.permutation(len(tx))
            for start in range(0, len(tx), settings.batch_size):
                idx = torch.from_numpy(perm[start : start + settings.batch_size])
                loss = F.cross_entropy(model(tx[idx]), ty[idx])
                opt.zero_grad()
                loss.backward()
                opt.step()
        epochs += settings.epoch_size
        with torch.no_grad():
            acc = float((model(dx).argmax(1) == dy).float().mean())
        if acc > best:
            best, state = acc, {k: v.clone() for k, v in model.state_dict().items()}
        else:
            stop = count >= settings.tenacity
            count += 1
    model.load_state_dict(state)
    return model


def test_fit_equals_the_procedure_under_senteval_global_seeding() -> None:
    x, y = _problem()
    dev = (x[:20], y[:20])
    settings = LogRegSettings(batch_size=16, tenacity=2, epoch_size=2, max_epoch=30)
    ours = fit_logreg(x[20:], y[20:], 1e-3, 1111, 2, dev, settings=settings)
    reference = _global_seed_reference(x[20:], y[20:], dev, 1e-3, 1111, settings)
    for a, b in zip(ours.linear.parameters(), reference.parameters(), strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=0)
    # and it leaves the caller's global generators alone
    torch.manual_seed(5)
    expected = torch.rand(3)
    torch.manual_seed(5)
    fit_logreg(x, y, 1e-3, 1111, 2, dev, settings=settings)
    assert torch.equal(torch.rand(3), expected)


def _scripted(monkeypatch: pytest.MonkeyPatch, accuracies: list[float]) -> list[dict]:
    """Make the validation accuracy follow ``accuracies``; returns the weights seen at
    each evaluation."""
    seen: list[dict] = []
    script = iter(accuracies)

    def accuracy(linear: nn.Linear, x: torch.Tensor, y: torch.Tensor) -> float:
        seen.append({k: v.clone() for k, v in linear.state_dict().items()})
        return next(script)

    monkeypatch.setattr(logreg, "_accuracy", accuracy)
    return seen


def test_tenacity_counts_misses_without_reset_and_the_best_weights_are_kept(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    x, y = _problem()
    # misses at evaluations 3, 4, 6, 7 and 8 make five, so the ninth stops training; the
    # improvement at the fifth does not reset the count (a reset would run to the 11th)
    seen = _scripted(monkeypatch, [0.5, 0.6, 0.6, 0.6, 0.9, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6])
    model = fit_logreg(x, y, 0.0, 0, 2, (x, y), settings=LogRegSettings(tenacity=5))
    assert len(seen) == 9
    for name, value in model.linear.state_dict().items():
        assert torch.equal(value, seen[4][name])


def test_training_stops_after_max_epoch_passes(monkeypatch: pytest.MonkeyPatch) -> None:
    x, y = _problem()
    seen = _scripted(monkeypatch, [0.1 * k for k in range(10)])  # always improving
    fit_logreg(x, y, 0.0, 0, 2, (x, y), settings=LogRegSettings(epoch_size=4, max_epoch=8))
    assert len(seen) == 3  # passes 4, 8, then 12 > 8 ends the loop


def test_without_a_dev_set_a_seeded_five_percent_is_held_out(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    x, y = _problem(n=200)
    held = []
    monkeypatch.setattr(logreg, "_accuracy", lambda linear, dx, dy: held.append(dx.clone()) or 1.0)
    fit_logreg(x, y, 0.0, 7, 2, settings=LogRegSettings(max_epoch=0))
    order = np.random.RandomState(7).permutation(200)
    assert torch.equal(held[0], torch.from_numpy(x[order[:10]]))


def test_a_separable_problem_is_learned() -> None:
    x, _ = _problem(n=2200)
    y = (x[:, 0] > 0).astype(np.int64)
    model = fit_logreg(x[:2000], y[:2000], 1e-5, 1111, 2, (x[2000:], y[2000:]))
    assert np.mean(model.predict(x) == y) > 0.95
