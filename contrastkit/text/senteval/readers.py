"""Readers for SentEval's ``data/downstream`` folder layout (Conneau & Kiela, 2018).

Every reader takes the task's folder and returns plain Python data; a missing file raises
:class:`MissingTaskFilesError` naming every file looked for, so the caller can skip the task.
The formats' quirks are handled here:

* STS12–16 ``STS.input.<subset>.txt`` (``s1 TAB s2``) with ``STS.gs.<subset>.txt``
  (one gold score per line): STS15/16 gold files leave the line **blank** for unscored
  pairs, which are dropped (as SentEval does); only SentEval's subset list is read, so
  STS13's ``STS.gs.SMT.txt`` without its licensed input file is ignored, as in SentEval.
* STS Benchmark ``sts-{train,dev,test}.csv``: score in column 5, sentences in 6–7
  (extra trailing columns ignored; tab-split only, the files hold stray quotes).
* SICK ``SICK_{train,trial,test_annotated}.txt``: a header line, then
  ``pair_ID s_A s_B relatedness entailment``; the test file ends lines with CRLF.
* TREC ``train_5500.label`` is Latin-1 (one byte is not UTF-8); ``LABEL:fine question``.
* MRPC ``msr_paraphrase_{train,test}.txt`` starts with a UTF-8 byte-order mark.
* SST-5 ``SST/fine/sentiment-*`` puts the label first (``LABEL sentence``), SST-2 last
  (``sentence TAB label``).

Whitespace inside sentences is normalised to single spaces: SentEval splits every
sentence on whitespace and its example batchers join the tokens with one space.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

# SentEval's subset lists (senteval/sts.py); STS13 omits the LDC-licensed SMT subset.
STS_SUBSETS: dict[str, tuple[str, ...]] = {
    "STS12": ("MSRpar", "MSRvid", "SMTeuroparl", "surprise.OnWN", "surprise.SMTnews"),
    "STS13": ("FNWN", "headlines", "OnWN"),
    "STS14": ("deft-forum", "deft-news", "headlines", "images", "OnWN", "tweet-news"),
    "STS15": ("answers-forums", "answers-students", "belief", "headlines", "images"),
    "STS16": ("answer-answer", "headlines", "plagiarism", "postediting", "question-question"),
}
# Two-file binary tasks: (positive file, negative file) as in SentEval's loaders.
BINARY_FILES: dict[str, tuple[str, str]] = {
    "MR": ("rt-polarity.pos", "rt-polarity.neg"),
    "CR": ("custrev.pos", "custrev.neg"),
    "SUBJ": ("subj.objective", "subj.subjective"),
    "MPQA": ("mpqa.pos", "mpqa.neg"),
}


class MissingTaskFilesError(FileNotFoundError):
    """A task's files are absent; ``files`` lists every path that was looked for."""

    def __init__(self, task: str, files: list[Path]) -> None:
        self.task = task
        self.files = files
        super().__init__(f"{task}: missing " + ", ".join(str(f) for f in files))


@dataclass(frozen=True)
class Pairs:
    """Scored sentence pairs (STS) or labelled pairs (MRPC): ``a[i], b[i] -> y[i]``."""

    a: list[str]
    b: list[str]
    y: list[float]

    def __len__(self) -> int:
        return len(self.y)


@dataclass(frozen=True)
class Labelled:
    """Single sentences with integer class labels."""

    x: list[str]
    y: list[int]

    def __len__(self) -> int:
        return len(self.y)


def clean(text: str) -> str:
    """Collapse every whitespace run to one space and strip the ends."""
    return " ".join(text.split())


def require(task: str, files: list[Path]) -> None:
    """Raise :class:`MissingTaskFilesError` unless every file exists."""
    missing = [f for f in files if not f.is_file()]
    if missing:
        raise MissingTaskFilesError(task, files)


