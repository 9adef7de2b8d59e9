"""The run-configuration flags that ``train`` and ``compare`` share, generated from the
declarations of :class:`~contrastkit.training.TrainConfig`'s fields (config key, type,
``--help`` group and help: :mod:`contrastkit.training.settings`), and the config values a
parsed command line gives. :func:`add_config_argument` makes the flag of one config key,
for a command that spells a few of them its own way (``simcse``)."""

from __future__ import annotations

import argparse
from typing import Any, NamedTuple

from ..training import TrainConfig, parse_assignments, setting_notes
from ..training.settings import SECTIONS, Declaration, declarations

# The argument groups of `train --help` (and `compare --help`), in the order shown:
# the config's sections (group -> (title, description)).
GROUPS: dict[str, tuple[str, str]] = SECTIONS


class Flag(NamedTuple):
    """One run-configuration flag: the config key it sets, its type, its ``--help`` group."""

    key: str
    kind: type
    group: str
    help: str


_DECLARED = [d for d in declarations(TrainConfig) if d.cli]
# config key -> its declaration, for the settings that may have a flag
DECLARATIONS: dict[str, Declaration] = {d.key: d for d in _DECLARED}
_PARSE = {d.key: d.parse for d in _DECLARED if d.parse is not None}
# flag -> its declaration, generated from TrainConfig's fields (contrastkit.training.settings);
# lists are read as text and parsed by their declaration
FLAGS: dict[str, Flag] = {
    d.flag: Flag(d.key, str if d.parse else d.kind, d.section, d.help)
    for d in _DECLARED
    if d.kind is not bool
}
# on/off flags (--x / --no-x), each the config key of the same name: flag -> (group, help)
BOOLEAN_FLAGS: dict[str, tuple[str, str]] = {
    d.flag: (d.section, d.help) for d in _DECLARED if d.kind is bool
}


def add_config_argument(
    parser: argparse.ArgumentParser | argparse._ArgumentGroup,
    key: str,
    flag: str | None = None,
    *,
    help: str | None = None,
    **kwargs: Any,
) -> argparse.Action:
    """The flag of the config key ``key``, from its declaration: its type (lists as text,
    parsed by the declaration), its help, ``dest`` the key and default ``None`` (unset);
    on/off settings are ``--x/--no-x``. ``flag`` renames it (``simcse``'s ``--train-file``
    for ``data_root``), ``help`` replaces the text, and ``kwargs`` go to ``add_argument``
    (``choices``, ``dest``, ``action``). The modalities' notes on the key
    (:func:`~contrastkit.training.setting_notes`) follow the help in brackets. ``KeyError``
    for a key with no flag."""
    d = DECLARATIONS[key]
    options: dict[str, Any] = {"dest": key, "default": None}
    options["help"] = with_notes(key, d.help if help is None else help)
    if d.kind is not bool:
        options["type"] = str if d.parse else d.kind
    elif "action" not in kwargs:
        options["action"] = argparse.BooleanOptionalAction
    options.update(kwargs)
    return parser.add_argument(flag or d.flag, **options)


def with_notes(key: str, text: str) -> str:
    """``text`` and, in brackets, the modalities' notes on the config key ``key``."""
    notes = setting_notes(key)
    return f"{text} ({notes})" if notes else text


def add_train_arguments(
    parser: argparse.ArgumentParser,
) -> dict[str, argparse._ArgumentGroup]:
    """The run-configuration flags shared by ``train`` and ``compare``, each in its
    ``--help`` group (``GROUPS``); returns the groups, for a command's own flags."""
    parser.usage = "%(prog)s [-h] [--config CONFIG] [OPTION ...]"
    parser.add_argument("--config", help="YAML file of config values (flags override it)")
    groups = {
        name: parser.add_argument_group(title, description)
        for name, (title, description) in GROUPS.items()
    }
    for spec in FLAGS.values():
        add_config_argument(groups[spec.group], spec.key)
    groups["data"].add_argument(
        "--modality-arg",
        action="append",
        metavar="KEY=VALUE",
        help="a setting the dataset's modality declares, repeatable (modality_args)",
    )
    loss = groups["loss"]
    loss.add_argument(
        "--loss-arg",
        action="append",
        metavar="KEY=VALUE",
        help="loss hyper-parameter, repeatable (e.g. --loss-arg alpha=0.5)",
    )
    loss.add_argument("--temperature", type=float, help="shortcut for --loss-arg temperature=T")
    loss.add_argument("--heads", type=int, help="AMCL: shortcut for --loss-arg heads=C")
    loss.add_argument(
        "--similarity", help="LASCon: linear, tanh or indicator (--loss-arg similarity=...)"
    )
    loss.add_argument("--c", type=float, help="LASCon: steepness c of Eq. (5) (--loss-arg c=C)")
    loss.add_argument("--variant", help="LASCon: out or in (--loss-arg variant=...)")
    for flag, (group, _) in BOOLEAN_FLAGS.items():
        add_config_argument(groups[group], flag[2:].replace("-", "_"))
    output = groups["output"]
    output.add_argument("--resume", action="store_true", help="continue the run in --out")
    output.add_argument(
        "--overwrite", action="store_true", help="empty a non-empty --out and start afresh"
    )
    output.add_argument("--no-progress", action="store_true", help="no progress bar")
    return groups


def overrides_from_args(args: argparse.Namespace) -> dict[str, Any]:
    """Config values given on the command line (unset flags left out)."""
    values = {
        spec.key: getattr(args, spec.key)
        for spec in FLAGS.values()
        if getattr(args, spec.key) is not None
    }
    for key, parse in _PARSE.items():
        if key in values:
            values[key] = parse(values[key])
    booleans = [flag[2:].replace("-", "_") for flag in BOOLEAN_FLAGS]
    for key in booleans:
        if getattr(args, key) is not None:
            values[key] = getattr(args, key)
    loss_args = parse_assignments(args.loss_arg)
    if args.temperature is not None:
        loss_args["temperature"] = args.temperature
    if args.heads is not None:
        loss_args["heads"] = args.heads
    for key in ("similarity", "c", "variant"):
        if getattr(args, key) is not None:
            loss_args[key] = getattr(args, key)
    if loss_args:
        values["loss_args"] = loss_args
    modality_args = parse_assignments(args.modality_arg, "--modality-arg")
    if modality_args:
        values["modality_args"] = modality_args
    return values
