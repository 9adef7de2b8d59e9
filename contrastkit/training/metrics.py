"""The numbers of a run's ``final.json``, declared by what makes them.

A :class:`Metric` names one final number, or a family of them by a regular expression, and
the header of its ``contrastkit compare`` column. This module declares the numbers of the
base trainer (:meth:`~.trainer.Trainer.final_metrics`), of the label-aware trainer
(:mod:`.label_aware`) and of every run's record (:func:`.checkpoint.write_final`). A
modality declares the numbers that its own trainer adds in
:attr:`~.modality.Modality.metrics`, and :func:`~.modality.register_modality` registers them
here. A modality also declares the per-epoch curves of ``metrics.jsonl`` whose
convergence window must hold more evaluations than :data:`MIN_POINTS`
(:attr:`~.modality.Modality.curve_points`, registered with
:func:`register_curve_points`; :func:`min_points` answers). ``contrastkit study`` checks
a config's ``metric`` and ``also_report`` against
:func:`is_final_metric` before any run; ``contrastkit compare`` tabulates the declared
numbers that have a header (:func:`compare_columns`); and
:func:`~.checkpoint.write_final` warns (:class:`UndeclaredMetricWarning`) about a number
that nothing declares.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Metric:
    """One number of ``final.json``.

    Attributes:
        key: the ``final.json`` key; with ``pattern``, a regular expression that the keys
            match whole (``r"knn_accuracy_k(\\d+)"``).
        header: the header of its ``contrastkit compare`` column, formatted with the
            pattern's groups (``"kNN k={}"``) and the runs' config values
            (``"kNN k={knn_k}"``); empty: not a compare column.
        pattern: whether ``key`` is a regular expression.
    """

    key: str
    header: str = ""
    pattern: bool = False

    def match(self, key: str) -> re.Match[str] | None:
        """The match of ``key`` (a pattern's groups; ``None``: not this metric's)."""
        if self.pattern:
            return re.fullmatch(self.key, key)
        return re.fullmatch(re.escape(self.key), key)


class UndeclaredMetricWarning(UserWarning):
    """A number in ``final.json`` that no :class:`Metric` declares."""


_METRICS: list[Metric] = [
    # the base trainer: kNN at k and at the small k, the linear probe, Wang & Isola (2020)
    Metric("knn_accuracy", "kNN k={knn_k}"),
    Metric(r"knn_accuracy_k(\d+)", "kNN k={}", pattern=True),
    Metric("linear_accuracy", "linear"),
    Metric("alignment", "alignment"),
    Metric("uniformity", "uniformity"),
    # the label-aware trainer: its downstream head (regression or classification,
    # evaluation.downstream) and LASCon §4.2's label geometry
    Metric("head_mae", "head MAE"),
    Metric("head_pearson", "head Pearson"),
    Metric("head_spearman", "head Spearman"),
    Metric("head_accuracy", "head acc"),
    Metric("label_alignment", "label align"),
    Metric("label_uniformity", "label unif"),
    # every run's record
    Metric("epochs"),
    Metric("seed"),
    Metric("world_size"),
    Metric("train_time_s", "train s/run"),
    Metric("final_eval_time_s"),
    Metric("peak_device_memory_mb"),
]


# evaluations a convergence window must hold (``contrastkit study``): a line through two points
MIN_POINTS = 2
_CURVE_POINTS: dict[str, int] = {}  # per-epoch curve -> evaluations, where more than 2


def register_curve_points(points: Mapping[str, int]) -> None:
    """Declare per-epoch curves (``metrics.jsonl`` keys) whose convergence window must hold
    ``points[key]`` evaluations (an integer > :data:`MIN_POINTS`); a curve declared
    already raises ``ValueError``."""
    for key, count in points.items():
        if key in _CURVE_POINTS:
            raise ValueError(f"curve {key!r} declares its minimum of evaluations already")
        if not isinstance(count, int) or count <= MIN_POINTS:
            raise ValueError(f"curve {key!r}: evaluations must be an integer > 2, got {count!r}")
    _CURVE_POINTS.update(points)


def min_points(curve: str) -> int:
    """The evaluations a convergence window over the per-epoch ``curve`` must hold: what its
    modality declares, else :data:`MIN_POINTS`."""
    return _CURVE_POINTS.get(curve, MIN_POINTS)


def register_metrics(metrics: Iterable[Metric]) -> None:
    """Declare ``metrics``; a key declared already raises ``ValueError``."""
    metrics = list(metrics)
    known = {m.key for m in _METRICS}
    for metric in metrics:
        if metric.key in known:
            raise ValueError(f"final metric {metric.key!r} is declared already")
        known.add(metric.key)
    _METRICS.extend(metrics)


def declared(key: str) -> Metric | None:
    """The metric that declares ``key``, or ``None``."""
    return next((m for m in _METRICS if m.match(key)), None)


def is_final_metric(key: str) -> bool:
    """Whether ``key`` is a number that ``final.json`` can hold."""
    return declared(key) is not None


def final_metric_keys() -> list[str]:
    """The declared keys that are no pattern, in declaration order (for suggestions)."""
    return [m.key for m in _METRICS if not m.pattern]


def undeclared(final: Mapping[str, Any]) -> list[str]:
    """The keys of ``final``'s numbers (booleans aside) that no metric declares."""
    return [
        key
        for key, value in final.items()
        if isinstance(value, int | float) and not isinstance(value, bool)
        if not is_final_metric(key)
    ]


def compare_columns(finals: list[Mapping[str, Any]]) -> list[str]:
    """The compare columns that every one of ``finals`` holds: the declared metrics with a
    header, in declaration order (a pattern's keys sorted)."""
    shared = set.intersection(*(set(f) for f in finals)) if finals else set()
    columns: list[str] = []
    for metric in _METRICS:
        if metric.header:
            columns += sorted(k for k in shared if metric.match(k) and k not in columns)
    return columns


def header(key: str, config: Mapping[str, Any] | None = None) -> str:
    """The compare header of ``key``, its fields filled from the pattern's groups and
    ``config`` (the values the compared runs share); the key itself when the metric
    declares no header or a field it names has no value."""
    metric = declared(key)
    match = metric.match(key) if metric is not None else None
    if match is None or not metric.header:
        return key
    try:
        return metric.header.format(*match.groups(), **(config or {}))
    except (KeyError, IndexError):
        return key
