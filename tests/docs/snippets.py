"""Code blocks of markdown pages, for the documentation tests (``test_snippets.py``).

A ```` ```python ```` block runs unless the line before its fence is an HTML comment
starting ``<!-- no-run`` (a GPU, data, several processes or a long run): such a block is
only compiled. A ```` ```bash ```` / ```` ```sh ```` block's lines that call ``contrastkit``
(also ``torchrun ... -m contrastkit.cli``) are parsed by the CLI's own parser.

``DOC_FILES`` is the list of files the tests take: the README and the site's hand-written
pages (``development.md`` and ``defaults.md`` included).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SITE_FOLDERS = ("getting-started", "guides", "losses", "api", "results")
SITE_PAGES = [
    *sorted(p for folder in SITE_FOLDERS for p in (ROOT / "docs" / folder).glob("*.md")),
    ROOT / "docs" / "index.md",
    ROOT / "docs" / "troubleshooting.md",
    ROOT / "docs" / "development.md",
    ROOT / "docs" / "defaults.md",
]
DOC_FILES: list[Path] = [ROOT / "README.md", *SITE_PAGES]

FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```\s*$", re.MULTILINE | re.DOTALL)
NO_RUN = re.compile(r"<!--\s*no-run\b[^>]*-->\s*$")


@dataclass(frozen=True)
class Block:
    path: Path
    line: int
    language: str
    code: str
    run: bool

    @property
    def id(self) -> str:
        return f"{self.path.name}:{self.line}"


def blocks(path: Path) -> list[Block]:
    """The fenced code blocks of one markdown file, in order."""
    text = path.read_text(encoding="utf-8")
    found = []
    for match in FENCE.finditer(text):
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        line = text.count("\n", 0, match.start()) + 1
        found.append(
            Block(path, line, match.group(1).lower(), match.group(2), not NO_RUN.search(before))
        )
    return found


def cli_commands(code: str) -> list[list[str]]:
    """The ``contrastkit`` argument lists of a shell block (continuations joined, comments
    and environment assignments dropped); ``...`` stands for elided arguments and is removed."""
    commands = []
    for line in code.replace("\\\n", " ").splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        words = shlex.split(line, comments=True)
        while words and re.match(r"^\w+=", words[0]):
            words = words[1:]
        if words[:1] == ["contrastkit"]:
            args = words[1:]
        elif words[:1] == ["torchrun"] and "contrastkit.cli" in words:
            args = words[words.index("contrastkit.cli") + 1 :]
        else:
            continue
        commands.append([w for w in args if w != "..."])
    return commands
