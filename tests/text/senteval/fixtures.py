"""Small SentEval ``downstream/`` folders written by the tests, one file per format."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np

from contrastkit.text.senteval.readers import BINARY_FILES, STS_SUBSETS

WORDS = [
    "a",
    "man",
    "is",
    "playing",
    "guitar",
    "dog",
    "runs",
    "park",
    "woman",
    "cooks",
    "cat",
    "horse",
]


def sentence(i: int, polarity: int | None = None) -> str:
    """A deterministic small sentence; with ``polarity`` it leans good (1) or bad (0)."""
    rng = np.random.default_rng(i)
    words = list(rng.choice(WORDS, size=4))
    if polarity is not None:
        words.append(
            ("good great fun nice" if polarity else "bad awful dull boring").split()[i % 4]
        )
    return " ".join(words) + f" w{i}"


def hash_embed(sentences: list[str], dim: int = 16) -> np.ndarray:
    """Bag-of-words embeddings from word hashes: similar words → similar vectors."""
    out = np.zeros((len(sentences), dim), dtype=np.float32)
    for row, s in enumerate(sentences):
        for w in s.split():
            seed = int(hashlib.md5(w.encode()).hexdigest()[:8], 16)
            out[row] += np.random.default_rng(seed).standard_normal(dim)
    return out


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8", newline="")
    return path


def sts_lines(n: int, offset: int = 0) -> tuple[list[str], list[str]]:
    inputs = [f"{sentence(offset + i)}\t{sentence(offset + i + 1)}" for i in range(n)]
    golds = [f"{(i * 7 % 11) / 2:.1f}" for i in range(n)]
    return inputs, golds


def write_downstream(root: Path, n: int = 40) -> Path:
    """Every task's files in SentEval's layout (STS-B and SICK with a test split)."""
    for year, subsets in STS_SUBSETS.items():
        folder = root / "STS" / f"{year}-en-test"
        for k, subset in enumerate(subsets):
            inputs, golds = sts_lines(12, offset=100 * k)
            if year in ("STS15", "STS16"):
                golds[3] = golds[8] = ""  # unscored pairs
            write(folder / f"STS.input.{subset}.txt", "\n".join(inputs) + "\n")
            write(folder / f"STS.gs.{subset}.txt", "\n".join(golds) + "\n")
        if year == "STS13":  # licensed SMT input absent, gold present
            write(folder / "STS.gs.SMT.txt", "1.0\n2.0\n")
    for split in ("train", "dev", "test"):
        inputs, golds = sts_lines(20, offset={"train": 0, "dev": 30, "test": 60}[split])
        rows = [
            f"main-captions\tMSRvid\t2012test\t{i:04d}\t{g}\t{line}"
            for i, (g, line) in enumerate(zip(golds, inputs, strict=True))
        ]
        write(root / "STS" / "STSBenchmark" / f"sts-{split}.csv", "\n".join(rows) + "\n")
    for split, end in (("train", "\n"), ("trial", "\n"), ("test_annotated", "\r\n")):
        inputs, golds = sts_lines(20, offset=len(split))
        header = "pair_ID\tsentence_A\tsentence_B\trelatedness_score\tentailment_judgment"
        rows = [header] + [
            f"{i}\t{line}\t{1 + float(g) * 0.8:.1f}\tNEUTRAL"
            for i, (g, line) in enumerate(zip(golds, inputs, strict=True))
        ]
        write(root / "SICK" / f"SICK_{split}.txt", end.join(rows) + end)
    for task, (pos, neg) in BINARY_FILES.items():
        write(root / task / pos, "\n".join(sentence(i, 1) for i in range(n)) + "\n")
        write(root / task / neg, "\n".join(sentence(n + i, 0) for i in range(n)) + "\n")
    for split, size in (("train", n), ("dev", n // 2), ("test", n // 2)):
        rows = [f"{sentence(7 * i + len(split), i % 2)} \t{i % 2}" for i in range(size)]
        write(root / "SST" / "binary" / f"sentiment-{split}", "\n".join(rows) + "\n")
    classes = ("ABBR", "DESC", "ENTY", "HUM", "LOC", "NUM")
    trec = [f"{classes[i % 2]}:other {sentence(i, i % 2)} ?" for i in range(n)]
    latin = "\n".join([*trec, "DESC:def What is a caf\xe9 ?"]) + "\n"
    write(root / "TREC" / "train_5500.label", latin.encode("latin-1"))
    write(root / "TREC" / "TREC_10.label", "\n".join(trec[: n // 2]) + "\n")
    for split, size in (("train", n), ("test", n // 2)):
        rows = ["Quality\t#1 ID\t#2 ID\t#1 String\t#2 String"] + [
            f"{i % 2}\t{i}\t{i + 1000}\t{sentence(i)}\t"
            + (sentence(i) if i % 2 else sentence(i + 500))
            for i in range(size)
        ]
        write(root / "MRPC" / f"msr_paraphrase_{split}.txt", "\ufeff" + "\n".join(rows) + "\n")
    return root