def read_lines(path: Path, encoding: str = "utf-8") -> list[str]:
    """The lines of ``path`` without their ``\\n`` / ``\\r\\n`` ends (blank lines kept);
    ``ValueError`` naming the file and the first line that is not ``encoding`` text."""
    try:
        with path.open(encoding=encoding, newline="") as fh:
            return [line.rstrip("\r\n") for line in fh]
    except UnicodeDecodeError:  # latin-1 reads any byte: only UTF-8 files get here
        label = "UTF-8" if encoding.lower().startswith("utf-8") else encoding
        for number, raw in enumerate(path.read_bytes().splitlines(), start=1):
            try:
                raw.decode(encoding)
            except UnicodeDecodeError:
                raise ValueError(f"{path} line {number} is not {label} text") from None
        raise ValueError(f"{path} is not {label} text") from None


def read_sts_subset(folder: Path, subset: str) -> Pairs:
    """One STS12–16 subset; pairs whose gold line is blank are dropped."""
    inp = folder / f"STS.input.{subset}.txt"
    gold = folder / f"STS.gs.{subset}.txt"
    require(folder.name, [inp, gold])
    lines, scores = read_lines(inp), read_lines(gold)
    while lines and not lines[-1].strip():
        lines.pop()
    while scores and not scores[-1].strip() and len(scores) > len(lines):
        scores.pop()
    if len(lines) != len(scores):
        raise ValueError(
            f"{inp} has {len(lines)} pairs but {gold} has {len(scores)} lines; they must align"
        )
    a, b, y = [], [], []
    for number, (line, score) in enumerate(zip(lines, scores, strict=True), start=1):
        if not score.strip():
            continue  # unscored pair (STS15/16)
        fields = line.split("\t")
        if len(fields) < 2:
            raise ValueError(f"{inp} line {number}: expected 'sentence1 TAB sentence2'")
        a.append(clean(fields[0]))
        b.append(clean(fields[1]))
        y.append(_score(gold, number, score))
    return Pairs(a, b, y)


def _score(path: Path, number: int, text: str) -> float:
    """The gold score ``text`` of line ``number``; ``ValueError`` naming the file and line
    unless it is a finite number."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise ValueError(f"{path} line {number}: expected a finite score, got {text.strip()!r}")
    return value


def read_sts_year(folder: Path, task: str) -> dict[str, Pairs]:
    """All of SentEval's subsets of ``task`` (``STS12`` ... ``STS16``) in ``folder``."""
    subsets = STS_SUBSETS[task]
    files = [folder / f"STS.{kind}.{s}.txt" for s in subsets for kind in ("input", "gs")]
    require(task, files)
    return {s: read_sts_subset(folder, s) for s in subsets}


def _scored_columns(path: Path, score: int, first: int, header: bool) -> Pairs:
    """Pairs from tab-separated ``path``: gold in column ``score``, sentences in columns
    ``first`` and ``first + 1`` (0-based); blank lines and an optional header skipped."""
    lines = [line for line in read_lines(path) if line.strip()]
    need = max(score, first + 1) + 1
    a, b, y = [], [], []
    for number, line in enumerate(lines[1:] if header else lines, start=2 if header else 1):
        fields = line.split("\t")
        if len(fields) < need:
            raise ValueError(f"{path} line {number}: expected at least {need} tab-separated fields")
        y.append(_score(path, number, fields[score]))
        a.append(clean(fields[first]))
        b.append(clean(fields[first + 1]))
    return Pairs(a, b, y)


def read_stsb(path: Path) -> Pairs:
    """An STS Benchmark csv file (score column 5, sentences 6 and 7, extra columns ignored)."""
    require("STSBenchmark", [path])
    return _scored_columns(path, score=4, first=5, header=False)


def read_sick(path: Path) -> Pairs:
    """A SICK file's relatedness pairs (header skipped, CRLF or LF line ends)."""
    require("SICK", [path])
    return _scored_columns(path, score=3, first=1, header=True)


def read_binary(folder: Path, task: str) -> Labelled:
    """MR, CR, SUBJ or MPQA: label 1 for the first file's lines, 0 for the second's."""
    pos, neg = (folder / name for name in BINARY_FILES[task])
    require(task, [pos, neg])
    x: list[str] = []
    y: list[int] = []
    for path, label in ((pos, 1), (neg, 0)):
        # SentEval reads these files as latin-1 and keeps every line, blank ones too
        # (senteval/binary.py: CR has 4 and MPQA 3, counted in its 3,775 / 10,606 samples)
        sentences = [clean(s) for s in read_lines(path, encoding="latin-1")]
        if not any(sentences):
            raise ValueError(f"{path} holds no sentence (expected one sentence per line)")
        x.extend(sentences)
        y.extend([label] * len(sentences))
    return Labelled(x, y)


