"""contrastkit's own warnings on the command line: one line each, like its errors."""

from __future__ import annotations

import warnings
from argparse import Namespace

import pytest

from contrastkit.cli import main
from contrastkit.commands import train as train_command
from contrastkit.engine import EmulatedPrecisionWarning


@pytest.fixture
def warning_train(monkeypatch: pytest.MonkeyPatch) -> None:
    """``contrastkit train`` replaced by a run that gives a contrastkit warning and a
    warning of another package's category."""

    def run(args: Namespace) -> int:
        warnings.warn("bf16 is slow here", EmulatedPrecisionWarning, stacklevel=2)
        warnings.warn("someone else's", DeprecationWarning, stacklevel=2)
        return 0

    monkeypatch.setattr(train_command, "run", run)


@pytest.mark.usefixtures("warning_train")
def test_own_warnings_are_one_line_others_as_python_shows_them(
    capsys: pytest.CaptureFixture[str],
) -> None:
    passed_on: list[tuple[str, type[Warning]]] = []

    def python_shows(message, category, *args, **kwargs) -> None:  # what was installed
        passed_on.append((str(message), category))

    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.showwarning = python_shows
        assert main(["train"]) == 0
        assert warnings.showwarning is python_shows  # put back after the command
    assert capsys.readouterr().err.splitlines() == ["contrastkit: warning: bf16 is slow here"]
    assert passed_on == [("someone else's", DeprecationWarning)]


@pytest.mark.usefixtures("warning_train")
def test_debug_shows_every_warning_as_python_does(capsys: pytest.CaptureFixture[str]) -> None:
    passed_on: list[type[Warning]] = []
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.showwarning = lambda message, category, *args, **kwargs: passed_on.append(category)
        assert main(["--debug", "train"]) == 0
    assert passed_on == [EmulatedPrecisionWarning, DeprecationWarning]
    assert "contrastkit: warning:" not in capsys.readouterr().err
