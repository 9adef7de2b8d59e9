"""One declaration per run setting (issue #39).

Each field of :class:`~contrastkit.training.TrainConfig` is declared once, with
:func:`setting`: its type (the annotation), default, ``--help`` section and text, where the
default comes from (``source``: a paper and section, or this project's measurement), its
check, how a command-line string becomes its value (``parse``) and whether it belongs to
the machine rather than the protocol (``environment``). From these declarations come the
flags of ``train`` and ``compare`` with their ``--help`` groups
(:mod:`contrastkit.commands.train_flags`), the per-field checks of
:meth:`TrainConfig.validate <contrastkit.training.TrainConfig.validate>` and
:data:`~contrastkit.training.config.ENVIRONMENT_KEYS`. Checks that relate several fields
(a schedule's warm-up and its epochs, a modality's own settings) stay in ``validate``.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import types
import typing
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import MISSING, dataclass
from typing import Any

# The sections of a config, in the order ``train --help`` shows them: name -> (title,
# description). Every setting names one.
SECTIONS: dict[str, tuple[str, str]] = {
    "data": ("data", "the dataset, its subset and the views made of it"),
    "model": ("model", "framework, encoder and heads"),
    "loss": ("loss", "the registered loss and its hyper-parameters"),
    "optimisation": (
        "optimisation",
        "epochs, batch, optimiser and schedule (unset: the optimiser's defaults, docs/defaults.md)",
    ),
    "engine": ("engine", "device, precision, compilation, threads, distributed"),
    "evaluation": ("evaluation", "kNN, linear probe, STS and SentEval scoring"),
    "output": ("output", "the run directory, checkpoints and logs"),
}

Check = Callable[[str, Any], None]  # (name, value) -> None, or ValueError naming the field


def setting(
    default: Any = MISSING,
    *,
    section: str,
    help: str,
    source: str | None = None,
    check: Check | None = None,
    choices: Sequence[str] | Mapping[str, str] | None = None,
    flag: str | None = None,
    parse: Callable[[str], Any] | None = None,
    factory: Callable[[], Any] | None = None,
    environment: bool = False,
    cli: bool = True,
) -> Any:
    """A config field declared once. ``help``'s ``{default}`` is written as the default
    (``"k of the kNN ({default})"``), so the text never repeats it as a literal.
    ``choices``: the values allowed, or a mapping of each to a few words on it; they make
    ``check`` (:func:`one_of`, with ``null`` allowed when the default is ``None``) unless one
    is given, and ``help``'s ``{choices}`` (``"fp32, bf16 (autocast) or fp16"``). ``flag``:
    the command-line flag when it is not ``--`` + the name with dashes; ``parse``: a flag's
    string to the value (lists);
    ``factory``: a mutable default; ``cli=False``: no generated flag (a command spells it
    its own way, as ``--loss-arg``)."""
    if section not in SECTIONS:
        raise ValueError(f"unknown section {section!r}; known: {', '.join(SECTIONS)}")
    if choices is not None:
        check = check or one_of(choices, null=default is None)
        help = help.replace("{choices}", listed(choices))
    elif "{choices}" in help:
        raise ValueError(f"help {help!r} names {{choices}} but the setting declares none")
    meta = {
        "section": section,
        "help": help,
        "source": source,
        "check": check,
        "flag": flag,
        "parse": parse,
        "environment": environment,
        "cli": cli,
    }
    if factory is not None:
        return dataclasses.field(default_factory=factory, metadata=meta)
    return dataclasses.field(default=default, metadata=meta)


@dataclass(frozen=True)
class Declaration:
    """What :func:`setting` declared for one field, with the kind read off its
    annotation: ``bool``, ``int``, ``float``, ``str``, ``list`` or ``dict``, and the help
    with its ``{default}`` written out."""

    key: str
    kind: type
    default: Any
    section: str
    help: str
    source: str | None
    check: Check | None
    flag: str
    parse: Callable[[str], Any] | None
    environment: bool
    cli: bool


@functools.cache
def declarations(cls: type) -> tuple[Declaration, ...]:
    """The declarations of the dataclass ``cls``'s fields, in field order (read once per
    class: every config's validation asks for them)."""
    hints = typing.get_type_hints(cls)
    out = []
    for f in dataclasses.fields(cls):
        m = f.metadata
        default = f.default_factory() if f.default_factory is not MISSING else f.default
        out.append(
            Declaration(
                key=f.name,
                kind=_kind(hints[f.name]),
                default=default,
                section=m["section"],
                help=m["help"].replace("{default}", str(default)),
                source=m["source"],
                check=m["check"],
                flag=m["flag"] or "--" + f.name.replace("_", "-"),
                parse=m["parse"],
                environment=m["environment"],
                cli=m["cli"],
            )
        )
    return tuple(out)


