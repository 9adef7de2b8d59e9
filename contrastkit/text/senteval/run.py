"""Run SentEval's tasks over a ``downstream/`` folder and report them in SimCSE's layout.

Task names (``--tasks``) follow SentEval: ``STS12`` ... ``STS16``, ``STSBenchmark``,
``SICKRelatedness``, ``MR``, ``CR``, ``SUBJ``, ``MPQA``, ``SST2``, ``TREC``, ``MRPC``.
STS-B and SICK-R are evaluated on every split found; the table and the average use the
test split (SimCSE's table). Averages are over the tasks that were evaluated, and say
how many of the 7 those are.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..senteval_names import KFOLD, STS_TASKS, TASKS, TRANSFER_TASKS
from . import readers
from .readers import MissingTaskFilesError
from .sts import evaluate_sts_set, evaluate_sts_year
from .transfer import (
    SKLEARN,
    Fitting,
    inner_kfold,
    kfold_then_test,
    mrpc_features,
    split_classifier,
)

COLUMNS = {"STSBenchmark": "STS-B", "SICKRelatedness": "SICK-R", "SST2": "SST"}
SPLIT_NAMES = {"STSBenchmark": "sts-{}.csv", "SICKRelatedness": "SICK_{}.txt"}
SICK_SPLITS = {"train": "train", "dev": "trial", "test": "test_annotated"}

TaskEmbed = Callable[[str, list[str]], np.ndarray]


@dataclass
class Layout:
    """Where each task's files are: ``data`` is SentEval's ``downstream/`` folder;
    ``stsb`` overrides the STS Benchmark folder (default ``data/STS/STSBenchmark``)."""

    data: Path
    stsb: Path | None = None

    def folder(self, task: str) -> Path:
        if task.startswith("STS1"):
            return self.data / "STS" / f"{task}-en-test"
        if task == "STSBenchmark":
            return self.stsb or self.data / "STS" / "STSBenchmark"
        if task == "SICKRelatedness":
            return self.data / "SICK"
        return self.data / {"SST2": "SST/binary"}.get(task, task)


@dataclass
class SentEvalResult:
    """Every number of a run (``tasks``), the skipped tasks and why, and timing."""

    tasks: dict[str, dict[str, object]] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)

    def score(self, task: str) -> float | None:
        """The table's number: Spearman ``all`` (STS12–16), test Spearman (STS-B,
        SICK-R), test accuracy (transfer); ``None`` when not evaluated."""
        res = self.tasks.get(task)
        if res is None:
            return None
        if task.startswith("STS1"):
            return res["spearman"]["all"]  # type: ignore[index]
        if task in SPLIT_NAMES:
            test = res.get("test")
            return None if test is None else test["spearman"]  # type: ignore[index]
        return res["acc"]  # type: ignore[return-value]

    def average(self, tasks: tuple[str, ...]) -> tuple[float | None, int]:
        values = [v for v in (self.score(t) for t in tasks) if v is not None]
        return (float(np.mean(values)) if values else None), len(values)

    def to_dict(self) -> dict[str, object]:
        sts_avg, sts_n = self.average(STS_TASKS)
        tr_avg, tr_n = self.average(TRANSFER_TASKS)
        return {
            **self.tasks,
            "STS_avg": {"value": sts_avg, "tasks": sts_n},
            "transfer_avg": {"value": tr_avg, "tasks": tr_n},
            "skipped": self.skipped,
            "seconds": self.seconds,
        }


def _split_pairs(layout: Layout, task: str) -> dict[str, readers.Pairs]:
    folder = layout.folder(task)
    if task == "STSBenchmark":
        files = {s: folder / SPLIT_NAMES[task].format(s) for s in ("train", "dev", "test")}
        read = readers.read_stsb
    else:
        files = {s: folder / SPLIT_NAMES[task].format(SICK_SPLITS[s]) for s in SICK_SPLITS}
        read = readers.read_sick
    found = {s: read(p) for s, p in files.items() if p.is_file()}
    if not found:
        raise MissingTaskFilesError(task, list(files.values()))
    return found


def _length_order(*columns: list) -> np.ndarray:
    """The order SentEval sorts a task's samples into before classifying them: by word
    count of each sentence column, then label (stable). It fixes which samples the seeded
    folds draw, so it matters for the cross-validated tasks."""
    keys = [
        tuple(len(c[i].split()) if isinstance(c[i], str) else c[i] for c in columns)
        for i in range(len(columns[0]))
    ]
    return np.array(sorted(range(len(keys)), key=keys.__getitem__), dtype=np.int64)


def _transfer(
    task: str, folder: Path, embed: Callable[[list[str]], np.ndarray], k: int, fitting: Fitting
) -> dict:
    """One transfer task; embeddings come in file order (so the cache keys stay stable)
    and are then put in SentEval's order (:func:`_length_order`)."""
    if task in readers.BINARY_FILES:
        data = readers.read_binary(folder, task)
        order = _length_order(data.x, data.y)
        return inner_kfold(embed(data.x)[order], np.array(data.y)[order], k=k, fitting=fitting)
    if task in ("SST2", "TREC"):
        splits = readers.read_sst2(folder) if task == "SST2" else readers.read_trec(folder)
        emb = _embed_splits(embed, {s: d.x for s, d in splits.items()})
        xs, ys = {}, {}
        for split, d in splits.items():
            order = _length_order(d.x, d.y)
            xs[split], ys[split] = emb[split][order], np.array(d.y)[order]
        if task == "SST2":
            return split_classifier(xs, ys, fitting=fitting)
        train, test = (xs["train"], ys["train"]), (xs["test"], ys["test"])
        return kfold_then_test(*train, *test, k=k, fitting=fitting)
    pairs = readers.read_mrpc(folder)  # MRPC
    emb = _embed_splits(embed, {s: p.a + p.b for s, p in pairs.items()})
    feats, ys = {}, {}
    for split, p in pairs.items():
        order = _length_order(p.a, p.b, p.y)
        feats[split] = mrpc_features(emb[split][: len(p)], emb[split][len(p) :])[order]
        ys[split] = np.array(p.y, dtype=int)[order]
    train, test = (feats["train"], ys["train"]), (feats["test"], ys["test"])
    return kfold_then_test(*train, *test, k=k, f1=True, fitting=fitting)


