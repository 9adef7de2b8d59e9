"""Every ``>>>`` example in the package's docstrings runs and prints what it shows."""

from __future__ import annotations

import doctest
import importlib
from pathlib import Path

import pytest

import contrastkit

ROOT = Path(contrastkit.__file__).parent
MODULES = sorted(
    "contrastkit."
    + ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
    for path in ROOT.rglob("*.py")
    if ">>> " in path.read_text(encoding="utf-8")
)


def test_the_package_has_examples() -> None:
    assert len(MODULES) >= 20 and "contrastkit.losses.macl" in MODULES


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name: str) -> None:
    try:
        module = importlib.import_module(name)
    except ModuleNotFoundError as exc:  # an optional extra (transformers, ...) not installed
        pytest.skip(f"{name} needs {exc.name}")
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    if result.attempted == 0:  # every example is marked +SKIP: it needs a model or data
        pytest.skip(f"{name}: its examples need files the tests do not have")
    assert result.failed == 0, name
