"""A study's report from its finished runs: ``results.json``, ``REPORT.md``, ``curves.png``
and ``differences.png`` in the study folder.

Only finished runs (``final.json`` at the study's epochs) count. Per arm: the metric's
mean and t-interval over seeds, the mean learning curve and its convergence check, the
mean training time per run, and the "why" numbers (:func:`_why`: the final encoder's
alignment and uniformity, the loss's last-epoch diagnostics). Per judged arm: the paired
difference to the arm it is compared with, its t-interval, the paired t-test, its p
adjusted by Holm over the study's comparisons and the verdict of :func:`~.stats.verdict`;
arms that trained identically are reported once and the pre-registered comparisons are
read from their adjusted p (:mod:`.families`); the config's declaration dates
(:mod:`.declared`).
"""

from __future__ import annotations

import json
import math
from typing import Any

from ..rundir import atomic_write_text
from ..training import TIMING_KEYS
from .config import Study
from .curves import gap_change, mean_curve, plots
from .declared import declaration
from .families import GEOMETRY, holm_within, identical_arms, mark_duplicates, primary_results
from .records import RunRecord, code_versions, write_records
from .report_text import interval_cell, markdown, readme_rows, verdict_cell
from .runner import STUDY_LOG, survey
from .stats import convergence, paired, t_interval, verdict

__all__ = [
    "collect",
    "finished_runs",
    "interval_cell",
    "json_safe",
    "markdown",
    "readme_rows",
    "verdict_cell",
    "write_report",
]


def finished_runs(study: Study) -> dict[tuple[str, int], RunRecord]:
    """Every finished run of ``study`` by (arm label, seed): from its run directory, or
    else from the study folder's ``runs.jsonl`` (:mod:`.records`)."""
    return {
        (slot.label, slot.seed): (
            RunRecord.from_directory(slot.directory) if slot.state == "finished" else slot.record
        )
        for slot in survey(study)
        if slot.state in ("finished", "recorded")
    }


BOOKKEEPING = ("epoch", "loss", "lr", *TIMING_KEYS)


def _why(runs: dict[int, RunRecord], confidence: float) -> dict[str, Any]:
    """Interval over seeds of the final encoder's geometry (:data:`GEOMETRY`) and of every
    diagnostic the loss logged in its last epoch (MACL's temperature and batch alignment,
    AMCL's mean head temperatures, ...): the numbers that say why one arm beats another.
    Per-head breakdowns (keys with a ``/``) stay in ``runs.jsonl``."""
    values: dict[str, list[float]] = {}
    for run in runs.values():
        last = run.history[-1] if run.history else {}
        logged = {
            k: v
            for k, v in last.items()
            if k not in BOOKKEEPING
            and "/" not in k
            and not k.startswith(("knn_accuracy", "online_probe"))
        }
        for key, value in {**{k: run.final.get(k) for k in GEOMETRY}, **logged}.items():
            if isinstance(value, int | float) and math.isfinite(value):
                values.setdefault(key, []).append(float(value))
    return {
        key: t_interval(v, confidence).to_dict() for key, v in values.items() if len(v) == len(runs)
    }


