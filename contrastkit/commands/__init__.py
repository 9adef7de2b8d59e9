"""Sub-commands of the ``contrastkit`` CLI (see :mod:`contrastkit.cli`).

Each command module exposes ``NAME``, ``HELP``, ``add_arguments(parser)`` and
``run(args) -> int``; :data:`COMMANDS` lists them in the order ``contrastkit --help``
shows them.
"""

from . import compare, demo, export, figures, senteval, simcse, sts_eval, study, train
from .common import UsageError, apply_threads

COMMANDS = (demo, sts_eval, simcse, figures, train, compare, export, senteval, study)

__all__ = ["COMMANDS", "UsageError", "apply_threads"]
