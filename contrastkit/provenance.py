"""Which code trained a run: contrastkit's version and, from a git checkout, the commit.

Every run's ``final.json`` carries :func:`code_info`, so a study whose runs were trained
over several sessions can say which commits trained them (``contrastkit study`` reports
it), and a user can tell whether two results came from the same code.
"""

from __future__ import annotations

import functools
import subprocess
from pathlib import Path
from typing import Any

from ._version import __version__

PACKAGE = Path(__file__).resolve().parent


def code_info() -> dict[str, Any]:
    """``contrastkit_version``; ``git_commit`` (full hash) and ``git_dirty`` (whether the
    package's tracked files differ from that commit) when the package is imported from a
    git checkout, else ``None`` for both. Computed once per process (the trainer asks when
    its first run starts, so a checkout that moves later does not rename its code)."""
    return {"contrastkit_version": __version__, **_git(PACKAGE)}


@functools.cache
def _git(package: Path) -> dict[str, Any]:
    return git_state(package)


def git_state(package: Path) -> dict[str, Any]:
    """``git_commit`` and ``git_dirty`` of the checkout that holds the directory
    ``package`` (dirty: a tracked file under ``package`` is modified, staged or deleted;
    untracked files, such as run folders, do not count); ``None`` for both when
    ``package/__init__.py`` is not tracked by a checkout (an installed wheel, even in a
    virtualenv inside some repository) or there is no ``git`` executable."""
    unknown: dict[str, Any] = {"git_commit": None, "git_dirty": None}

    def git(*args: str) -> str:
        done = subprocess.run(
            ["git", "-C", str(package), *args],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        )
        return done.stdout.strip()

    try:
        # the package's own files must be tracked: a venv inside a user's repository is not
        git("ls-files", "--error-unmatch", "__init__.py")
        commit = git("rev-parse", "--verify", "HEAD")
        changed = git("status", "--porcelain", "--untracked-files=no", "--", ".")
    except (OSError, subprocess.SubprocessError):
        return unknown
    return {"git_commit": commit, "git_dirty": bool(changed)}
