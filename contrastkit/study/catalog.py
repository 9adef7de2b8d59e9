"""The study configs of a repository grouped by the paper table they study (issue 40).

One paper table is often studied under several protocols (a schedule, a data set, more
epochs, fresh seeds): each is a config of its own. :func:`table_key` names the table
("MACL Table 9", "AMCL Fig. 4 left") from a config's ``paper`` and ``table``, and
:func:`protocol_versions` lists a table's configs with their declaration dates
(:mod:`.declared`) and which of them is the pre-registered confirmation (``primary``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from .config import Study
from .declared import comment_date, commit_date
from .suite import Suite, load_config

TABLE = re.compile(r"^(Tables?|Fig\.)\s+([A-Z]?\.?\d+)(\s+(?:left|right))?")


def table_key(paper: str, table: str) -> str:
    """``"<paper> Table N"`` (or ``Fig. N left``): the paper table a study's ``table``
    starts with ("Tables 2 and 4 (...)" is Table 2's); the whole ``table`` otherwise."""
    match = TABLE.match(table)
    if not match:
        return f"{paper} {table}".strip()
    kind = "Table" if match.group(1).startswith("Table") else "Fig."
    return f"{paper} {kind} {match.group(2)}{match.group(3) or ''}"


def anchor(title: str) -> str:
    """The anchor GitHub gives a ``## title`` heading."""
    kept = "".join(c for c in title.lower() if c.isalnum() or c in " -_")
    return kept.replace(" ", "-")


@dataclass(frozen=True)
class Version:
    """One config studying a paper table."""

    config: str  # relative to the repository root
    study: Study
    comment_date: str | None
    committed: str | None

    @property
    def primary(self) -> bool:
        return bool(self.study.primary)


def load_studies(root: Path) -> list[tuple[Path, Study]]:
    """Every study config under ``root/configs/studies`` (suites left out: their parts
    are configs of their own), in file-name order."""
    out = []
    for path in sorted((root / "configs" / "studies").glob("*.yaml")):
        study = load_config(path)
        if not isinstance(study, Suite):
            out.append((path, study))
    return out


def protocol_versions(root: Path) -> dict[str, list[Version]]:
    """Paper table → its configs, in order of declaration (commit date, then name)."""
    groups: dict[str, list[Version]] = {}
    for path, study in load_studies(root):
        version = Version(
            path.relative_to(root).as_posix(), study, comment_date(path), commit_date(path)
        )
        groups.setdefault(table_key(study.paper, study.table), []).append(version)
    for versions in groups.values():
        versions.sort(key=lambda v: (v.committed or "9999", v.config))
    return dict(sorted(groups.items()))


def _day(date: str | None) -> str:
    return date[:16].replace("T", " ") if date else "not committed"


def versions_table(versions: list[Version], link_root: str) -> list[str]:
    """A paper table's protocol versions as a markdown table; ``link_root`` prefixes the
    config paths (relative to the page that shows them)."""
    lines = [
        "| protocol version (config) | table as studied | declared (header comment) | "
        "committed (git, UTC) | role |",
        "|---|---|---|---|---|",
    ]
    for v in versions:
        role = (
            "pre-registered primary: " + ", ".join(f"{arm} − {vs}" for arm, vs in v.study.primary)
            if v.primary
            else "exploratory"
        )
        lines.append(
            f"| [{Path(v.config).name}]({link_root}{v.config}) | {v.study.table} | "
            f"{v.comment_date or '-'} | {_day(v.committed)} | {role} |"
        )
    return lines
