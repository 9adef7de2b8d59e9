"""Reading run settings: YAML files and ``key=value`` overrides from the command line,
each failure one ``ValueError`` / ``FileNotFoundError`` line naming the file or item.

PyYAML is the command line's dependency: it is imported when a setting is read, so the
library imports without it."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any


def load_yaml(path: str | Path) -> dict[str, Any]:
    """A YAML mapping from ``path`` (``FileNotFoundError``/``ValueError`` with the path)."""
    import yaml

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"config file {str(path)!r} does not exist")
    try:
        data = yaml.safe_load(path.read_bytes().decode("utf-8")) or {}
    except UnicodeDecodeError:
        raise ValueError(f"config file {str(path)!r} is not UTF-8 text") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or type(exc).__name__
        raise ValueError(f"config file {str(path)!r}{where}: invalid YAML ({problem})") from None
    if not isinstance(data, dict):
        raise ValueError(
            f"config file {str(path)!r} must hold a mapping, got {type(data).__name__}"
        )
    return data


def parse_value(text: str) -> Any:
    """A ``key=value`` value as YAML scalar: ``0.1`` → float, ``true`` → bool, ``x`` → str;
    ``1e-3`` (a string to YAML 1.1) → float."""
    import yaml

    value = yaml.safe_load(text) if text.strip() else text
    if isinstance(value, str) and re.fullmatch(r"[+-]?(\d+\.?\d*|\.\d+)[eE][+-]?\d+", value):
        return float(value)
    return value


def parse_assignments(items: list[str] | None, what: str = "--loss-arg") -> dict[str, Any]:
    """``["temperature=0.2", "adaptive=false"]`` → ``{"temperature": 0.2, "adaptive": False}``."""
    import yaml

    out: dict[str, Any] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"{what} expects key=value, got {item!r}")
        try:
            out[key.strip()] = parse_value(value)
        except yaml.YAMLError:
            raise ValueError(f"{what} {item!r}: the value is not a YAML scalar") from None
    return out
