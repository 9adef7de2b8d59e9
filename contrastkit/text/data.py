"""Readers for the text files of the sentence experiments.

* :func:`read_sentences`: one sentence per line (SimCSE's unsupervised Wikipedia sample);
  blank lines are skipped.
* :func:`read_sts`: scored sentence pairs, either in the STS Benchmark layout (``"stsb"``:
  tab-separated, gold score in column 5, the two sentences in columns 6 and 7; some lines
  of the official files carry extra trailing columns, which are ignored) or as a plain
  ``sentence1<TAB>sentence2<TAB>score`` file without a header (``"tsv"``).

Fields are split on tabs only: the STS files contain unbalanced quotes, so a CSV reader
would merge lines.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

StsFormat = Literal["stsb", "tsv"]
STS_FORMATS: tuple[str, ...] = ("stsb", "tsv")


@dataclass(frozen=True)
class StsPairs:
    """Scored sentence pairs: ``sentences1[i]`` and ``sentences2[i]`` have gold ``scores[i]``."""

    sentences1: list[str]
    sentences2: list[str]
    scores: list[float]

    def __len__(self) -> int:
        return len(self.scores)


def _existing(path: str | Path, name: str) -> Path:
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"{name} {str(p)!r} is not a readable file")
    return p


def _lines(p: Path, name: str) -> list[str]:
    """The lines of the UTF-8 file ``p``; ``ValueError`` naming the file and line if not."""
    data = p.read_bytes()
    try:
        return data.decode("utf-8").splitlines()
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise ValueError(f"{name} {str(p)!r} line {line} is not UTF-8 text") from None


def read_sentences(path: str | Path) -> list[str]:
    """The non-blank lines of ``path``, stripped; raises ``ValueError`` if there are none."""
    p = _existing(path, "sentence file")
    sentences = [s for s in (line.strip() for line in _lines(p, "sentence file")) if s]
    if not sentences:
        raise ValueError(f"sentence file {str(p)!r} has no non-blank line")
    return sentences


def _parse_score(text: str, where: str) -> float:
    try:
        score = float(text)
    except ValueError:
        raise ValueError(f"{where}: the score must be a number, got {text!r}") from None
    if not math.isfinite(score):
        raise ValueError(f"{where}: the score must be a finite number, got {text!r}")
    return score


def read_sts(path: str | Path, format: StsFormat = "stsb") -> StsPairs:
    """Read scored pairs from ``path`` in ``format`` (``"stsb"`` or ``"tsv"``, see module doc).

    Raises ``ValueError`` naming the line for a line with too few fields or a non-numeric
    score, and when the file holds no pair at all.
    """
    if format not in STS_FORMATS:
        raise ValueError(f"format must be one of {STS_FORMATS}, got {format!r}")
    p = _existing(path, "STS file")
    # (score column, first sentence column, minimum number of fields), 0-based
    score_col, s1_col, min_fields = (4, 5, 7) if format == "stsb" else (2, 0, 3)
    s1: list[str] = []
    s2: list[str] = []
    scores: list[float] = []
    for number, line in enumerate(_lines(p, "STS file"), start=1):
        if not line.strip():
            continue
        fields = line.split("\t")
        where = f"{p.name} line {number}"
        if len(fields) < min_fields:
            raise ValueError(
                f"{where}: expected at least {min_fields} tab-separated fields for format "
                f"{format!r}, got {len(fields)}"
            )
        scores.append(_parse_score(fields[score_col].strip(), where))
        s1.append(fields[s1_col].strip())
        s2.append(fields[s1_col + 1].strip())
    if not scores:
        raise ValueError(f"STS file {str(p)!r} holds no sentence pair")
    return StsPairs(s1, s2, scores)