def collect(study: Study, runs: dict[tuple[str, int], RunRecord] | None = None) -> dict[str, Any]:
    """Everything the report states, as one JSON-able mapping (from ``runs``, by default
    :func:`finished_runs`)."""
    runs = finished_runs(study) if runs is None else runs
    conv = study.convergence_settings()
    arms: dict[str, Any] = {}
    values: dict[str, dict[int, float]] = {}
    by_arm: dict[str, dict[int, RunRecord]] = {}
    for arm in study.arms:
        arm_runs = {seed: run for (label, seed), run in runs.items() if label == arm.label}
        by_arm[arm.label] = arm_runs
        finals = {s: run.final for s, run in arm_runs.items()}
        values[arm.label] = {s: float(f[study.metric]) for s, f in finals.items()}
        entry: dict[str, Any] = {
            "config": arm.config.to_dict(),
            "seeds": sorted(arm_runs),
            "values": {str(s): v for s, v in values[arm.label].items()},
            "train_time_s": [float(f["train_time_s"]) for f in finals.values()],
        }
        if finals and all("best_step" in f for f in finals.values()):  # best-dev selection
            entry["best_steps"] = {str(s): int(f["best_step"]) for s, f in finals.items()}
        if arm_runs:
            entry["interval"] = t_interval(list(values[arm.label].values()), study.confidence)
            entry["interval"] = entry["interval"].to_dict()
            entry["also"] = {
                key: t_interval(
                    [float(f[key]) for f in finals.values()], study.confidence
                ).to_dict()
                for key in study.also_report
                if all(key in f for f in finals.values())
            }
            entry["why"] = _why(arm_runs, study.confidence)
            epochs, means, halves = mean_curve(arm_runs, conv["metric"])
            entry["curve"] = {"epochs": epochs, "mean": means, "half_width": halves}
            entry["convergence"] = convergence(
                epochs,
                means,
                arm.config.epochs,
                conv["window"],
                conv["tolerance"],
                conv["scale"],
                conv["min_points"],
            ).to_dict()
        arms[arm.label] = entry
    comparisons, tests = {}, {}
    for arm in study.arms:
        if not arm.judged:
            continue
        for other in arm.vs:
            name = f"{arm.label} vs {other}"
            tests[name] = result = paired(values[arm.label], values[other], study.confidence)
            checks = [arms[label].get("convergence", {}) for label in (arm.label, other)]
            converged = all(check.get("converged", False) for check in checks)
            comparisons[name] = {
                "arm": arm.label,
                "vs": other,
                "paired": None if result is None else result.to_dict(),
                "verdict": verdict(result, study.better, converged, study.min_seeds),
                # what the interval alone says, so an unconverged arm still shows its direction
                "interval_verdict": verdict(result, study.better, True, study.min_seeds),
                "converged": converged,
                "convergence_note": _few_points(checks, conv["metric"]),
                "gap_change": gap_change(
                    by_arm[arm.label], by_arm[other], conv["metric"], arm.config.epochs, conv
                ),
            }
    identical = identical_arms(study, by_arm)
    mark_duplicates(comparisons, identical)
    holm_within(comparisons)
    total = len(study.arms) * len(study.seeds)
    done = sum(len(a["seeds"]) for a in arms.values())
    return {
        "name": study.name,
        "paper": study.paper,
        "table": study.table,
        "claim": study.claim,
        "rule": study.rule(),
        "metric": study.metric,
        "better": study.better,
        "confidence": study.confidence,
        "epochs": study.epochs,
        "seeds": study.seeds,
        "convergence_settings": conv,
        "runs_finished": done,
        "runs_planned": total,
        "baseline": study.baseline,
        "arms": arms,
        "comparisons": comparisons,
        "identical_arms": identical,
        "primary": primary_results(study, comparisons, tests),
        "declaration": declaration(study.source, study.out),
        "notes": study.notes,
        "also_report": study.also_report,
        "code": code_versions(runs.values()),
    }


def _few_points(checks: list[dict[str, Any]], metric: str) -> str:
    """Why an arm's check failed when its window held too few evaluations, else ``""``."""
    for check in checks:
        if check and check.get("points", 2) < check.get("min_points", 2):
            return (
                f"the window holds {check['points']} evaluations of {metric}; the rule "
                f"needs {check['min_points']}"
            )
    return ""


def json_safe(obj: Any) -> Any:
    """``obj`` with NaN/Inf floats as ``None`` (strict JSON)."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: json_safe(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [json_safe(v) for v in obj]
    return obj


def write_report(
    study: Study, command: str, runs: dict[tuple[str, int], RunRecord] | None = None
) -> dict[str, Any]:
    """Collect, plot and write ``results.json``, ``REPORT.md`` and the finished runs'
    ``runs.jsonl`` (:mod:`.records`) into ``study.out`` (``runs``: by default
    :func:`finished_runs`)."""
    runs = finished_runs(study) if runs is None else runs
    results = collect(study, runs)
    study.out.mkdir(parents=True, exist_ok=True)
    write_records(study.out, runs)
    log = study.out / STUDY_LOG
    records = [json.loads(x) for x in log.read_text().splitlines()] if log.exists() else []
    timed = [run for run in runs.values() if "final_eval_time_s" in run.final]
    wall = {
        "total_s": sum(r["wall_time_s"] for r in records),
        "train_s": sum(sum(a["train_time_s"]) for a in results["arms"].values()),
        # evaluation after epochs and the final one, over the runs that logged both
        "eval_s": sum(
            sum(float(h.get("eval_time_s", 0.0)) for h in run.history)
            + float(run.final["final_eval_time_s"])
            for run in timed
        ),
        "eval_runs": len(timed),
    }
    results["wall_time"] = wall
    results["plots"] = plots(results, study.out)
    results["command"] = command
    text = json.dumps(json_safe(results), indent=2, allow_nan=False)
    atomic_write_text(study.out / "results.json", text + "\n")
    atomic_write_text(study.out / "REPORT.md", markdown(results, command, wall))
    return results
