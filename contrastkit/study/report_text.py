"""A study report's text: ``REPORT.md`` (:func:`markdown`) and the claims-table rows of
its comparisons (:func:`readme_rows`), from :func:`~.report.collect`'s results. Readers of
a ``results.json`` written before issue 40 (no ``holm_p``, ``identical_arms``, ``primary``
or convergence ``points``) get "-" or nothing for the missing fields.
"""

from __future__ import annotations

import math
from typing import Any

from .declared import sentence


def _fmt(x: float | None, digits: int = 4) -> str:
    return "n/a" if x is None or math.isnan(x) else f"{x:.{digits}f}"


def _scale_words(conv: dict[str, Any]) -> str:
    """How the change is scaled, in words (results before issue 40: by the window's mean)."""
    scale = conv.get("scale", "mean" if conv.get("relative") else "absolute")
    if scale == "range":
        return " (as a share of the mean curve's range over the run)"
    words = " (relative to the mean value in the window)" if scale == "mean" else ""
    return words + (
        f"; at least {conv['min_points']} evaluations in the window"
        if conv.get("min_points", 2) > 2
        else ""
    )


def _converged_cell(conv: dict[str, Any] | None) -> str:
    if not conv:
        return "-"
    if conv["converged"]:
        return "yes"
    if conv.get("points", 2) < conv.get("min_points", 2):
        return f"**no** ({conv['points']} evaluations in the window, {conv['min_points']} needed)"
    return "**no**"


def _identical_lines(identical: dict[str, Any]) -> list[str]:
    """One paragraph per arm reported once: it trained exactly as an earlier arm."""
    lines = []
    for label, e in identical.items():
        why = f" — {e['reason']}" if e.get("reason") else ""
        lines += [
            "",
            f"**{label}: identical to {e['same_as']} in every seed** ({len(e['seeds'])} "
            f"seeds: every reported number and curve, bit for bit{why}); its row and its "
            f"comparisons are {e['same_as']}'s and are not listed again.",
        ]
    return lines


def interim_verdict(done: int, planned: int) -> str:
    """The verdict cell of a study with ``done`` of its ``planned`` runs in (fewer): its
    verdicts are interim readings, not the test its config declares."""
    return f"interim: {done} of {planned} runs, no verdict"


def _interim(results: dict[str, Any]) -> str | None:
    """:func:`interim_verdict` of a partial study, ``None`` once every planned run is in."""
    done, planned = results["runs_finished"], results["runs_planned"]
    return None if done == planned else interim_verdict(done, planned)


def _selection_lines(results: dict[str, Any]) -> list[str]:
    """Runs that report the model of their best dev evaluation: the step it came from
    per seed, and a warning where it is step 0 (no training step improved dev, so the
    arm's numbers are the untrained encoder's; the convergence rule reads the curve)."""
    steps = {k: a["best_steps"] for k, a in results["arms"].items() if a.get("best_steps")}
    if not steps:
        return []
    text = "; ".join(f"{k} {', '.join(map(str, v.values()))}" for k, v in steps.items())
    lines = ["", f"Selected model (best dev evaluation), its step per seed: {text}."]
    for label, by_seed in steps.items():
        untrained = [s for s, step in by_seed.items() if step == 0]
        if untrained:
            lines.append(
                f"**{label}: the untrained encoder was selected in {len(untrained)} of "
                f"{len(by_seed)} seeds** (best dev step 0): no training step improved dev "
                "there, so those numbers measure no training; convergence is read on the "
                "dev curve as it trains, not on the selected model."
            )
    return lines


