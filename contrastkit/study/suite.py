"""A suite: one paper table whose columns are separate studies, run and reported by one
command. MACL Table 9 is the example: batch 64, 256 and 1024 are three studies (each batch
size has its own runs and its own baseline), gathered by ``configs/studies/macl_table9.yaml``.

Keys:

* ``name``, ``paper``, ``table``, ``claim``, ``notes``: as a study's;
* ``out``: the suite folder, which gets ``REPORT.md`` and ``suite.json`` (not
  ``results.json``: the README's claims rows come from the parts' reports only);
* ``parts``: the study configs, one column each, as paths relative to the suite's file.

The parts keep everything of their own (runs, ``runs.jsonl``, reports, verdict rules), so
``contrastkit study PART`` and the suite train and report the same runs. The suite adds no
statistics: each cell is copied from its part's :func:`~.report.collect`. Parts must share
``metric``, ``better`` and ``confidence`` so that a row reads across.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..rundir import atomic_write_text
from ..training import load_yaml
from .config import Study, load_study
from .report import interval_cell, json_safe, verdict_cell

SUITE_KEYS = {"name", "paper", "table", "claim", "out", "parts", "notes"}
SUMMARY = "suite.json"


@dataclass
class Suite:
    """A validated suite: its parts as loaded studies, with the configs they came from."""

    name: str
    paper: str
    table: str
    claim: str
    out: Path
    parts: list[Study]
    sources: list[Path]
    notes: str = ""


def load_config(
    path: str | Path,
    runs_dir: str | Path | None = None,
    out: str | Path | None = None,
    settings: Mapping[str, object] | None = None,
) -> Study | Suite:
    """A study or, when the file declares ``parts``, a suite. For a suite, ``runs_dir``
    and ``out`` are roots: part P's runs go to ``<runs_dir>/<P's name>`` and its report
    to ``<out>/<P's name>``, so the parts never share a directory. ``settings``: this
    machine's data paths and execution (:func:`~contrastkit.study.config.check_settings`),
    for every arm of every part."""
    path = Path(path)
    data = load_yaml(path)
    if "parts" not in data:
        return load_study(path, runs_dir=runs_dir, out=out, settings=settings)
    unknown = sorted(set(data) - SUITE_KEYS)
    if unknown:
        raise ValueError(
            f"unknown suite key(s) {', '.join(unknown)}; known: {', '.join(sorted(SUITE_KEYS))}"
        )
    names = data["parts"]
    if not isinstance(names, list) or not names or not all(isinstance(p, str) for p in names):
        raise ValueError(f"suite config {str(path)!r}: parts must be a list of study configs")
    if not isinstance(data.get("claim"), str):
        raise ValueError(f"suite config {str(path)!r} needs 'claim'")
    sources = [path.parent / name for name in names]
    parts = []
    for source in sources:
        if not source.is_file():
            raise ValueError(f"suite config {str(path)!r}: part {str(source)!r} does not exist")
        if "parts" in load_yaml(source):
            raise ValueError(f"suite config {str(path)!r}: part {str(source)!r} is a suite")
        part = load_study(source, settings=settings)
        roots = {"runs_dir": runs_dir, "out": out}
        moved = {key: Path(root) / part.name for key, root in roots.items() if root is not None}
        parts.append(dataclasses.replace(part, **moved))
    if len({p.name for p in parts}) != len(parts):
        raise ValueError(f"suite config {str(path)!r}: parts must have distinct names")
    for key in ("metric", "better", "confidence"):
        if len({getattr(p, key) for p in parts}) > 1:
            raise ValueError(f"suite config {str(path)!r}: parts must share {key!r}")
    return Suite(
        name=str(data.get("name", path.stem)),
        paper=str(data.get("paper", "")),
        table=str(data.get("table", "")),
        claim=data["claim"],
        out=Path(out or data.get("out") or Path("runs/studies") / path.stem),
        parts=parts,
        sources=sources,
        notes=str(data.get("notes", "")),
    )


def summary(suite: Suite, results: list[dict[str, Any]]) -> dict[str, Any]:
    """``suite.json``: per part (``results``: each part's :func:`~.report.collect`, in
    order), its runs, epochs, every arm's interval and every comparison's paired
    difference and verdicts."""
    parts = []
    for part, res in zip(suite.parts, results, strict=True):
        parts.append(
            {
                "name": part.name,
                "table": part.table,
                "report": os.path.relpath(part.out / "REPORT.md", suite.out),
                "runs_finished": res["runs_finished"],
                "runs_planned": res["runs_planned"],
                "epochs": res["epochs"],
                "arms": {label: arm.get("interval") for label, arm in res["arms"].items()},
                "comparisons": {
                    name: {
                        "difference": comp["paired"]["difference"] if comp["paired"] else None,
                        "seeds": comp["paired"]["seeds"] if comp["paired"] else [],
                        "verdict": comp["verdict"],
                        "interval_verdict": comp["interval_verdict"],
                    }
                    for name, comp in res["comparisons"].items()
                },
            }
        )
    first = suite.parts[0]
    return {
        "name": suite.name,
        "paper": suite.paper,
        "table": suite.table,
        "claim": suite.claim,
        "metric": first.metric,
        "better": first.better,
        "confidence": first.confidence,
        "parts": parts,
    }


def markdown(data: dict[str, Any], command: str) -> str:
    """The suite's ``REPORT.md``: one column per part, arms then comparisons by row."""
    pct = f"{100 * data['confidence']:g} %"
    parts = data["parts"]
    head = "| " + " | ".join(p["table"] or p["name"] for p in parts) + " |"
    rule = "|---|" + "---|" * len(parts)
    lines = [
        f"# {data['paper']} {data['table']}: {data['name']}",
        "",
        f"**Claim (paper):** {data['claim']}",
        "",
        "Each column is one study, with its own runs, its own verdict rule (declared in its "
        "config before its runs) and its own report, linked below; every cell here is "
        "copied from that report.",
        "",
        "| study | runs finished | epochs | report |",
        "|---|---|---|---|",
        *(
            f"| {p['table'] or p['name']} | {p['runs_finished']} of {p['runs_planned']} | "
            f"{p['epochs']} | [{p['name']}]({p['report']}) |"
            for p in parts
        ),
        "",
        f"| arm: {data['metric']} mean [{pct} CI] " + head,
        rule,
    ]
    arms = list(dict.fromkeys(label for p in parts for label in p["arms"]))
    for label in arms:
        lines.append(
            f"| {label} | " + " | ".join(interval_cell(p["arms"].get(label)) for p in parts) + " |"
        )
    lines += ["", f"| comparison: paired Δ [{pct} CI], verdict " + head, rule]
    for name in dict.fromkeys(n for p in parts for n in p["comparisons"]):
        cells = []
        for p in parts:
            comp = p["comparisons"].get(name)
            if not comp or comp["difference"] is None:  # not in this part, or no paired seed
                cells.append("-")
            else:
                cells.append(f"{interval_cell(comp['difference'])} {verdict_cell(comp)}")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines += ["", f"Reproduce: `{command}`"]
    if data.get("notes"):
        lines += ["", data["notes"].strip()]
    return "\n".join(lines) + "\n"


def write_suite_report(suite: Suite, results: list[dict[str, Any]], command: str) -> dict[str, Any]:
    """Write ``suite.json`` and ``REPORT.md`` into ``suite.out`` from the parts'
    ``results`` (:func:`~.report.collect`, in part order)."""
    data = summary(suite, results)
    suite.out.mkdir(parents=True, exist_ok=True)
    text = json.dumps(json_safe(data), indent=2, allow_nan=False)
    atomic_write_text(suite.out / SUMMARY, text + "\n")
    atomic_write_text(suite.out / "REPORT.md", markdown(data, command))
    return data
