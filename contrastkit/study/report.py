"""A study's report from its finished runs: ``results.json``, ``REPORT.md``, ``curves.png``
and ``differences.png`` in the study folder.

Only finished runs (``final.json`` at the study's epochs) count. Per arm: the metric's
mean and t-interval over seeds, the mean learning curve and its convergence check, the
mean training time per run, and the "why" numbers (:func:`_why`: the final encoder's
alignment and uniformity, the loss's last-epoch diagnostics). Per judged arm: the paired
difference to the arm it is compared with, its t-interval, the paired t-test and the
verdict of :func:`~.stats.verdict`.
"""

from __future__ import annotations

import json
import math
from typing import Any

from ..rundir import atomic_write_text
from ..training import TIMING_KEYS
from .config import Study
from .curves import gap_change, mean_curve, plots
from .records import RunRecord, code_versions, write_records
from .runner import STUDY_LOG, survey
from .stats import convergence, paired, t_interval, verdict


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


# final.json: Wang & Isola (2020) Eqs. 4-5; label-aware runs add LASCon §4.2's versions
GEOMETRY = ("alignment", "uniformity", "label_alignment", "label_uniformity")
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
                conv["relative"],
            ).to_dict()
        arms[arm.label] = entry
    comparisons = {}
    for arm in study.arms:
        if not arm.judged:
            continue
        for other in arm.vs:
            result = paired(values[arm.label], values[other], study.confidence)
            converged = all(
                arms[label].get("convergence", {}).get("converged", False)
                for label in (arm.label, other)
            )
            comparisons[f"{arm.label} vs {other}"] = {
                "arm": arm.label,
                "vs": other,
                "paired": None if result is None else result.to_dict(),
                "verdict": verdict(result, study.better, converged, study.min_seeds),
                # what the interval alone says, so an unconverged arm still shows its direction
                "interval_verdict": verdict(result, study.better, True, study.min_seeds),
                "gap_change": gap_change(
                    by_arm[arm.label], by_arm[other], conv["metric"], arm.config.epochs, conv
                ),
            }
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
        "notes": study.notes,
        "also_report": study.also_report,
        "code": code_versions(runs.values()),
    }


def _fmt(x: float, digits: int = 4) -> str:
    return "n/a" if x is None or math.isnan(x) else f"{x:.{digits}f}"


def interval_cell(interval: dict[str, Any] | None) -> str:
    """A table cell for a :class:`~.stats.Interval` dict: ``mean [low, high]``."""
    if not interval:
        return "-"
    if interval["n"] < 2:
        return f"{_fmt(interval['mean'])} (1 seed)"
    return f"{_fmt(interval['mean'])} [{_fmt(interval['low'])}, {_fmt(interval['high'])}]"


def verdict_cell(comp: dict[str, Any] | None) -> str:
    """A comparison's verdict in bold, with the interval's own verdict when they differ."""
    if not comp:
        return "-"
    if comp["verdict"] == comp["interval_verdict"]:
        return f"**{comp['verdict']}**"
    return f"**{comp['verdict']}** (interval: {comp['interval_verdict']})"


def _code_line(code: dict[str, int]) -> list[str]:
    """The code that trained the runs, when any run recorded it (commits as in git)."""
    if set(code) <= {"not recorded"}:
        return []
    parts = "; ".join(f"{name}: {n} run{'s' * (n != 1)}" for name, n in code.items())
    return ["", f"Code that trained the runs (git commit in each `final.json`): {parts}."]


def _evaluation_time(wall: dict[str, float], runs: int) -> str:
    """The wall-time line's end: the evaluation minutes, if any run logged them."""
    if not wall.get("eval_runs"):
        return "."
    which = (
        "" if wall["eval_runs"] == runs else f" ({wall['eval_runs']:.0f} of {runs} runs logged it)"
    )
    return f"; evaluation (after epochs and final): {wall['eval_s'] / 60:.1f} min{which}."


