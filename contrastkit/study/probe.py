"""Choosing a study's epochs: a convergence probe of its baseline arm.

A study's ``epochs`` must be long enough for the baseline's curve to be flat (the report's
convergence rule, :func:`~.stats.convergence`). :func:`run_probe` trains the baseline arm
on the study's first seed for up to ``max_epochs`` in ``<runs_dir>/probe/<arm>/seed<k>``
(resumable like every study run; it never touches the study's own runs), then
:func:`suggest_epochs` applies the rule to every evaluated epoch count ``E`` as if the study
stopped there: the change of the least-squares line through the evaluations in the last
``window · E`` epochs. The suggestion is the smallest ``E`` that passes and after which
every longer ``E`` passes too. A single seed's curve is noisier than the study's mean over
seeds, so a probe that only just passes deserves a margin.

Under a schedule set by the run's length (``warmup_cosine``, ``linear``) the first ``E``
epochs of a longer run are not an ``E``-epoch run, so the probe judges ``max_epochs`` only
(and, like the study's runs, is not continued to another length).
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Any

from ..rundir import atomic_write_text, read_jsonl
from ..training import METRICS, TrainConfig, extendable, run_state
from .claims import claimed
from .config import Arm, Study
from .runner import DeadlineError, label_aware_study, seeded, train
from .stats import convergence


def suggest_epochs(
    epochs: list[int],
    values: list[float],
    window: float = 0.2,
    tolerance: float = 0.005,
    scale: str = "absolute",
    min_points: int = 2,
) -> tuple[list[dict[str, Any]], int | None]:
    """The convergence check at every evaluated epoch count, and the smallest count from
    which on every check passes (``None`` if the last one fails)."""
    rows = []
    for i, total in enumerate(epochs):
        check = convergence(
            epochs[: i + 1], values[: i + 1], total, window, tolerance, scale, min_points
        )
        change = None if math.isnan(check.change) else check.change  # NaN: < 2 evaluations
        rows.append({"epochs": total, "change": change, "converged": check.converged})
    suggested = None
    for row in reversed(rows):
        if not row["converged"]:
            break
        suggested = row["epochs"]
    return rows, suggested


def _baseline(study: Study) -> Arm:
    return next(a for a in study.arms if a.label == study.baseline)


def probe_dir(study: Study) -> Path:
    """``<runs_dir>/probe/<baseline arm>/seed<first seed>``: apart from the study's runs."""
    return study.runs_dir / "probe" / _baseline(study).slug / f"seed{study.seeds[0]}"


def run_probe(
    study: Study, max_epochs: int, max_minutes: float | None = None, progress: bool = False
) -> dict[str, Any]:
    """Train (or continue) the probe, then write and return ``<out>/probe.json``: the
    curve, the check at every epoch count and the suggested ``epochs``."""
    if not isinstance(max_epochs, int) or max_epochs < 2:
        raise ValueError(f"--probe must be an integer number of epochs >= 2, got {max_epochs}")
    deadline = None if max_minutes is None else time.monotonic() + 60.0 * max_minutes
    arm = _baseline(study)
    config = TrainConfig.from_dict({**seeded(arm, study.seeds[0]).to_dict(), "epochs": max_epochs})
    directory = probe_dir(study)
    stopped = False
    if run_state(directory, config) != "finished":
        with claimed(directory) as held:
            if not held:
                raise ValueError(f"{directory} is being trained by another live process")
            try:
                state = run_state(directory, config)  # again: the holder may have finished it
                if state != "finished":
                    train(directory, config, state, label_aware_study(study), deadline, progress)
            except DeadlineError:
                stopped = True
    conv = study.convergence_settings()
    metrics = directory / METRICS
    history = read_jsonl(metrics)[0] if metrics.exists() else []
    curve = [(int(r["epoch"]), float(r[conv["metric"]])) for r in history if conv["metric"] in r]
    epochs, values = [e for e, _ in curve], [v for _, v in curve]
    rows, suggested = suggest_epochs(
        epochs, values, conv["window"], conv["tolerance"], conv["scale"], conv["min_points"]
    )
    if not extendable(config):  # only the full length is a run of its schedule
        rows = [r for r in rows if r["epochs"] == max_epochs]
        suggested = max_epochs if rows and rows[0]["converged"] else None
    result = {
        "study": study.name,
        "arm": arm.label,
        "seed": study.seeds[0],
        "max_epochs": max_epochs,
        "epochs_reached": int(history[-1]["epoch"]) if history else 0,
        "stopped_by_time_limit": stopped,
        "study_epochs": study.epochs,
        "convergence_settings": conv,
        "curve": curve,
        "checks": rows,
        "suggested_epochs": suggested,
    }
    study.out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(study.out / "probe.json", json.dumps(result, indent=1) + "\n")
    return result
