"""The ``contrastkit`` command line: one sub-command per module in :mod:`contrastkit.commands`.

Each command module exposes ``NAME``, ``HELP``, ``add_arguments(parser)`` and
``run(args) -> int``. User errors (bad values, missing files) are raised as
:class:`UsageError` or ``ValueError`` and printed as one line, not a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from . import distributed

COMMAND_MODULES = ("demo", "sts_eval", "simcse", "figures", "train", "compare", "study")


class UsageError(Exception):
    """A user-facing error: printed as ``contrastkit: error: <message>``, exit status 2."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="contrastkit", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMAND_MODULES:
        module = importlib.import_module(f"contrastkit.commands.{name}")
        command = sub.add_parser(module.NAME, help=module.HELP, description=module.HELP)
        module.add_arguments(command)
        command.set_defaults(_run=module.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        status = int(args._run(args) or 0)
    except (UsageError, ValueError, FileNotFoundError) as exc:
        print(f"contrastkit: error: {exc}", file=sys.stderr)
        return 2
    distributed.shutdown()  # under torchrun; after a failure the launcher stops the peers
    return status


if __name__ == "__main__":
    sys.exit(main())