def _kind(annotation: Any) -> type:
    """``int | None`` -> ``int``; ``list[float]`` -> ``list``; ``dict[str, Any]`` -> ``dict``."""
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        annotation = next(a for a in typing.get_args(annotation) if a is not type(None))
    return typing.get_origin(annotation) or annotation


def run_checks(config: object, decls: Iterable[Declaration]) -> None:
    """Each declared check on its field's value, in field order."""
    for d in decls:
        if d.check is not None:
            d.check(d.key, getattr(config, d.key))


# ---------------------------------------------------------------- reusable checks
def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def positive_int(name: str, value: Any) -> None:
    if not _is_int(value) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")


def positive_int_or_null(name: str, value: Any) -> None:
    if value is not None and (not _is_int(value) or value < 1):
        raise ValueError(f"{name} must be a positive integer or null, got {value!r}")


def boolean(name: str, value: Any) -> None:
    if not isinstance(value, bool):
        raise ValueError(f"{name} must be true or false, got {value!r}")


def boolean_or_null(name: str, value: Any) -> None:
    if value is not None and not isinstance(value, bool):
        raise ValueError(f"{name} must be true, false or null, got {value!r}")


def finite_non_negative(name: str, value: Any) -> None:
    if not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")


def finite_or_null(name: str, value: Any) -> None:
    if value is not None and (not _is_number(value) or not math.isfinite(value)):
        raise ValueError(f"{name} must be a finite number or null, got {value!r}")


def number_in(low: float, high: float, closed: str) -> Check:
    """A number in an interval; ``closed`` is how the message writes it, ``"[0, 1)"``."""

    def check(name: str, value: Any) -> None:
        lo_ok = value >= low if closed[0] == "[" else value > low
        hi_ok = value <= high if closed[-1] == "]" else value < high
        if not _is_number(value) or not (lo_ok and hi_ok):
            raise ValueError(f"{name} must be a number in {closed}, got {value!r}")

    return check


def one_of(choices: Iterable[Any], null: bool = False, message: str | None = None) -> Check:
    """One of ``choices`` (or ``None`` when ``null``); ``message``: what the error says
    is allowed, instead of the list."""
    allowed = tuple(choices)

    def check(name: str, value: Any) -> None:
        if value in allowed or (null and value is None):
            return
        names = ", ".join(str(c) for c in allowed) + (" or null" if null else "")
        raise ValueError(f"{name} must be {message or 'one of ' + names}, got {value!r}")

    return check


def listed(choices: Iterable[str] | Mapping[str, str]) -> str:
    """``"a, b or c"``; for a mapping each name with its words in brackets where it has
    any (``{"fp32": "", "bf16": "autocast"}`` -> ``"fp32 or bf16 (autocast)"``)."""
    if isinstance(choices, Mapping):
        items = [f"{k} ({v})" if v else str(k) for k, v in choices.items()]
    else:
        items = [str(c) for c in choices]
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " or " + items[-1]


def of_type(kind: type | tuple[type, ...], what: str, null: bool = False) -> Check:
    """An instance of ``kind`` (``what`` names it in the error), or ``None`` when ``null``."""

    def check(name: str, value: Any) -> None:
        if not (isinstance(value, kind) or (null and value is None)):
            raise ValueError(f"{name} must be {what}{' or null' if null else ''}, got {value!r}")

    return check


def comma_separated(kind: type, what: str, count: int | None = None) -> Callable[[str], list[Any]]:
    """A flag's parser: comma-separated ``kind`` values (exactly ``count`` if given);
    ``what`` is the error's text, as ``"--jitter must be four comma-separated numbers"``."""

    def parse(text: str) -> list[Any]:
        try:
            values = [kind(s) for s in text.split(",") if s.strip()]
        except ValueError:
            values = None
        if values is None or (count is not None and len(values) != count):
            raise ValueError(f"{what}, got {text!r}")
        return values

    return parse