def _read_sst_splits(
    task: str, folder: Path, parse: Callable[[str], tuple[str, int] | None], expected: str
) -> dict[str, Labelled]:
    """SST's ``sentiment-{train,dev,test}`` files of ``folder``, one labelled sentence per
    non-blank line as ``parse`` reads it (``None``: not of the form ``expected``)."""
    files = {split: folder / f"sentiment-{split}" for split in ("train", "dev", "test")}
    require(task, list(files.values()))
    out = {}
    for split, path in files.items():
        x, y = [], []
        for number, line in enumerate(read_lines(path), start=1):
            if not line.strip():
                continue
            parsed = parse(line)
            if parsed is None:
                raise ValueError(f"{path} line {number}: expected {expected}")
            x.append(clean(parsed[0]))
            y.append(parsed[1])
        out[split] = Labelled(x, y)
    return out


def _sst2_line(line: str) -> tuple[str, int] | None:
    text, sep, label = line.rpartition("\t")
    return (text, int(label)) if sep and label.strip().isdigit() else None


def _sst_fine_line(line: str) -> tuple[str, int] | None:
    label, _, text = line.strip().partition(" ")
    return (text, int(label)) if label in ("0", "1", "2", "3", "4") and text.strip() else None


def read_sst2(folder: Path) -> dict[str, Labelled]:
    """SST-2 ``sentiment-{train,dev,test}``: ``sentence TAB label`` lines."""
    return _read_sst_splits("SST2", folder, _sst2_line, "'sentence TAB label'")


def read_sst_fine(folder: Path) -> dict[str, Labelled]:
    """SST-5 (SentEval ``SST/fine``) ``sentiment-{train,dev,test}``: ``LABEL sentence``
    lines, the fine-grained label 0–4 (very negative … very positive) before the first space.
    """
    return _read_sst_splits("SST5", folder, _sst_fine_line, "'LABEL sentence', LABEL in 0-4")


TREC_CLASSES = ("ABBR", "DESC", "ENTY", "HUM", "LOC", "NUM")


def read_trec(folder: Path) -> dict[str, Labelled]:
    """TREC ``train_5500.label`` / ``TREC_10.label`` (Latin-1): 6 coarse classes."""
    files = {"train": folder / "train_5500.label", "test": folder / "TREC_10.label"}
    require("TREC", list(files.values()))
    out = {}
    for split, path in files.items():
        x, y = [], []
        for number, line in enumerate(read_lines(path, encoding="latin-1"), start=1):
            if not line.strip():
                continue
            coarse, sep, rest = line.partition(":")
            if not sep or coarse not in TREC_CLASSES or " " not in rest:
                raise ValueError(f"{path} line {number}: expected 'COARSE:fine question'")
            x.append(clean(rest.split(" ", 1)[1]))
            y.append(TREC_CLASSES.index(coarse))
        out[split] = Labelled(x, y)
    return out


def read_mrpc(folder: Path) -> dict[str, Pairs]:
    """MRPC train/test (UTF-8 with a BOM, one header line); label 1 = paraphrase."""
    files = {
        "train": folder / "msr_paraphrase_train.txt",
        "test": folder / "msr_paraphrase_test.txt",
    }
    require("MRPC", list(files.values()))
    out = {}
    for split, path in files.items():
        lines = [line for line in read_lines(path, encoding="utf-8-sig") if line.strip()]
        if not lines or lines[0].split("\t")[0] != "Quality":
            raise ValueError(f"{path}: expected the header 'Quality TAB #1 ID TAB ...' first")
        a, b, y = [], [], []
        for number, line in enumerate(lines[1:], start=2):
            fields = line.split("\t")
            if len(fields) < 5 or fields[0].strip() not in ("0", "1"):
                raise ValueError(
                    f"{path} line {number}: expected 'Quality TAB id TAB id TAB s1 TAB s2'"
                )
            y.append(float(fields[0]))
            a.append(clean(fields[3]))
            b.append(clean(fields[4]))
        out[split] = Pairs(a, b, y)
    return out
