"""contrastkit's own warnings on the command line: one line each, like its errors."""

from __future__ import annotations

import warnings
from argparse import Namespace

import pytest

from contrastkit.cli import main
from contrastkit.commands import train as train_command
from contrastkit.engine import EmulatedPrecisionWarning


@pytest.fixture
def formatted(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """``contrastkit train`` replaced by a run that formats a contrastkit warning and one of
    another category as Python's warning display would, and warns with the first; the
    texts are returned."""
    texts: list[str] = []

    def run(args: Namespace) -> int:
        for category in (EmulatedPrecisionWarning, DeprecationWarning):
            texts.append(warnings.formatwarning("slow here", category, "x.py", 7))
        warnings.warn("slow here", EmulatedPrecisionWarning, stacklevel=2)
        return 0

    monkeypatch.setattr(train_command, "run", run)
    return texts


def test_own_warnings_are_one_line_and_still_reach_a_recorder(formatted: list[str]) -> None:
    python_formats = warnings.formatwarning
    with pytest.warns(EmulatedPrecisionWarning, match="slow here"):  # a recorder still sees it
        assert main(["train"]) == 0
    assert formatted[0] == "contrastkit: warning: slow here\n"
    assert formatted[1] == python_formats("slow here", DeprecationWarning, "x.py", 7)
    assert "DeprecationWarning: slow here" in formatted[1]
    assert warnings.formatwarning is python_formats  # put back after the command


def test_debug_formats_every_warning_as_python_does(formatted: list[str]) -> None:
    with pytest.warns(EmulatedPrecisionWarning):
        assert main(["--debug", "train"]) == 0
    assert formatted[0].startswith("x.py:7: EmulatedPrecisionWarning: slow here")
