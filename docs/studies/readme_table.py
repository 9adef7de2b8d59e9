"""Rebuild the README's claims table and its table of pending studies from the committed
study reports, and nothing else.

Every claims row comes from a ``docs/studies/<study>/results.json`` (written by
``contrastkit study CONFIG``), through the same ``readme_rows`` the ``--readme-rows`` flag
prints; rows are sorted by study title, then in each report's comparison order. A study
config under ``configs/studies/`` whose report is missing or counts fewer runs than it
plans is a pending row, with the epochs its convergence probe suggests when it has one.

    python docs/studies/readme_table.py            # print the tables
    python docs/studies/readme_table.py --write    # replace them in README.md
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from contrastkit.study import Suite, load_config
from contrastkit.study.report import readme_rows

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
HEADER = (
    "| study | claim tested (arm vs compared arm) | paired Δ [95 % CI] | seeds × epochs | verdict |"
)
PENDING = "| study | command | state |"


def table() -> list[str]:
    studies = []
    for path in sorted(HERE.glob("*/results.json")):
        results = json.loads(path.read_text())
        folder = path.parent.relative_to(ROOT).as_posix()
        studies.append((f"{results['paper']} {results['table']}", readme_rows(results, folder)))
    rows = [row for _, rows in sorted(studies, key=lambda s: s[0]) for row in rows]
    return [HEADER, "|---|---|---|---|---|", *rows]


def _state(folder: Path) -> str | None:
    """What a pending study's folder says of it; ``None`` for a finished study."""
    state = "not run"
    if (folder / "results.json").exists():
        results = json.loads((folder / "results.json").read_text())
        done, planned = results["runs_finished"], results["runs_planned"]
        if done == planned:
            return None
        state = f"partial: {done} of {planned} runs ({results['epochs']} epochs)"
    if (folder / "probe.json").exists():
        probe = json.loads((folder / "probe.json").read_text())
        epochs = probe["suggested_epochs"] or f"none up to {probe['epochs_reached']}"
        state += f"; probe ({probe['arm']}, seed {probe['seed']}): epochs {epochs}"
    return state


def pending() -> list[str]:
    rows = []
    for config in sorted((ROOT / "configs" / "studies").glob("*.yaml")):
        study = load_config(config)
        if isinstance(study, Suite):  # its parts are rows of their own
            continue
        state = _state(ROOT / study.out)
        if state is not None:
            command = f"`contrastkit study {config.relative_to(ROOT).as_posix()}`"
            rows.append(
                (
                    f"{study.paper} {study.table}",
                    f"| {study.paper} {study.table} | {command} | {state} |",
                )
            )
    return [PENDING, "|---|---|---|", *(row for _, row in sorted(rows))]


def _replace(text: list[str], header: str, lines: list[str]) -> list[str]:
    start = text.index(header)
    end = next(i for i in range(start, len(text)) if not text[i].startswith("|"))
    return [*text[:start], *lines, *text[end:]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="replace the table in README.md")
    args = parser.parse_args()
    claims, waiting = table(), pending()
    if not args.write:
        print("\n".join([*claims, "", *waiting]))
        return
    readme = ROOT / "README.md"
    text = _replace(readme.read_text().split("\n"), HEADER, claims)
    readme.write_text("\n".join(_replace(text, PENDING, waiting)))
    print(f"{readme}: {len(claims) - 2} claims rows, {len(waiting) - 2} pending studies")


if __name__ == "__main__":
    main()
