"""Rebuild the README's claims table from the committed study reports, and nothing else.

Every row comes from a ``docs/studies/<study>/results.json`` (written by
``contrastkit study CONFIG``), through the same ``readme_rows`` the ``--readme-rows`` flag
prints; rows are sorted by study title, then in each report's comparison order.

    python docs/studies/readme_table.py            # print the table
    python docs/studies/readme_table.py --write    # replace the table in README.md
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from contrastkit.study.report import readme_rows

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
HEADER = (
    "| study | claim tested (arm vs compared arm) | paired Δ [95 % CI] | seeds × epochs "
    "| verdict |"
)


def table() -> list[str]:
    studies = []
    for path in sorted(HERE.glob("*/results.json")):
        results = json.loads(path.read_text())
        folder = path.parent.relative_to(ROOT).as_posix()
        studies.append((f"{results['paper']} {results['table']}", readme_rows(results, folder)))
    rows = [row for _, rows in sorted(studies, key=lambda s: s[0]) for row in rows]
    return [HEADER, "|---|---|---|---|---|", *rows]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="replace the table in README.md")
    args = parser.parse_args()
    lines = table()
    if not args.write:
        print("\n".join(lines))
        return
    readme = ROOT / "README.md"
    text = readme.read_text().split("\n")
    start = text.index(HEADER)
    end = next(i for i in range(start, len(text)) if not text[i].startswith("|"))
    readme.write_text("\n".join([*text[:start], *lines, *text[end:]]))
    print(f"{readme}: {len(lines) - 2} rows")


if __name__ == "__main__":
    main()
