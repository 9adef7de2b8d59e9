"""Parameter tables of the registered losses, generated from the registry at build time.

A loss page holds a marker ``<!-- loss-params: macl -->`` (one or more names); the
documentation hook (``docsite/hooks.py``) replaces it with one table per loss: every
constructor argument, its default (from the signature), the values the registry accepts
(``losses.info(name).params``, the ranges each class declares) and the docstring's own
line about it (where the default comes from). ``tests/docs/test_loss_tables.py`` checks
that every registered loss has a table on some page.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Iterable

MARKER = re.compile(r"<!--\s*loss-params:\s*([\w\s,]+?)\s*-->")


def _arg_docs(cls: type) -> dict[str, str]:
    """The ``Args:`` entries of the class docstring (Google style), joined to one line each.

    An entry naming several arguments (``block_size, gather_distributed: ...``) applies to
    each of them.
    """
    doc = inspect.getdoc(cls) or ""
    found: dict[str, str] = {}
    lines = doc.splitlines()
    try:
        start = next(i for i, line in enumerate(lines) if line.strip() == "Args:")
    except StopIteration:
        return found
    current: list[str] = []
    names: list[str] = []
    entry = re.compile(r"^    ([\w, ]+):\s*(.*)$")
    for line in lines[start + 1 :]:
        if line and not line.startswith("    "):
            break
        match = entry.match(line)
        if match:
            for name in names:
                found[name] = " ".join(current)
            names = [n.strip() for n in match.group(1).split(",")]
            current = [match.group(2).strip()]
        elif line.strip():
            current.append(line.strip())
    for name in names:
        found[name] = " ".join(current)
    return found


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _default(parameter: inspect.Parameter) -> str:
    if parameter.default is inspect.Parameter.empty:
        return "required"
    return f"`{parameter.default!r}`"


def loss_table(name: str) -> str:
    """The markdown table of one registered loss's constructor arguments."""
    from contrastkit import losses

    info = losses.info(name)
    signature = inspect.signature(info.cls.__init__)
    docs = _arg_docs(info.cls)
    rows = [
        f"**`{name}`** (`losses.{info.cls.__name__}`, input layout `{info.inputs}`; "
        f"source: {_cell(info.reference)})",
        "",
        "| argument | default | accepted values | notes |",
        "|---|---|---|---|",
    ]
    for arg, parameter in signature.parameters.items():
        if arg == "self" or parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            continue
        param = info.params.get(arg)
        accepted = param.describe() if param is not None else "checked by the module"
        rows.append(
            f"| `{arg}` | {_cell(_default(parameter))} | {_cell(accepted)} "
            f"| {_cell(docs.get(arg, ''))} |"
        )
    return "\n".join(rows) + "\n"


def expand(markdown: str) -> tuple[str, list[str]]:
    """Replace every marker with its tables; returns the text and the loss names used."""
    used: list[str] = []

    def tables(match: re.Match[str]) -> str:
        names = [n for n in re.split(r"[\s,]+", match.group(1)) if n]
        used.extend(names)
        return "\n".join(loss_table(n) for n in names)

    return MARKER.sub(tables, markdown), used


def names_in(texts: Iterable[str]) -> set[str]:
    """Every loss name that a marker in these texts asks a table for."""
    names: set[str] = set()
    for text in texts:
        for match in MARKER.finditer(text):
            names.update(n for n in re.split(r"[\s,]+", match.group(1)) if n)
    return names
