"""Declared hyper-parameter ranges of the registered losses.

A loss class declares, once, the range of every constructor argument in a
``param_ranges`` class attribute (merged along its base classes); the registry
(:mod:`.registry`) checks those declarations are complete when the class is registered,
validates every constructor call against them, and exposes them to the command line
(:func:`.registry.check_args`), so a bad value fails when a config is read, before any
training, with one line naming the loss, the argument and the range expected.

Example:
    >>> Param.real(low=0.0, low_open=True).check("temperature", 0.2)
    >>> Param.real(low=0.0, low_open=True).describe()
    'a finite number > 0'
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from dataclasses import dataclass

from torch import Tensor

from .._optional import KERNEL_BACKENDS


@dataclass(frozen=True)
class Param:
    """The admissible values of one hyper-parameter.

    ``kind`` is ``"real"`` (finite int or float, bools refused), ``"int"``, ``"bool"``,
    ``"choice"`` (one of ``choices``) or ``"any"`` (the module checks it, e.g. a callable);
    ``low``/``high`` bound numbers (open with ``low_open``/``high_open``); ``optional``
    admits ``None`` (meaning the documented default).
    """

    kind: str
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    optional: bool = False
    choices: tuple[object, ...] = ()
    callable_ok: bool = False

    @classmethod
    def real(
        cls,
        low: float | None = None,
        high: float | None = None,
        *,
        low_open: bool = False,
        high_open: bool = False,
        optional: bool = False,
    ) -> Param:
        """A finite number in ``[low, high]`` (bounds open on request)."""
        return cls("real", low, high, low_open, high_open, optional)

    @classmethod
    def integer(cls, low: int = 1, *, optional: bool = False) -> Param:
        """An integer ``>= low``."""
        return cls("int", low=low, optional=optional)

    @classmethod
    def flag(cls) -> Param:
        """``True`` or ``False``."""
        return cls("bool")

    @classmethod
    def one_of(cls, *choices: object, callable_ok: bool = False) -> Param:
        """One of ``choices`` (or, with ``callable_ok``, any callable)."""
        return cls("choice", choices=choices, callable_ok=callable_ok)

    def describe(self) -> str:
        """What is expected, in words (used in error messages)."""
        if self.kind == "bool":
            text = "true or false"
        elif self.kind == "choice":
            text = "one of " + ", ".join(repr(c) for c in self.choices)
            text += " or a callable" if self.callable_ok else ""
        elif self.kind == "any":
            text = "any value"
        else:
            text = "a finite number" if self.kind == "real" else "an integer"
            bounds = []
            if self.low is not None:
                bounds.append(f"{'>' if self.low_open else '>='} {self.low:g}")
            if self.high is not None:
                bounds.append(f"{'<' if self.high_open else '<='} {self.high:g}")
            text += (" " + " and ".join(bounds)) if bounds else ""
        return text + (" or null" if self.optional else "")

    def accepts(self, value: object) -> bool:
        """Whether ``value`` lies in the declared range."""
        if value is None:
            return self.optional
        if self.kind == "any":
            return True
        if self.kind == "bool":
            return isinstance(value, bool)
        if self.kind == "choice":
            return (self.callable_ok and callable(value)) or any(
                value == c and type(value) is type(c) for c in self.choices
            )
        if isinstance(value, bool) or not isinstance(value, int | float):
            return False
        if self.kind == "int" and not isinstance(value, int):
            return False
        if not math.isfinite(value):
            return False
        if self.low is not None and (value <= self.low if self.low_open else value < self.low):
            return False
        return self.high is None or (value < self.high if self.high_open else value <= self.high)

    def check(self, name: str, value: object, owner: str = "") -> None:
        """Raise ``ValueError`` naming ``owner``/``name`` unless :meth:`accepts`."""
        if not self.accepts(value):
            where = f"loss {owner!r}: " if owner else ""
            # a numpy scalar or a 0-d tensor: the number it holds may be fine
            hint = (
                " (a Python number: pass float(x) or int(x))"
                if self.kind in ("real", "int")
                and not isinstance(value, bool | int | float)
                and isinstance(value, numbers.Real | Tensor)
                else ""
            )
            raise ValueError(f"{where}{name} must be {self.describe()}, got {value!r}{hint}")


# shorthands shared by the loss modules
POSITIVE = Param.real(0.0, low_open=True)
NONNEGATIVE = Param.real(0.0)
FINITE = Param.real()
FLAG = Param.flag()
BLOCK_SIZE = Param.integer(1, optional=True)
BACKEND = Param.one_of(*KERNEL_BACKENDS)


def declared_ranges(cls: type) -> dict[str, Param]:
    """The ``param_ranges`` of ``cls`` merged along its MRO (subclasses override)."""
    merged: dict[str, Param] = {}
    for klass in reversed(cls.__mro__):
        ranges: Mapping[str, Param] = vars(klass).get("param_ranges", {})
        merged.update(ranges)
    return merged