def _primary_lines(results: dict[str, Any], pct: str) -> list[str]:
    """The pre-registered comparisons: raw p, Holm p over the study's primaries, the
    verdict read from it and the interval's, and where the paper-level reading is."""
    primary = results.get("primary") or []
    if not primary:
        return []
    alpha = 1 - results["confidence"]
    lines = [
        f"**Pre-registered primary comparison{'s' * (len(primary) > 1)}.** Verdict from "
        f"the Holm-adjusted p: **holds** if it is below {alpha:g}, the mean difference has "
        f"the claimed sign and both arms converged (interval verdict beside it). Holm runs "
        f"here over this study's primaries; the paper-level reading, over every primary "
        f"comparison of {results['paper']}'s confirmation studies, is in "
        f"[CONFIRMATION.md](../CONFIRMATION.md).",
        "",
        f"| primary comparison | paired Δ [{pct} CI] | p | Holm p (study) | verdict (Holm) | "
        "interval verdict |",
        "|---|---|---|---|---|---|",
    ]
    interim = _interim(results)
    for entry in primary:
        diff = results["comparisons"][entry["comparison"]]["paired"]
        verdicts = f"**{entry['verdict']}** | {entry['interval_verdict']}"
        lines.append(
            f"| {entry['comparison']} | {interval_cell(diff['difference']) if diff else '-'} | "
            f"{_fmt(entry['p'], 3)} | {_fmt(entry['holm_p_study'], 3)} | "
            + (verdicts if interim is None else f"{interim} | -")
            + " |"
        )
    return [*lines, ""]


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
    notes = [comp["convergence_note"]] if comp.get("convergence_note") else []
    if comp["verdict"] != comp["interval_verdict"]:
        notes.append(f"interval: {comp['interval_verdict']}")
    return f"**{comp['verdict']}**" + (f" ({'; '.join(notes)})" if notes else "")


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
        f"**Verdict rule (declared in the config):** {results['rule']}",
        "",
        sentence(results.get("declaration")),
        "",
        *_primary_lines(results, pct),
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
    identical = results.get("identical_arms", {})
    for label, arm in results["arms"].items():
        if label in identical:
            continue
        conv = arm.get("convergence")
        times = arm["train_time_s"]
        cells = [
            label,
            interval_cell(arm.get("interval")),
            *(interval_cell(arm.get("also", {}).get(k)) for k in results["also_report"]),
            str(len(arm["seeds"])),
            _fmt(conv["change"]) if conv else "-",
            _converged_cell(conv),
            f"{sum(times) / len(times):.0f}" if times else "-",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    conv = results["convergence_settings"]
    interim = _interim(results)
    lines += [
        *_selection_lines(results),
        *_identical_lines(identical),
        "",
        f"| comparison | paired Δ [{pct} CI] | paired seeds | t | p | Holm p (study) | "
        f"verdict | Δ {conv['metric']} change (last window) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, comp in results["comparisons"].items():
        if "duplicate_of" in comp:
            continue
        diff, gap = comp["paired"], comp.get("gap_change")
        cells = [
            name,
            interval_cell(diff["difference"]) if diff else "-",
            str(len(diff["seeds"])) if diff else "0",
            _fmt(diff["t"], 2) if diff else "-",
            _fmt(diff["p"], 3) if diff else "-",
            _fmt(comp.get("holm_p"), 3),
            interim or verdict_cell(comp),
            "-" if gap is None else _fmt(gap),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    lines += [
        "",
        f"Intervals are Student-t over seeds; Δ is paired over the seeds both arms finished "
        f"(paired t-test, two-sided p). Holm p (study): that p adjusted by Holm's step-down "
        f"procedure over the study's distinct comparisons, descriptive beside the verdict, "
        f"which reads the interval. Convergence: least-squares change of the mean "
        f"`{conv['metric']}` curve over the last {100 * conv['window']:g} % of epochs, "
        f"tolerance {conv['tolerance']:g}{_scale_words(conv)}. "
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
        if label in results.get("identical_arms", {}):
            continue
        why = arm.get("why", {})
        lines.append(f"| {label} | " + " | ".join(interval_cell(why.get(k)) for k in keys) + " |")
    return [*lines, ""]


# the README's words for the metrics
SHORT_METRIC = {"linear_accuracy": "linear", "knn_accuracy": "kNN", "head_mae": "MAE"}


def readme_rows(results: dict[str, Any], folder: str) -> list[str]:
    """One claims-table row per distinct comparison with at least one paired seed: study,
    comparison, Δ with interval, seeds × epochs, p, Holm p within the study, verdict (read
    from ``results.json``); a comparison that repeats another through identical arms is
    left out, and each identical arm gets one row saying so."""
    metric = SHORT_METRIC.get(results["metric"], results["metric"])
    study = f"[{results['paper']} {results['table']}]({folder}/REPORT.md)"
    rows = []
    for name, comp in results["comparisons"].items():
        diff = comp["paired"]
        if not diff or "duplicate_of" in comp:
            continue  # no seed finished by both arms yet, or listed already
        rows.append(
            f"| {study} | {name} | {metric} Δ {interval_cell(diff['difference'])} | "
            f"{len(diff['seeds'])} × {results['epochs']} | {_fmt(diff['p'], 3)} | "
            f"{_fmt(comp.get('holm_p'), 3)} | {verdict_cell(comp)} |"
        )
    for label, e in results.get("identical_arms", {}).items():
        why = f" — {e['reason']}" if e.get("reason") else ""
        rows.append(
            f"| {study} | {label}: identical to {e['same_as']} in every seed{why} | - | "
            f"{len(e['seeds'])} × {results['epochs']} | - | - | not listed twice |"
        )
    return rows
