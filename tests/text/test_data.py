"""Readers: one-sentence-per-line files, STS Benchmark layout (with extra-column lines)
and plain TSV pairs."""

from __future__ import annotations

from pathlib import Path

import pytest

from contrastkit.text import read_sentences, read_sts

# Lines in the layout of the official STS Benchmark files: genre, file, year, id, score,
# sentence 1, sentence 2, and on some lines two extra source columns. Quotes are unbalanced
# on purpose (a CSV reader would merge lines).
STSB_LINES = [
    "main-captions\tMSRvid\t2012test\t0001\t5.000\tA plane is taking off.\tAn air plane takes off.",
    'main-news\theadlines\t2013\t0002\t1.6\t"Quoted start\tNo quote end',
    "main-forums\tdeft-forum\t2014\t0003\t0.400\tExtra columns here.\tIgnore them.\tsrc1\tsrc2",
    "",
]


def write(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_read_sentences_strips_and_skips_blank_lines(tmp_path: Path) -> None:
    p = write(tmp_path / "s.txt", ["  first sentence. ", "", "second one\t", "   "])
    assert read_sentences(p) == ["first sentence.", "second one"]


def test_read_sentences_errors(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="sentence file"):
        read_sentences(tmp_path / "missing.txt")
    with pytest.raises(ValueError, match="no non-blank line"):
        read_sentences(write(tmp_path / "blank.txt", ["", "  "]))


def test_read_stsb_columns_and_extra_column_lines(tmp_path: Path) -> None:
    pairs = read_sts(write(tmp_path / "sts.csv", STSB_LINES), "stsb")
    assert len(pairs) == 3
    assert pairs.scores == [5.0, 1.6, 0.4]
    assert pairs.sentences1 == ["A plane is taking off.", '"Quoted start', "Extra columns here."]
    assert pairs.sentences2 == ["An air plane takes off.", "No quote end", "Ignore them."]


def test_read_plain_tsv(tmp_path: Path) -> None:
    p = write(tmp_path / "pairs.tsv", ["a cat\ta dog\t1.5", "x y\tx  y\t4"])
    pairs = read_sts(p, "tsv")
    assert pairs.sentences1 == ["a cat", "x y"]
    assert pairs.sentences2 == ["a dog", "x  y"]
    assert pairs.scores == [1.5, 4.0]


@pytest.mark.parametrize(
    ("lines", "fmt", "message"),
    [
        (["a\tb"], "tsv", r"line 1: expected at least 3 tab-separated fields"),
        (["ok\tok\t1", "a\tb\thigh"], "tsv", r"line 2: the score must be a number, got 'high'"),
        (["g\tf\ty\ti\t5.0\tonly one sentence"], "stsb", r"line 1: expected at least 7"),
        ([""], "tsv", "holds no sentence pair"),
    ],
)
def test_read_sts_rejects_malformed_files(
    tmp_path: Path, lines: list[str], fmt: str, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        read_sts(write(tmp_path / "bad.txt", lines), fmt)  # type: ignore[arg-type]


def test_read_sts_rejects_unknown_format_and_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="format must be one of"):
        read_sts(write(tmp_path / "a.tsv", ["a\tb\t1"]), "csv")  # type: ignore[arg-type]
    with pytest.raises(FileNotFoundError, match="STS file"):
        read_sts(tmp_path / "nope.tsv", "tsv")
