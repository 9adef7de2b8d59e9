"""``contrastkit train --help`` and ``compare --help`` show the run-configuration flags in
argument groups (``GROUPS`` in ``contrastkit/commands/train.py``), every flag in exactly
one of them."""

from __future__ import annotations

import argparse

import pytest

from contrastkit.cli import build_parser
from contrastkit.commands.train_flags import BOOLEAN_FLAGS, FLAGS, GROUPS

# Shown under "options": help, the config file every group's values can come from, and
# the flags every command accepts (contrastkit.cli._add_global_flags).
GENERAL = {"-h", "--help", "--config", "--debug", "--trust-checkpoint"}


def _command(name: str) -> argparse.ArgumentParser:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices[name]


def _flags_by_group(parser: argparse.ArgumentParser) -> dict[str, list[str]]:
    return {
        group.title: [s for action in group._group_actions for s in action.option_strings]
        for group in parser._action_groups
    }


@pytest.mark.parametrize("name", ["train", "compare"])
def test_every_flag_is_in_exactly_one_group(name: str) -> None:
    parser = _command(name)
    groups = _flags_by_group(parser)
    titles = [title for title, _ in GROUPS.values()]
    assert [t for t in groups if t in titles] == titles  # all seven, in GROUPS' order
    every = [s for a in parser._actions for s in a.option_strings]
    grouped = [s for title in titles for s in groups[title]]
    assert len(grouped) == len(set(grouped)), "a flag in two groups"
    assert sorted(set(every) - set(grouped)) == sorted(GENERAL & set(every))
    assert not [t for t, flags in groups.items() if t not in titles and set(flags) - GENERAL]
    for title in titles:
        assert groups[title], f"group {title!r} is empty"


def test_the_table_names_known_groups() -> None:
    assert {spec.group for spec in FLAGS.values()} <= set(GROUPS)
    assert {group for group, _ in BOOLEAN_FLAGS.values()} <= set(GROUPS)


def test_train_help_shows_the_groups(capsys) -> None:
    with pytest.raises(SystemExit) as exit_:
        build_parser().parse_args(["train", "--help"])
    assert exit_.value.code == 0
    text = capsys.readouterr().out
    positions = []
    for title, description in GROUPS.values():
        assert f"\n{title}:\n" in text
        positions.append(text.index(f"\n{title}:\n"))
        assert description.split()[0] in text
    assert positions == sorted(positions)
    section = text[text.index("\nloss:\n") : text.index("\noptimisation:\n")]
    assert "--loss-arg" in section and "--temperature" in section
    assert "--epochs" not in section
