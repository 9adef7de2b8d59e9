"""The statistics of a study: t-intervals over seeds, paired differences, the verdict rule
and the convergence check.

All intervals are Student-t intervals: for ``n`` values with mean ``m`` and sample
standard deviation ``s`` (``n - 1`` denominator) the two-sided ``c`` interval is
``m ± t_{(1 + c) / 2, n - 1} · s / √n``. The paired comparison of an arm with its baseline
uses the per-seed differences ``d_i = arm_i - baseline_i`` over the seeds both finished:
the interval above on ``d`` and the paired t-test ``t = m_d / (s_d / √n)`` with its
two-sided p-value (the same test as :func:`scipy.stats.ttest_rel`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from .._optional import require

HOLDS, REVERSED, WITHIN_NOISE = "holds", "reversed", "within noise"
NOT_CONVERGED, TOO_FEW_SEEDS = "not converged", "too few seeds"


@dataclass(frozen=True)
class Interval:
    """Mean and two-sided t-interval ``[low, high]`` of ``n`` values."""

    mean: float
    low: float
    high: float
    n: int
    std: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def t_interval(values: Sequence[float], confidence: float = 0.95) -> Interval:
    """Student-t interval of the mean of ``values``; one value gives ``[nan, nan]``."""
    n = len(values)
    if n == 0:
        raise ValueError("t_interval needs at least one value")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    mean = math.fsum(values) / n
    if n < 2:
        return Interval(mean, math.nan, math.nan, n, math.nan)
    std = math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (n - 1))
    t_dist = require("scipy.stats", "train", "study statistics").t
    half = float(t_dist.ppf((1.0 + confidence) / 2.0, n - 1)) * std / math.sqrt(n)
    return Interval(mean, mean - half, mean + half, n, std)


@dataclass(frozen=True)
class Paired:
    """Paired comparison of an arm with its baseline over the same seeds."""

    seeds: list[int]
    difference: Interval
    t: float
    p: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "seeds": self.seeds,
            "difference": self.difference.to_dict(),
            "t": self.t,
            "p": self.p,
        }


def paired(
    arm: dict[int, float], baseline: dict[int, float], confidence: float = 0.95
) -> Paired | None:
    """Paired difference ``arm - baseline`` over the seeds in both (``None`` if none).

    ``t`` and ``p`` are the paired t-test's statistic and two-sided p-value; identical
    values on every seed give ``t = 0, p = 1`` (no evidence of a difference), a constant
    non-zero difference gives ``t = ±inf, p = 0``."""
    seeds = sorted(set(arm) & set(baseline))
    if not seeds:
        return None
    diffs = [arm[s] - baseline[s] for s in seeds]
    interval = t_interval(diffs, confidence)
    n = len(diffs)
    if n < 2:
        return Paired(seeds, interval, math.nan, math.nan)
    if interval.std == 0.0:
        t = 0.0 if interval.mean == 0.0 else math.copysign(math.inf, interval.mean)
        return Paired(seeds, interval, t, 1.0 if t == 0.0 else 0.0)
    t = interval.mean / (interval.std / math.sqrt(n))
    p = float(2.0 * require("scipy.stats", "train", "study statistics").t.sf(abs(t), n - 1))
    return Paired(seeds, interval, t, p)


def verdict(
    comparison: Paired | None,
    better: str = "higher",
    converged: bool = True,
    min_seeds: int = 3,
) -> str:
    """The pre-declared rule: with ``better == "higher"`` the claim "arm beats baseline"
    ``holds`` if the paired interval of ``arm - baseline`` lies above 0, is ``reversed`` if
    it lies below 0, and is ``within noise`` otherwise (``lower``: mirrored). Before that:
    ``too few seeds`` below ``min_seeds`` paired seeds, ``not converged`` if the arm or its
    baseline failed the convergence check."""
    if better not in ("higher", "lower"):
        raise ValueError(f"better must be 'higher' or 'lower', got {better!r}")
    if comparison is None or len(comparison.seeds) < max(2, min_seeds):
        return TOO_FEW_SEEDS
    if not converged:
        return NOT_CONVERGED
    low, high = comparison.difference.low, comparison.difference.high
    if better == "lower":
        low, high = -high, -low
    if low > 0:
        return HOLDS
    if high < 0:
        return REVERSED
    return WITHIN_NOISE


@dataclass(frozen=True)
class Convergence:
    """Result of the convergence check on one mean learning curve."""

    converged: bool
    change: float
    window: tuple[int, int]
    tolerance: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def convergence(
    epochs: Sequence[int],
    values: Sequence[float],
    total_epochs: int,
    window: float = 0.2,
    tolerance: float = 0.005,
    relative: bool = False,
) -> Convergence:
    """Does the curve change by less than ``tolerance`` over the last ``window`` of epochs?

    The change is that of the least-squares line through the evaluations in epochs
    ``[total - window·total, total]``: slope × (last − first evaluated epoch of the
    window), robust to the epoch-to-epoch jitter of a kNN reading. ``relative`` divides
    it by the mean absolute value in the window (for losses, whose scale differs per
    arm). Fewer than two evaluations in the window count as not converged."""
    if len(epochs) != len(values):
        raise ValueError("epochs and values must have the same length")
    if not 0.0 < window <= 1.0:
        raise ValueError(f"window must be in (0, 1], got {window}")
    start = total_epochs - window * total_epochs
    points = [(e, v) for e, v in zip(epochs, values, strict=True) if start <= e <= total_epochs]
    if len(points) < 2:
        span = (points[0][0], points[0][0]) if points else (total_epochs, total_epochs)
        return Convergence(False, math.nan, span, tolerance)
    xs, ys = [float(e) for e, _ in points], [float(v) for _, v in points]
    mx, my = math.fsum(xs) / len(xs), math.fsum(ys) / len(ys)
    slope = math.fsum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / math.fsum(
        (x - mx) ** 2 for x in xs
    )
    change = slope * (xs[-1] - xs[0])
    if relative:
        scale = math.fsum(abs(y) for y in ys) / len(ys)
        change = change / scale if scale > 0 else math.inf
    span = (int(xs[0]), int(xs[-1]))
    return Convergence(abs(change) < tolerance, change, span, tolerance)