def _embed_splits(
    embed: Callable[[list[str]], np.ndarray], texts: dict[str, list[str]]
) -> dict[str, np.ndarray]:
    """Embed the distinct sentences of all splits in one call, then index per split."""
    unique = list(dict.fromkeys(s for xs in texts.values() for s in xs))
    emb = embed(unique)
    index = {s: i for i, s in enumerate(unique)}
    return {split: emb[[index[s] for s in xs]] for split, xs in texts.items()}


def check_task_files(layout: Layout, tasks: tuple[str, ...], missing_ok: bool = True) -> None:
    """Read the files of every task in ``tasks`` that has them, so that an unknown task or a
    damaged, empty or non-UTF-8 file is refused (``ValueError`` naming it) before any
    encoder is loaded; tasks with missing files are left to :func:`run_senteval` to skip,
    or refused (:class:`~.readers.MissingTaskFilesError`, naming them) when not
    ``missing_ok``."""
    _check_names(tasks)
    if not tasks:
        raise ValueError("--tasks names no task")
    for task in tasks:
        folder = layout.folder(task)
        try:
            if task.startswith("STS1"):
                readers.read_sts_year(folder, task)
            elif task in SPLIT_NAMES:
                _split_pairs(layout, task)
            elif task in readers.BINARY_FILES:
                readers.read_binary(folder, task)
            elif task == "SST2":
                readers.read_sst2(folder)
            elif task == "TREC":
                readers.read_trec(folder)
            else:
                readers.read_mrpc(folder)
        except MissingTaskFilesError:
            if not missing_ok:
                raise
            continue


def _check_names(tasks: tuple[str, ...]) -> None:
    unknown = [t for t in tasks if t not in TASKS]
    if unknown:
        raise ValueError(f"--tasks: unknown {unknown}; choose from {', '.join(TASKS)}")


def run_senteval(
    layout: Layout,
    embed: TaskEmbed,
    tasks: tuple[str, ...] = TASKS,
    kfold: int = KFOLD,
    log: Callable[[str], None] = print,
    after_task: Callable[[SentEvalResult], None] | None = None,
    fitting: Fitting = SKLEARN,
) -> SentEvalResult:
    """Evaluate ``tasks``; a task with missing files is skipped with one logged line.

    ``after_task`` is called with the results so far after every evaluated task (the
    command uses it to keep ``--out`` current during long runs); ``fitting`` says which
    transfer classifier and how many fits at once (:class:`~.transfer.Fitting`)."""
    _check_names(tasks)
    result = SentEvalResult()
    for task in tasks:
        start = time.perf_counter()
        task_embed = lambda sentences, task=task: embed(task, sentences)  # noqa: E731
        folder = layout.folder(task)
        try:
            if task.startswith("STS1"):
                res = evaluate_sts_year(readers.read_sts_year(folder, task), task_embed)
            elif task in SPLIT_NAMES:
                splits = _split_pairs(layout, task)
                res = {s: evaluate_sts_set(p, task_embed) for s, p in splits.items()}
                if "test" not in res:
                    log(f"{task}: no test split in {folder}; reporting {', '.join(res)} only")
            else:
                res = _transfer(task, folder, task_embed, kfold, fitting)
        except MissingTaskFilesError as exc:
            result.skipped[task] = str(exc)
            log(f"skipped {task}: looked for {', '.join(str(f) for f in exc.files)}")
            continue
        result.tasks[task] = res
        result.seconds[task] = round(time.perf_counter() - start, 2)
        log(f"{task}: {_summary(task, res)} ({result.seconds[task]:.0f} s)")
        if after_task is not None:
            after_task(result)
    return result


def _summary(task: str, res: dict) -> str:
    if task.startswith("STS1"):
        return f"Spearman all {res['spearman']['all']:.2f}, wmean {res['spearman']['wmean']:.2f}"
    if task in SPLIT_NAMES:
        return ", ".join(f"{s} Spearman {r['spearman']:.2f}" for s, r in res.items())
    return f"acc {res['acc']:.2f}" + (f", F1 {res['f1']:.2f}" if "f1" in res else "")


def markdown_table(result: SentEvalResult, model: str) -> str:
    """Two Markdown tables in SimCSE's layout (STS, then transfer), "–" for missing tasks."""

    def fmt(v: float | None) -> str:
        return "–" if v is None else f"{v:.2f}"

    lines = []
    for names in (STS_TASKS, TRANSFER_TASKS):
        avg, n = result.average(names)
        head = [COLUMNS.get(t, t) for t in names] + [f"Avg. ({n}/7)"]
        lines += [
            "| Model | " + " | ".join(head) + " |",
            "|---" * (len(head) + 1) + "|",
            f"| {model} | " + " | ".join(fmt(result.score(t)) for t in names) + f" | {fmt(avg)} |",
            "",
        ]
    return "\n".join(lines)
