"""Learning curves over a study's finished runs (each a :class:`~.records.RunRecord`
keyed by seed): the mean over seeds with its t-interval, and the paired gap between two
arms with the convergence check's change over its last window (:func:`~.stats.convergence`);
and the report's two plots of them (:func:`plots`).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from ..rundir import atomic_file
from .records import RunRecord
from .stats import convergence, t_interval


def mean_curve(runs: dict[int, RunRecord], key: str) -> tuple[list[int], list[float], list[float]]:
    """Epochs, mean and t-interval half-width of ``key`` over the seeds' histories."""
    by_epoch: dict[int, list[float]] = {}
    for run in runs.values():
        for epoch, value in run.series(key).items():
            by_epoch.setdefault(epoch, []).append(value)
    epochs = sorted(e for e, v in by_epoch.items() if len(v) == len(runs))
    means, halves = [], []
    for e in epochs:
        interval = t_interval(by_epoch[e])
        means.append(interval.mean)
        halves.append(0.0 if math.isnan(interval.high) else interval.high - interval.mean)
    return epochs, means, halves


def gap_change(
    a: dict[int, RunRecord], b: dict[int, RunRecord], key: str, total: int, conv: dict[str, Any]
) -> float | None:
    """The convergence check's change of the mean paired gap curve (``a − b`` of ``key``
    over the seeds both ran): small when two drifting arms drift together. ``None`` for a
    relative check (the loss, whose scale differs per arm) or without a paired seed."""
    seeds = sorted(set(a) & set(b))
    if conv["relative"] or not seeds:
        return None
    pairs = [(a[s].series(key), b[s].series(key)) for s in seeds]
    epochs = sorted(set.intersection(*(set(x) & set(y) for x, y in pairs)))
    gaps = [math.fsum(x[e] - y[e] for x, y in pairs) / len(pairs) for e in epochs]
    change = convergence(epochs, gaps, total, conv["window"], conv["tolerance"]).change
    return None if math.isnan(change) else change


def plots(results: dict[str, Any], out: Path) -> list[str]:
    """``curves.png`` (mean curve ± t-interval band per arm) and ``differences.png``
    (paired Δ with its interval per judged arm)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    metric = results["convergence_settings"]["metric"]
    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    for label, arm in results["arms"].items():
        curve = arm.get("curve")
        if not curve or not curve["epochs"]:
            continue
        e, m, h = curve["epochs"], curve["mean"], curve["half_width"]
        ax.plot(e, m, label=f"{label} (n={len(arm['seeds'])})", linewidth=1.2)
        low = [a - b for a, b in zip(m, h, strict=True)]
        ax.fill_between(e, low, [a + b for a, b in zip(m, h, strict=True)], alpha=0.2)
    means = [v for arm in results["arms"].values() for v in arm.get("curve", {}).get("mean", [])]
    if means:  # frame the means; 2-seed bands (t = 12.7) would flatten them otherwise
        pad = 0.25 * (max(means) - min(means)) or 0.01
        ax.set_ylim(min(means) - pad, max(means) + pad)
    ax.set(xlabel="epoch", ylabel=metric, title=f"{results['name']}: mean over seeds ± t-CI")
    ax.legend(fontsize=7)
    fig.tight_layout()
    with atomic_file(out / "curves.png") as fh:
        fig.savefig(fh, format="png", dpi=110)
    plt.close(fig)
    fig, ax = plt.subplots(figsize=(7.5, 0.5 + 0.45 * max(1, len(results["comparisons"]))))
    rows = [c for c in results["comparisons"].values() if c["paired"]]
    for i, comp in enumerate(rows):
        d = comp["paired"]["difference"]
        low = d["low"] if not math.isnan(d["low"]) else d["mean"]
        high = d["high"] if not math.isnan(d["high"]) else d["mean"]
        ax.errorbar(d["mean"], i, xerr=[[d["mean"] - low], [high - d["mean"]]], fmt="o", capsize=3)
    ax.axvline(0.0, color="grey", linewidth=0.8)
    ax.set_yticks(range(len(rows)), [f"{c['arm']} − {c['vs']}" for c in rows], fontsize=7)
    ax.set(xlabel=f"paired Δ {results['metric']}", title="paired differences, t-CI")
    fig.tight_layout()
    with atomic_file(out / "differences.png") as fh:
        fig.savefig(fh, format="png", dpi=110)
    plt.close(fig)
    return [str(out / "curves.png"), str(out / "differences.png")]
