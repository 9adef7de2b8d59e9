"""Every registered loss has a generated parameter table on a loss page, and the tables
are generated from the registry (defaults and accepted values)."""

from __future__ import annotations

import sys
from pathlib import Path

from contrastkit import losses

sys.path.insert(0, str(Path(__file__).resolve().parent))
from snippets import ROOT

sys.path.insert(0, str(ROOT))
from docsite import losstables

PAGES = sorted((ROOT / "docs" / "losses").glob("*.md"))


def test_every_registered_loss_has_a_table() -> None:
    named = losstables.names_in(p.read_text(encoding="utf-8") for p in PAGES)
    assert not set(losses.available()) - named, "losses without a parameter table"
    assert not named - set(losses.available()), "tables for losses that are not registered"


def test_table_lists_defaults_and_ranges() -> None:
    table = losstables.loss_table("macl")
    assert "| `alpha` | `0.5` | a finite number >= 0 |" in table
    assert "Table 8's best" in table  # the docstring's note on the default
    text, used = losstables.expand("x <!-- loss-params: ntxent dcl --> y")
    assert used == ["ntxent", "dcl"] and "`temperature`" in text and "<!--" not in text
