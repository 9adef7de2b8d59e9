"""``python -m contrastkit`` is the same command line as the ``contrastkit`` script."""

from __future__ import annotations

import subprocess
import sys


def test_python_m_runs_the_cli_and_keeps_its_exit_status() -> None:
    ok = subprocess.run(
        [sys.executable, "-m", "contrastkit", "train", "--help"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert ok.returncode == 0
    assert "--framework" in ok.stdout
    bad = subprocess.run(
        [
            sys.executable,
            "-m",
            "contrastkit",
            "train",
            "--batch-size",
            "1",
            "--epochs",
            "1",
            "--out",
            "/nonexistent-dir/x",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert bad.returncode == 2
    assert bad.stderr.startswith("contrastkit: error:")
    assert "Traceback" not in bad.stderr
