"""The statistics of a study: t-intervals over seeds, paired differences, the verdict rule
and the convergence check.

All intervals are Student-t intervals: for ``n`` values with mean ``m`` and sample
standard deviation ``s`` (``n - 1`` denominator) the two-sided ``c`` interval is
``m ± t_{(1 + c) / 2, n - 1} · s / √n``. The paired comparison of an arm with its baseline
uses the per-seed differences ``d_i = arm_i - baseline_i`` over the seeds both finished:
the interval above on ``d`` and the paired t-test ``t = m_d / (s_d / √n)`` with its
two-sided p-value (the same test as :func:`scipy.stats.ttest_rel`). Several comparisons
read together are corrected by Holm's step-down procedure (:func:`holm`), and a
pre-registered comparison is judged on its adjusted p (:func:`adjusted_verdict`).
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


def holm(pvalues: Sequence[float | None]) -> list[float | None]:
    """Holm–Bonferroni adjusted p-values (Holm, 1979), in the order given.

    With the ``m`` p-values sorted ascending, ``p_(1) ≤ … ≤ p_(m)``, the adjusted value of
    the ``i``-th is ``max_{j ≤ i} min(1, (m − j + 1) p_(j))``: step-down, monotone in the
    raw p, never below it; rejecting where it is below ``α`` controls the family-wise error
    rate at ``α`` under any dependence. An entry without a p (``None`` or NaN: a declared
    comparison not run yet, or with one seed) stays in the family as ``p = 1``, which can
    only raise the others' adjusted values, whatever its p turns out to be; its own
    adjusted value is ``None``."""
    m = len(pvalues)
    known = [p is not None and not math.isnan(p) for p in pvalues]
    raw = [float(p) if ok else 1.0 for p, ok in zip(pvalues, known, strict=True)]
    for p in raw:
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"p-values must lie in [0, 1], got {p}")
    order = sorted(range(m), key=lambda i: raw[i])
    adjusted = [1.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * raw[i]))
        adjusted[i] = running
    return [a if ok else None for a, ok in zip(adjusted, known, strict=True)]


def adjusted_verdict(
    comparison: Paired | None,
    adjusted_p: float | None,
    better: str = "higher",
    converged: bool = True,
    min_seeds: int = 3,
    confidence: float = 0.95,
) -> str:
    """The verdict of a pre-registered comparison, read from its Holm-adjusted p: ``holds``
    if ``adjusted_p < 1 − confidence`` and the mean difference has the claimed sign (above
    0 for ``better == "higher"``), ``reversed`` if it is significant the other way,
    ``within noise`` otherwise; ``too few seeds`` and ``not converged`` first, as in
    :func:`verdict`."""
    first = verdict(comparison, better, converged, min_seeds)
    if first in (TOO_FEW_SEEDS, NOT_CONVERGED) or comparison is None:
        return first
    if adjusted_p is None or not adjusted_p < 1.0 - confidence:
        return WITHIN_NOISE
    mean = comparison.difference.mean
    claimed = mean > 0 if better == "higher" else mean < 0
    if mean == 0.0:
        return WITHIN_NOISE
    return HOLDS if claimed else REVERSED


# how the convergence check scales a curve's change: absolute, by the curve's range over
# the run (the loss rule), or by its mean absolute value in the window (the rule before
# issue 40, kept to read the results files written under it)
ABSOLUTE, RANGE, MEAN = "absolute", "range", "mean"


@dataclass(frozen=True)
class Convergence:
    """Result of the convergence check on one mean learning curve: ``points`` evaluations
    fell in the window, and the check needs ``min_points``."""

    converged: bool
    change: float
    window: tuple[int, int]
    tolerance: float
    points: int = 0
    min_points: int = 2

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def convergence(
    epochs: Sequence[int],
    values: Sequence[float],
    total_epochs: int,
    window: float = 0.2,
    tolerance: float = 0.005,
    scale: str = ABSOLUTE,
    min_points: int = 2,
) -> Convergence:
    """Does the curve change by less than ``tolerance`` over the last ``window`` of epochs?

    The change is that of the least-squares line through the evaluations in epochs
    ``[total - window·total, total]``: slope × (last − first evaluated epoch of the
    window), robust to the epoch-to-epoch jitter of a kNN reading. Fewer than
    ``min_points`` evaluations in the window (at least 2) count as not converged: a line
    through two or three points of a noisy curve says little, so a rule may ask for more.
    So does a curve holding a NaN or an infinite value anywhere (its change is NaN).

    ``scale`` (for losses, whose values differ per loss): :data:`RANGE` divides the change
    by the range (max − min) of the whole curve given, i.e. the share of the distance the
    loss travelled over the run that it still travels in the window. It is scale-free
    and does not depend on where the loss's floor lies: dividing by the loss's mean value
    (:data:`MEAN`, the former rule) made a loss that sits near a high floor pass whatever
    it did (LASCon's, near log 63 with equal similarities: −0.15 % while still falling) and
    one that falls towards 0 fail (SimCLR's: −11 %). A flat curve (range 0) has change 0."""
    if len(epochs) != len(values):
        raise ValueError("epochs and values must have the same length")
    if not 0.0 < window <= 1.0:
        raise ValueError(f"window must be in (0, 1], got {window}")
    if scale not in (ABSOLUTE, RANGE, MEAN):
        raise ValueError(f"scale must be one of {ABSOLUTE}, {RANGE}, {MEAN}; got {scale!r}")
    need = max(2, int(min_points))
    # rounded, so that e.g. 90 - 0.7·90 = 27.000000000000007 keeps epoch 27 in the window
    start = round(total_epochs - window * total_epochs, 9)
    points = [(e, v) for e, v in zip(epochs, values, strict=True) if start <= e <= total_epochs]
    if len(points) < 2 or not all(math.isfinite(v) for v in values):  # NaN: not converged
        span = (points[0][0], points[0][0]) if points else (total_epochs, total_epochs)
        return Convergence(False, math.nan, span, tolerance, len(points), need)
    xs, ys = [float(e) for e, _ in points], [float(v) for _, v in points]
    mx, my = math.fsum(xs) / len(xs), math.fsum(ys) / len(ys)
    slope = math.fsum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / math.fsum(
        (x - mx) ** 2 for x in xs
    )
    change = slope * (xs[-1] - xs[0])
    if scale == RANGE:
        spread = max(values) - min(values)
        change = change / spread if spread > 0 else 0.0
    elif scale == MEAN:
        mean = math.fsum(abs(y) for y in ys) / len(ys)
        change = change / mean if mean > 0 else math.inf
    span = (int(xs[0]), int(xs[-1]))
    flat = abs(change) < tolerance and len(points) >= need
    return Convergence(flat, change, span, tolerance, len(points), need)
