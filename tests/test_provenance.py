"""Which code trained a run: the git commit of the checkout the package is imported from."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

import contrastkit
from contrastkit.provenance import code_info, git_state

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs a git executable")


def _git(repo: Path, *args: str) -> str:
    who = ["-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]
    done = subprocess.run(["git", "-C", str(repo), *who, *args], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def _repo(root: Path, files: dict[str, str]) -> Path:
    root.mkdir(parents=True)
    _git(root, "init", "-q")
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    _git(root, "add", ".")
    _git(root, "commit", "-q", "-m", "c")
    return root


def test_a_checkout_gives_its_commit_and_whether_the_package_changed(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "repo", {"pkg/__init__.py": "x = 1\n", "notes.md": "a\n"})
    head = _git(repo, "rev-parse", "HEAD")
    assert git_state(repo / "pkg") == {"git_commit": head, "git_dirty": False}
    (repo / "runs").mkdir()
    (repo / "runs" / "final.json").write_text("{}")  # untracked run files
    (repo / "notes.md").write_text("b\n")  # a tracked file outside the package
    assert git_state(repo / "pkg") == {"git_commit": head, "git_dirty": False}
    (repo / "pkg" / "__init__.py").write_text("x = 2\n")
    assert git_state(repo / "pkg") == {"git_commit": head, "git_dirty": True}


def test_outside_a_checkout_or_untracked_in_one_the_commit_is_unknown(tmp_path: Path) -> None:
    unknown = {"git_commit": None, "git_dirty": None}
    plain = tmp_path / "site-packages" / "pkg"
    plain.mkdir(parents=True)
    (plain / "__init__.py").write_text("")
    assert git_state(plain) == unknown
    repo = _repo(tmp_path / "project", {"train.py": ""})  # a venv inside a user's repository
    venv_pkg = repo / ".venv" / "pkg"
    venv_pkg.mkdir(parents=True)
    (venv_pkg / "__init__.py").write_text("")
    assert git_state(venv_pkg) == unknown


def test_code_info_names_the_version() -> None:
    info = code_info()
    assert info["contrastkit_version"] == contrastkit.__version__
    assert set(info) == {"contrastkit_version", "git_commit", "git_dirty"}