def markdown(results: dict[str, Any], command: str, wall: dict[str, float]) -> str:
    """``REPORT.md``: claim, rule, the table of arms and comparisons, convergence, time."""
    pct = f"{100 * results['confidence']:g} %"
    lines = [
        f"# {results['paper']} {results['table']}: {results['name']}",
        "",
        f"**Claim (paper):** {results['claim']}",
        "",
        f"**Verdict rule (declared in the config before the runs):** {results['rule']}",
        "",
        f"Runs finished: {results['runs_finished']} of {results['runs_planned']} "
        f"({len(results['seeds'])} seeds × {len(results['arms'])} arms, "
        f"{results['epochs']} epochs)."
        + ("" if results["runs_finished"] == results["runs_planned"] else " **Partial study.**"),
        "",
        f"| arm | {results['metric']} mean [{pct} CI] | "
        + "".join(f"{k} [{pct} CI] | " for k in results["also_report"])
        + "seeds | curve change (last window) | converged | train s/run |",
        "|---|---|" + "---|" * len(results["also_report"]) + "---|---|---|---|",
    ]
    for label, arm in results["arms"].items():
        conv = arm.get("convergence")
        times = arm["train_time_s"]
        cells = [
            label,
            interval_cell(arm.get("interval")),
            *(interval_cell(arm.get("also", {}).get(k)) for k in results["also_report"]),
            str(len(arm["seeds"])),
            _fmt(conv["change"]) if conv else "-",
            ("yes" if conv["converged"] else "**no**") if conv else "-",
            f"{sum(times) / len(times):.0f}" if times else "-",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    conv = results["convergence_settings"]
    lines += [
        "",
        f"| comparison | paired Δ [{pct} CI] | paired seeds | t | p | verdict | "
        f"Δ {conv['metric']} change (last window) |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, comp in results["comparisons"].items():
        diff, gap = comp["paired"], comp.get("gap_change")
        cells = [
            name,
            interval_cell(diff["difference"]) if diff else "-",
            str(len(diff["seeds"])) if diff else "0",
            _fmt(diff["t"], 2) if diff else "-",
            _fmt(diff["p"], 3) if diff else "-",
            verdict_cell(comp),
            "-" if gap is None else _fmt(gap),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    lines += [
        "",
        f"Intervals are Student-t over seeds; Δ is paired over the seeds both arms finished "
        f"(paired t-test, two-sided p). Convergence: least-squares change of the mean "
        f"`{conv['metric']}` curve over the last {100 * conv['window']:g} % of epochs, "
        f"tolerance {conv['tolerance']:g}{' (relative)' if conv['relative'] else ''}. "
        f"The last column is that change for the mean paired gap curve (arm − compared "
        f"arm): a small one beside **not converged** means both arms still move but their "
        f"gap does not. It describes; the verdict rule does not use it.",
        *_why_table(results, pct),
        "![learning curves](curves.png)",
        "",
        "![paired differences](differences.png)",
        "",
        f"Wall time of the study's runs: {wall.get('total_s', 0) / 60:.1f} min, summed over "
        "the runs and processes that logged it (`study_log.jsonl`; evaluation included; a "
        "process killed mid-run logs nothing); training alone, by each finished run's own "
        f"clock (killed stretches included): {wall.get('train_s', 0) / 60:.1f} min"
        + _evaluation_time(wall, results["runs_finished"]),
        *_code_line(results.get("code", {})),
        "",
        f"Reproduce: `{command}`",
    ]
    if results.get("notes"):
        lines += ["", results["notes"].strip()]
    return "\n".join(lines) + "\n"


def _why_table(results: dict[str, Any], pct: str) -> list[str]:
    """The report's "why" section: geometry and loss diagnostics per arm (a blank line
    when no arm has any)."""
    keys = list(dict.fromkeys(k for arm in results["arms"].values() for k in arm.get("why", {})))
    if not keys:
        return [""]
    lines = [
        "",
        f"**Why (mean [{pct} CI] over seeds).** `alignment` (lower: two views of a test "
        "sample land closer) and `uniformity` (lower: features spread more evenly over the "
        "sphere) of the final encoder's normalised features on two views of the test split "
        "(Wang & Isola, 2020, Eqs. 4-5); `label_alignment` (lower: samples with similar "
        "labels land closer) and `label_uniformity` (lower: more spread), LASCon §4.2's "
        "label-aware versions, for runs with labels; every other column is a diagnostic the "
        "run logged (the loss's own; for SimCSE runs also the gradient-paradigm paper's "
        "§3.2 batch geometry, `contrastkit.text.diagnostics`), averaged over its last "
        "epoch; a `_step_sd` column is its standard deviation over that epoch's steps (how "
        "much it moves from batch to batch).",
        "",
        "| arm | " + " | ".join(keys) + " |",
        "|---|" + "---|" * len(keys),
    ]
    for label, arm in results["arms"].items():
        why = arm.get("why", {})
        lines.append(f"| {label} | " + " | ".join(interval_cell(why.get(k)) for k in keys) + " |")
    return [*lines, ""]


# the README's words for the metrics
SHORT_METRIC = {"linear_accuracy": "linear", "knn_accuracy": "kNN", "head_mae": "MAE"}


def readme_rows(results: dict[str, Any], folder: str) -> list[str]:
    """One README claims-table row per comparison with at least one paired seed: study,
    comparison, Δ with interval, seeds × epochs, verdict (read from ``results.json``)."""
    metric = SHORT_METRIC.get(results["metric"], results["metric"])
    rows = []
    for name, comp in results["comparisons"].items():
        diff = comp["paired"]
        if not diff:
            continue  # no seed finished by both arms yet: nothing to show
        n = len(diff["seeds"])
        cell = interval_cell(diff["difference"])
        rows.append(
            f"| [{results['paper']} {results['table']}]({folder}/REPORT.md) | {name} | "
            f"{metric} Δ {cell} | {n} × {results['epochs']} | "
            f"{verdict_cell(comp)} |"
        )
    return rows


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
