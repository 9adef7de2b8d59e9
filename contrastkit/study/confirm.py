"""The paper-level reading of the confirmation studies (issue 40): every pre-registered
comparison (``primary``) of one paper's study configs is one family, corrected together
by Holm (:func:`~.stats.holm`), whatever config declares it.

Each primary comparison is read from its study's committed ``results.json``:

* no report yet, or a partial one: no verdict ("no report yet", "running: k of n runs");
  the comparison still counts in its paper's family (as ``p = 1``, so every adjusted p
  read before the family is complete is an upper bound of the final one, and a
  ``holds`` read then stays a ``holds``);
* a complete report: raw p of the paired t-test, the Holm-adjusted p over the paper's
  family, and the verdict :func:`~.stats.adjusted_verdict` reads from it (``holds`` only
  if the adjusted p is below ``1 − confidence``, the difference has the claimed sign and
  both arms converged on the study's ``convergence.metric`` curve), beside the interval
  verdict of the exploratory rule.

:func:`confirmation` builds the families; :func:`markdown` is ``docs/studies/CONFIRMATION.md``
and :func:`readme_rows` the README's claims table, one row per primary comparison.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .catalog import anchor, load_studies, table_key
from .report_text import SHORT_METRIC, _fmt, interval_cell
from .stats import Interval, Paired, adjusted_verdict, holm

ABSENT = "no report yet"


def _entry(root: Path, config: Path, study: Any, arm: str, vs: str) -> dict[str, Any]:
    """One primary comparison as its study's committed report states it."""
    name = f"{arm} vs {vs}"
    entry: dict[str, Any] = {
        "paper": study.paper,
        "table_key": table_key(study.paper, study.table),
        "table": study.table,
        "config": config.relative_to(root).as_posix(),
        "report": (study.out / "REPORT.md").as_posix(),
        "comparison": name,
        "metric": study.metric,
        "state": ABSENT,
        "paired": None,
        "p": None,
    }
    path = root / study.out / "results.json"
    if not path.exists():
        return entry
    results = json.loads(path.read_text())
    done, planned = results["runs_finished"], results["runs_planned"]
    if done < planned:
        entry["state"] = f"running: {done} of {planned} runs reported"
        return entry
    comp = results["comparisons"][name]
    entry.update(
        state="finished",
        epochs=results["epochs"],
        paired=comp["paired"],
        p=comp["paired"]["p"] if comp["paired"] else None,
        converged=comp["verdict"] != "not converged",
        interval_verdict=comp["interval_verdict"],
        better=results["better"],
        confidence=results["confidence"],
    )
    return entry


def _paired(data: dict[str, Any] | None) -> Paired | None:
    if data is None:
        return None
    d = data["difference"]
    interval = Interval(d["mean"], d["low"], d["high"], d["n"], d["std"])
    return Paired(data["seeds"], interval, data["t"], data["p"])


def confirmation(root: Path) -> dict[str, list[dict[str, Any]]]:
    """Paper → its primary comparisons, each with ``holm_p`` (over the paper's family,
    ``None`` until its study is complete) and ``verdict``."""
    papers: dict[str, list[dict[str, Any]]] = {}
    for config, study in load_studies(root):
        for arm, vs in study.primary:
            entry = _entry(root, config, study, arm, vs)
            entry["min_seeds"] = study.min_seeds
            papers.setdefault(study.paper, []).append(entry)
    for entries in papers.values():
        for entry, adjusted in zip(entries, holm([e["p"] for e in entries]), strict=True):
            entry["family_size"] = len(entries)
            entry["holm_p"] = adjusted
            entry["verdict"] = (
                adjusted_verdict(
                    _paired(entry["paired"]),
                    adjusted,
                    entry["better"],
                    entry["converged"],
                    entry["min_seeds"],
                    entry["confidence"],
                )
                if entry["state"] == "finished"
                else entry["state"]
            )
    return dict(sorted(papers.items()))


def _cells(entry: dict[str, Any]) -> list[str]:
    """Δ, p, Holm p and the two verdicts of one primary comparison."""
    if entry["state"] != "finished":
        return ["-", "-", "-", entry["state"], "-"]
    metric = SHORT_METRIC.get(entry["metric"], entry["metric"])
    diff = entry["paired"]
    delta = f"{metric} Δ {interval_cell(diff['difference'])}" if diff else "-"
    return [
        delta,
        _fmt(entry["p"], 3),
        f"{_fmt(entry['holm_p'], 3)} (m = {entry['family_size']})",
        f"**{entry['verdict']}**",
        entry["interval_verdict"],
    ]


def readme_rows(papers: dict[str, list[dict[str, Any]]], claims_page: str) -> list[str]:
    """The README claims table: one row per primary comparison, linking its report and
    the exploratory rows of its paper table on ``claims_page``."""
    rows = []
    for entries in papers.values():
        for e in entries:
            link = e["config"] if e["state"] == ABSENT else e["report"]  # no report: the config
            rows.append(
                f"| [{e['paper']} {e['table']}]({link}) | {e['comparison']} | "
                + " | ".join(_cells(e))
                + f" | [{e['table_key']}]({claims_page}#{anchor(e['table_key'])}) |"
            )
    return rows


README_HEADER = (
    "| confirmation study | primary comparison (pre-registered) | paired Δ [95 % CI] | p | "
    "Holm p (paper) | verdict (Holm) | interval verdict | exploratory studies |"
)


def _link(entry: dict[str, Any]) -> str:
    """The row's link from ``docs/studies/``: its report beside the page (so the site finds
    it too), or, with no report yet, its config in the repository."""
    if entry["state"] == ABSENT:
        return f"../../{entry['config']}"
    try:
        return Path(entry["report"]).relative_to("docs/studies").as_posix()
    except ValueError:  # a report kept elsewhere in the repository
        return f"../../{entry['report']}"


def markdown(papers: dict[str, list[dict[str, Any]]]) -> str:
    """``docs/studies/CONFIRMATION.md``: each paper's family, corrected together."""
    lines = [
        "# Confirmation studies: the pre-registered comparisons, per paper",
        "",
        "Generated by `docs/studies/readme_table.py --write` from the committed reports; do "
        "not edit. Each confirmation config (`configs/studies/*.yaml` with `primary:`) "
        "declares its primary comparison, on fresh seeds, before any of its runs. The "
        "primary comparisons of one paper form one family: their paired t-test p-values "
        "are adjusted together by Holm's step-down procedure "
        "(`contrastkit/study/stats.py`, `holm`). A comparison holds only if its adjusted p "
        "is below 1 − confidence (0.05), the mean difference has the claimed sign and both "
        "arms converged on the study's `convergence.metric` curve; the interval verdict of "
        "the exploratory rule stands beside it. A comparison whose study has no complete "
        "report yet has no verdict and counts in its family as p = 1, so every adjusted p "
        "read before then can only fall once it finishes.",
        "",
    ]
    for paper, entries in papers.items():
        lines += [
            f"## {paper}",
            "",
            f"{len(entries)} primary comparison{'s' * (len(entries) != 1)} in the family.",
            "",
            "| confirmation study | config | primary comparison | paired Δ [95 % CI] | p | "
            "Holm p (paper) | verdict (Holm) | interval verdict |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for e in entries:
            cells = _cells(e)
            lines.append(
                f"| [{e['table']}]({_link(e)}) | "
                f"`{e['config']}` | {e['comparison']} | " + " | ".join(cells) + " |"
            )
        lines.append("")
    return "\n".join(lines)
