"""When a study's protocol was declared, and whether runs came before it (issue 40).

A study config states its rule before its runs. Two records say when that was: the date
its header comment gives (``Declared 2026-11-26 10:05 UTC``), and the commit that added
it to git (``git log --diff-filter=A``). :func:`declaration` reads both and compares the
commit with the study's ``study_log.jsonl`` (one line per run or per invocation, each
with the time it ended and its wall time; a per-run line counts one run, finished or
stopped): runs logged by an invocation that began
before the commit were trained before the rule was in a committed config, and the
report says so instead of "declared before the runs".
"""

from __future__ import annotations

import json
import re
import subprocess
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from .runner import STUDY_LOG

COMMENT_DATE = re.compile(r"(\d{4}-\d{2}-\d{2}(?:[ T]\d{2}:\d{2}(?: UTC)?)?)")


def comment_date(source: Path) -> str | None:
    """The date on the first header comment line that says the config was declared."""
    for line in source.read_text().splitlines():
        if not line.startswith("#"):
            break
        if "eclared" in line:
            match = COMMENT_DATE.search(line)
            if match:
                return match.group(1)
    return None


def commit_date(source: Path) -> str | None:
    """ISO date of the commit that added ``source`` (``None``: not committed, or no git)."""
    try:
        out = subprocess.run(
            ["git", "log", "--diff-filter=A", "--format=%cI", "--", source.name],
            cwd=source.parent,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        return None
    return out[-1] if out else None  # the first addition, should the file have come back


def _time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def declaration(source: Path | None, folder: Path) -> dict[str, Any]:
    """``{"config", "comment_date", "committed", "runs_logged", "runs_before_commit"}``
    for the study config ``source`` whose report folder is ``folder``."""
    if source is None or not source.is_file():
        return {"config": None}
    committed = commit_date(source)
    logged = before = 0
    log = folder / STUDY_LOG
    for line in log.read_text().splitlines() if log.exists() else []:
        entry = json.loads(line)
        done = entry.get("finished")
        runs = len(done or []) if isinstance(done, list) else int("run" in entry)
        logged += runs
        began = _time(entry["at"]) - timedelta(seconds=float(entry.get("wall_time_s", 0.0)))
        if committed is not None and began < _time(committed):
            before += runs
    return {
        "config": source.as_posix(),
        "comment_date": comment_date(source),
        "committed": committed,
        "runs_logged": logged,
        "runs_before_commit": before,
    }


def sentence(decl: dict[str, Any] | None) -> str:
    """The report's line on when the rule was declared."""
    if not decl or not decl.get("config"):
        return "Declared in the study config."
    said = f" (its header comment: {decl['comment_date']})" if decl.get("comment_date") else ""
    if not decl.get("committed"):
        return f"Declared in `{decl['config']}`{said}, not committed to git when reported."
    when = decl["committed"].replace("T", " ").replace("+00:00", " UTC")
    text = f"Declared in `{decl['config']}`{said}, committed {when}"
    if decl["runs_before_commit"]:
        return (
            f"{text}: **after** {decl['runs_before_commit']} of the {decl['runs_logged']} runs "
            "its `study_log.jsonl` logs had begun (those runs were trained before the rule "
            "was in a committed config)."
        )
    if decl["runs_logged"]:
        return f"{text}, before every run its `study_log.jsonl` logs."
    return f"{text}."
