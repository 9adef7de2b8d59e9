"""The README's claims and pending-studies tables, ``docs/studies/CLAIMS.md`` and
``docs/studies/CONFIRMATION.md`` are exactly what the committed study reports say
(``docs/studies/readme_table.py``): a report updated without them, or a cell edited by
hand, fails here."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


def _script() -> ModuleType:
    path = ROOT / "docs" / "studies" / "readme_table.py"
    spec = importlib.util.spec_from_file_location("readme_table", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _block(lines: list[str], header: str) -> list[str]:
    start = lines.index(header)
    end = next(i for i in range(start, len(lines)) if not lines[i].startswith("|"))
    return lines[start:end]


def test_readme_tables_are_generated_from_the_reports() -> None:
    script = _script()
    readme = (ROOT / "README.md").read_text().split("\n")
    claims = script.table()
    assert 2 < len(claims) <= 62  # one row per primary comparison, at most 60
    assert not any("flatnce" in row.lower() for row in claims)
    assert _block(readme, script.HEADER) == claims
    assert _block(readme, script.PENDING) == script.pending()


def test_the_claims_and_confirmation_pages_are_generated() -> None:
    script = _script()
    assert script.CLAIMS.read_text() == script.claims_page() + "\n"
    confirm = script.confirm
    text = confirm.markdown(confirm.confirmation(ROOT)) + "\n"
    assert script.CONFIRMATION.read_text() == text
    rows = sum(len(r) for r in script.exploratory().values())
    assert rows > 100  # the exploratory rows moved there
