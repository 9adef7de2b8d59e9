"""Every snippet of the documentation is true of the code today.

* Every ```` ```python ```` block of ``DOC_FILES`` runs on CPU, each in a fresh namespace,
  all in one subprocess (so a block that registers a loss cannot leak into the other
  tests); a block marked ``<!-- no-run: why -->`` is compiled only.
* Every ``contrastkit`` command in a shell block parses with the CLI's own parser: the
  subcommand, its flags and their values exist.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from snippets import DOC_FILES, ROOT, blocks, cli_commands

PYTHON_BLOCKS = [b for f in DOC_FILES for b in blocks(f) if b.language == "python"]
SHELL_BLOCKS = [b for f in DOC_FILES for b in blocks(f) if b.language in ("bash", "sh", "shell")]
COMMANDS = [(b, args) for b in SHELL_BLOCKS for args in cli_commands(b.code)]

RUNNER = r"""
import contextlib, io, json, os, sys, tempfile, traceback
results = {}
os.chdir(tempfile.mkdtemp())
for item in json.load(sys.stdin):
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            exec(compile(item["code"], item["id"], "exec"), {"__name__": "__main__"})
        results[item["id"]] = None
    except BaseException:
        results[item["id"]] = traceback.format_exc(limit=-3)
print(json.dumps(results))
"""


@pytest.fixture(scope="module")
def executed() -> dict[str, str | None]:
    todo = [{"id": b.id, "code": b.code} for b in PYTHON_BLOCKS if b.run]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    env["CONTRASTKIT_CHECK_FINITE"] = "1"
    done = subprocess.run(
        [sys.executable, "-c", RUNNER],
        input=json.dumps(todo),
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_there_are_snippets() -> None:
    assert len(PYTHON_BLOCKS) >= 20 and len(COMMANDS) >= 20


@pytest.mark.parametrize("block", [b for b in PYTHON_BLOCKS if b.run], ids=lambda b: b.id)
def test_python_block_runs(block, executed) -> None:
    error = executed[block.id]
    assert error is None, f"{block.id} failed:\n{error}"


@pytest.mark.parametrize("block", [b for b in PYTHON_BLOCKS if not b.run], ids=lambda b: b.id)
def test_no_run_block_compiles(block) -> None:
    compile(block.code, block.id, "exec")


@pytest.fixture(scope="module")
def parser():
    from contrastkit.cli import build_parser

    return build_parser()


@pytest.mark.parametrize(
    ("block", "args"), COMMANDS, ids=[f"{b.id}:{' '.join(a[:2])}" for b, a in COMMANDS]
)
def test_cli_command_parses(block, args, parser, capsys) -> None:
    try:
        parser.parse_args(args)
    except SystemExit as exit_:
        if exit_.code == 0:  # `--help`: printed, nothing to run
            return
        message = capsys.readouterr().err.strip().splitlines()[-1:]
        pytest.fail(f"{block.id}: `contrastkit {' '.join(args)}` does not parse: {message}")
