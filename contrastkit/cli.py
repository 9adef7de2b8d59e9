"""The ``contrastkit`` command line: one sub-command per module in :mod:`contrastkit.commands`.

Each command module exposes ``NAME``, ``HELP``, ``add_arguments(parser)`` and
``run(args) -> int``; :data:`contrastkit.commands.COMMANDS` lists them.

Error boundary: a user error — :class:`UsageError`, ``ValueError`` (bad values, bad
config or YAML, unreadable checkpoints, damaged data files, which every dataset loader turns
into one ``ValueError`` naming the file (:mod:`contrastkit.data.reading`), non-finite
losses), ``OSError`` (missing or unwritable files), a missing optional package — is printed
as one line ``contrastkit: error: <message>`` naming the file or field, with exit status 2
and no traceback. Anything else is a bug and keeps its traceback; ``--debug``, before or
after the command (``contrastkit --debug train ...``, ``contrastkit train ... --debug``),
shows the traceback of user errors too. ``--trust-checkpoint`` (also anywhere) loads
checkpoints that carry no SHA-256 digest, which :func:`contrastkit.checkpoint_file.load_checkpoint`
refuses otherwise. Ctrl-C is one line ``contrastkit: interrupted`` with exit status 130
(128 + SIGINT, the shell's convention); SIGTERM (``kill``, ``timeout``, a job scheduler's
preemption) unwinds the same way — open files, study claims and child processes are
released — with ``contrastkit: terminated`` and status 143 (128 + SIGTERM).
A run continues from its last saved epoch (``train --resume``, or the same ``study``
command).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import signal
import sys
import warnings
from collections.abc import Iterator, Sequence

import torch.distributed

from . import distributed
from ._optional import missing_extra
from ._signals import Terminated, sigterm_unwinds
from .checkpoint_file import TRUST_ENV
from .commands import COMMANDS, UsageError

USER_ERRORS = (ValueError, OSError, ArithmeticError)
INTERRUPTED = 128 + signal.SIGINT  # the exit status of Ctrl-C, as shells report it
TERMINATED = 128 + signal.SIGTERM  # and of SIGTERM


def one_line(exc: BaseException) -> str:
    """The message of a user error as one line (``OSError``: reason and file name)."""
    if isinstance(exc, OSError) and exc.strerror:
        names = [str(n) for n in (exc.filename, exc.filename2) if n is not None]
        text = f"{exc.strerror}: {' -> '.join(repr(n) for n in names)}" if names else exc.strerror
    else:
        text = str(exc).strip() or type(exc).__name__
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return " ".join(lines) if len(lines) <= 3 else lines[0]


def _peer_failure(exc: RuntimeError) -> bool:
    """Whether ``exc`` is a collective that failed because another rank did (gloo raises
    plain ``RuntimeError``s for timeouts and closed connections)."""
    text = str(exc).lower()
    signs = ("timed out", "timeout", "connection closed by peer", "connection reset")
    return isinstance(exc, torch.distributed.DistError) or (
        distributed.is_distributed() and any(s in text for s in signs)
    )


def _add_global_flags(parser: argparse.ArgumentParser, default: object) -> None:
    """``--debug`` and ``--trust-checkpoint`` on ``parser``; a sub-command's default is
    ``SUPPRESS``, so that it does not reset a flag given before the command."""
    parser.add_argument(
        "--debug",
        action="store_true",
        default=default,
        help="show tracebacks of user errors as well",
    )
    parser.add_argument(
        "--trust-checkpoint",
        action="store_true",
        default=default,
        help="load checkpoints that carry no SHA-256 digest (written by older versions) "
        "without verifying them",
    )


@contextlib.contextmanager
def _trusting(trust: bool) -> Iterator[None]:
    """With ``trust``, set :data:`~contrastkit.checkpoint_file.TRUST_ENV` for the command (and the
    processes it starts, a study's ``--jobs``), then put it back."""
    old = os.environ.get(TRUST_ENV)
    if trust:
        os.environ[TRUST_ENV] = "1"
    try:
        yield
    finally:
        if trust and old is None:
            del os.environ[TRUST_ENV]
        elif trust:
            os.environ[TRUST_ENV] = old


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="contrastkit", description=__doc__.splitlines()[0])
    _add_global_flags(parser, False)
    parser.add_argument(
        "--ddp-timeout",
        type=float,
        metavar="SECONDS",
        help="under torchrun: a rank waiting longer than this for the others fails the job "
        f"(default {distributed.DEFAULT_TIMEOUT_S:g}; also {distributed.TIMEOUT_ENV})",
    )
    parser.add_argument(
        "--import",
        dest="imports",
        action="append",
        default=[],
        metavar="MODULE",
        help="import MODULE before the command runs (repeatable): a modality, dataset or "
        "loss defined outside contrastkit that registers itself",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in COMMANDS:
        command = sub.add_parser(module.NAME, help=module.HELP, description=module.HELP)
        module.add_arguments(command)
        _add_global_flags(command, argparse.SUPPRESS)  # also after the command
        command.set_defaults(_run=module.run)
    return parser


@contextlib.contextmanager
def _one_line_warnings(debug: bool) -> Iterator[None]:
    """contrastkit's own warnings (categories defined in the package, such as
    :class:`~contrastkit.engine.EmulatedPrecisionWarning`) formatted as one line,
    ``contrastkit: warning: ...``, like its errors; other warnings, and every warning under
    ``--debug``, as Python formats them. Only the text changes (``warnings.formatwarning``):
    whatever shows or records warnings (pytest, ``logging.captureWarnings``) still gets
    them."""
    if debug:
        yield
        return
    python_formats = warnings.formatwarning

    def one_line(
        message: Warning | str,
        category: type[Warning],
        filename: str,
        lineno: int,
        line: str | None = None,
    ) -> str:
        if category.__module__.split(".")[0] == "contrastkit":
            return f"contrastkit: warning: {message}\n"
        return python_formats(message, category, filename, lineno, line)

    warnings.formatwarning = one_line
    try:
        yield
    finally:
        warnings.formatwarning = python_formats


def import_plugins(names: Sequence[str]) -> None:
    """Import each module of ``names`` (``--import``), which registers what it defines; a
    module that is not found is a :class:`UsageError` naming it."""
    for name in names:
        try:
            importlib.import_module(name)
        except ModuleNotFoundError as exc:
            missing = exc.name or ""
            if name != missing and not name.startswith(missing + "."):
                raise  # the plug-in itself imports something missing
            raise UsageError(f"--import {name}: no module {missing!r} on the Python path") from None


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        import_plugins(args.imports)
        if args.ddp_timeout is not None:
            os.environ[distributed.TIMEOUT_ENV] = repr(args.ddp_timeout)
            distributed.timeout_seconds()  # validates it
        with sigterm_unwinds(), _trusting(args.trust_checkpoint), _one_line_warnings(args.debug):
            status = int(args._run(args) or 0)
    except (UsageError, *USER_ERRORS) as exc:
        if args.debug:
            raise
        print(f"contrastkit: error: {one_line(exc)}", file=sys.stderr)
        return 2
    except ImportError as exc:  # a package of an extra is missing: one line naming the extra
        if args.debug or (line := missing_extra(exc)) is None:
            raise
        print(f"contrastkit: error: {line}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:
        if args.debug:
            raise
        terminated = isinstance(exc, Terminated)
        print(f"contrastkit: {'terminated' if terminated else 'interrupted'}", file=sys.stderr)
        return TERMINATED if terminated else INTERRUPTED
    except RuntimeError as exc:  # under torchrun: a peer rank died, froze or timed out
        if args.debug or not _peer_failure(exc):
            raise
        print(
            f"contrastkit: error: distributed job failed on rank {distributed.rank()} (a "
            f"process stopped, died or exceeded the {distributed.timeout_seconds():g} s "
            f"--ddp-timeout): {one_line(exc)[:300]}",
            file=sys.stderr,
        )
        return 1
    distributed.shutdown()  # under torchrun; after a failure the launcher stops the peers
    return status


if __name__ == "__main__":
    sys.exit(main())
