"""``contrastkit demo``: every registered loss on one digits batch, and its argument checks."""

from __future__ import annotations

import pytest

from contrastkit.cli import main


def test_demo_runs_every_loss_and_checks_its_identities(capsys: pytest.CaptureFixture) -> None:
    assert main(["demo", "--batch-size", "16"]) == 0
    out = capsys.readouterr().out
    assert "One batch of 16 sklearn digits" in out and "identities hold" in out


@pytest.mark.parametrize(
    "argv,match",
    [
        (["--batch-size", "1798"], "--batch-size must be in [2, 1797] (the digits), got 1798"),
        (["--batch-size", "1"], "--batch-size must be in [2, 1797]"),
        (["--seed", "-1"], "--seed must be >= 0, got -1"),
    ],
)
def test_demo_arguments_are_checked_in_one_line(
    argv: list[str], match: str, capsys: pytest.CaptureFixture
) -> None:
    """More digits than sklearn holds was a torch reshape traceback."""
    assert main(["demo", *argv]) == 2
    err = capsys.readouterr().err
    assert match in err and len(err.strip().splitlines()) == 1
