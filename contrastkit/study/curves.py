"""Learning curves over a study's finished runs (each a :class:`~.records.RunRecord`
keyed by seed): the mean over seeds with its t-interval, and the paired gap between two
arms with the convergence check's change over its last window (:func:`~.stats.convergence`).
"""

from __future__ import annotations

import math
from typing import Any

from .records import RunRecord
from .stats import convergence, t_interval


def mean_curve(runs: dict[int, RunRecord], key: str) -> tuple[list[int], list[float], list[float]]:
    """Epochs, mean and t-interval half-width of ``key`` over the seeds' histories."""
    by_epoch: dict[int, list[float]] = {}
    for run in runs.values():
        for rec in run.history:
            if key in rec:
                by_epoch.setdefault(int(rec["epoch"]), []).append(float(rec[key]))
    epochs = sorted(e for e, v in by_epoch.items() if len(v) == len(runs))
    means, halves = [], []
    for e in epochs:
        interval = t_interval(by_epoch[e])
        means.append(interval.mean)
        halves.append(0.0 if math.isnan(interval.high) else interval.high - interval.mean)
    return epochs, means, halves


def _by_epoch(run: RunRecord, key: str) -> dict[int, float]:
    return {int(r["epoch"]): float(r[key]) for r in run.history if key in r}


def gap_change(
    a: dict[int, RunRecord], b: dict[int, RunRecord], key: str, total: int, conv: dict[str, Any]
) -> float | None:
    """The convergence check's change of the mean paired gap curve (``a − b`` of ``key``
    over the seeds both ran): small when two drifting arms drift together. ``None`` for a
    relative check (the loss, whose scale differs per arm) or without a paired seed."""
    seeds = sorted(set(a) & set(b))
    if conv["relative"] or not seeds:
        return None
    pairs = [(_by_epoch(a[s], key), _by_epoch(b[s], key)) for s in seeds]
    epochs = sorted(set.intersection(*(set(x) & set(y) for x, y in pairs)))
    gaps = [math.fsum(x[e] - y[e] for x, y in pairs) / len(pairs) for e in epochs]
    change = convergence(epochs, gaps, total, conv["window"], conv["tolerance"]).change
    return None if math.isnan(change) else change
