"""Bit-identity check for refactors: tiny CPU trainings of every modality, saved and compared.

``python benchmarks/refactor_identity.py record DIR`` writes small fixtures (a CIFAR-10
folder of random images, a TU folder of rings and paths, a Davis folder, a 1-layer random
BERT with its sentences, STS pairs and an SST-5 folder; the builders of the tests'
conftest files) under ``DIR/fixtures`` and runs ``contrastkit train`` (``--threads 1``,
CPU) on digits, digits with SupCon, mnist1d, diabetes, digits_rotation, the CIFAR-10
fixture (conv and ResNet-18), ``tu:RINGS``, davis, SST-5 and a SimCSE run, each into
``DIR/runs/NAME``. ``python benchmarks/refactor_identity.py compare BEFORE AFTER`` then
compares every run's ``final.json``, ``metrics.jsonl`` (and SimCSE's history) key by key,
exactly, leaving out only :data:`VOLATILE` and every ``*_time_s`` (wall-clock times,
throughput, the process's peak memory, the commit that trained the run), and the trained
weights of every ``checkpoint.pt`` (``torch.equal``); it prints each difference and exits 1
if there is one.

Record before a change and after it, into two directories outside the checkout; the
fixtures are written at the same path each time (``/tmp/contrastkit-identity``), so that the
paths that configs record are equal.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import pickle
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = Path("/tmp/contrastkit-identity")
# wall-clock times (every key ending in _time_s too), throughput, the process's peak memory
# and the code's identity: all that may differ between runs of the same computation
VOLATILE = frozenset(
    {"epoch_time_s", "eval_time_s", "samples_per_s", "peak_device_memory_mb"}
    | {"git_commit", "git_dirty", "contrastkit_version", "seconds", "wall_s"}
)
COMMON = ["--threads", "1", "--device", "cpu", "--no-progress"]


def test_module(path: str) -> ModuleType:
    """A module of ``tests/`` (its fixture builders), imported from its file."""
    spec = importlib.util.spec_from_file_location(Path(path).stem, ROOT / path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def write_fixtures(root: Path) -> None:
    """The datasets that are read by path, written by the tests' own builders."""
    text_fixtures = test_module("tests/text/conftest.py")
    graph_fixtures = test_module("tests/graphs/conftest.py")
    write_davis = test_module("tests/graphs/test_graph_davis.py").write_davis
    ring, path = graph_fixtures.ring, graph_fixtures.path
    shutil.rmtree(root, ignore_errors=True)
    cifar = root / "cifar" / "cifar-10-batches-py"
    cifar.mkdir(parents=True)
    rng = np.random.default_rng(0)
    for k, name in enumerate([f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]):
        batch = {
            "data": rng.integers(0, 256, (16, 3072), dtype=np.uint8),
            "labels": [(16 * k + j) % 10 for j in range(16)],
        }
        (cifar / name).write_bytes(pickle.dumps(batch))
    graphs = [ring(6 + i % 4) if i % 2 == 0 else path(6 + i % 4) for i in range(40)]
    sizes, labels = [6 + i % 4 for i in range(40)], [i % 2 for i in range(40)]
    graph_fixtures.write_tu(root / "tu", "RINGS", graphs, sizes, labels)
    write_davis(root / "davis")
    text_fixtures.build_tiny_bert(root / "bert")
    sentences = text_fixtures.SENTENCES
    text = root / "text"
    text.mkdir()
    (text / "train.txt").write_text("\n".join(sentences) + "\n")
    scores = [5.0, 1.0, 4.0, 0.5, 3.0, 2.0]
    pairs = zip(sentences[0::2], sentences[1::2], scores, strict=True)
    (text / "dev.tsv").write_text("\n".join(f"{a}\t{b}\t{y}" for a, b, y in pairs) + "\n")
    sst = text / "sst"
    sst.mkdir()
    for split, n in (("train", 24), ("dev", 6), ("test", 12)):
        lines = [f"{i % 5} {sentences[i % len(sentences)]}" for i in range(n)]
        (sst / f"sentiment-{split}").write_text("\n".join(lines) + "\n")


def runs(root: Path) -> dict[str, list[str]]:
    """Name -> ``contrastkit train`` arguments of every run of the check."""
    bert = ["--text-model", str(root / "bert"), "--max-length", "12"]
    small = ["--knn-k", "5", "--knn-small-k", "3"]
    return {
        "digits": ["--dataset", "digits", "--epochs", "2", "--online-probe"],
        "digits_supcon": ["--dataset", "digits", "--framework", "supervised", "--loss",
                          "supcon", "--epochs", "1"],
        "mnist1d": ["--dataset", "mnist1d", "--num-samples", "400", "--epochs", "1"],
        "diabetes": ["--dataset", "diabetes", "--epochs", "1", "--batch-size", "32"],
        "digits_rotation": ["--dataset", "digits_rotation", "--epochs", "1"],
        "cifar_conv": ["--dataset", "cifar10", "--data-root", str(root / "cifar"), "--epochs",
                       "1", "--batch-size", "16", "--linear-epochs", "2", *small],
        "cifar_resnet": ["--dataset", "cifar10", "--data-root", str(root / "cifar"),
                         "--backbone", "resnet18", "--width", "4", "--loss", "macl",
                         "--epochs", "1", "--batch-size", "16", "--linear-epochs", "2", *small],
        "tu_rings": ["--dataset", "tu:RINGS", "--data-root", str(root / "tu"), "--epochs", "2",
                     "--batch-size", "8", *small],
        "davis": ["--dataset", "davis", "--data-root", str(root / "davis"), "--epochs", "1",
                  "--batch-size", "4", "--finetune-epochs", "1"],
        "sst5": ["--dataset", "sst5", "--data-root", str(root / "text" / "sst"), *bert,
                 "--epochs", "1", "--batch-size", "8"],
        "simcse": ["--dataset", "sentences", "--data-root", str(root / "text" / "train.txt"),
                   "--framework", "simcse", "--loss", "macl", *bert, "--pooling", "cls",
                   "--mlp-head", "--dropout", "0.1", "--sts-dev", str(root / "text" / "dev.tsv"),
                   "--sts-format", "tsv", "--eval-steps", "2", "--batch-size", "4", "--epochs",
                   "2", "--epoch-steps", "2", "--optimizer", "adamw", "--schedule", "linear",
                   "--clip-grad", "1.0"],
    }  # fmt: skip


def record(out: Path, only: list[str]) -> int:
    write_fixtures(FIXTURES)
    failed = []
    for name, args in runs(FIXTURES).items():
        if only and name not in only:
            continue
        run = out / "runs" / name
        shutil.rmtree(run, ignore_errors=True)
        argv = [sys.executable, "-m", "contrastkit", "train", *args, *COMMON, "--out", str(run)]
        done = subprocess.run(argv, capture_output=True, text=True, check=False)
        print(f"{name}: exit {done.returncode}", flush=True)
        if done.returncode:
            print(done.stderr[-2000:])
            failed.append(name)
    return 1 if failed else 0


def strip(value: object) -> object:
    """``value`` without the :data:`VOLATILE` keys, at any depth."""
    if isinstance(value, dict):
        return {
            k: strip(v) for k, v in value.items() if k not in VOLATILE and not k.endswith("_time_s")
        }
    if isinstance(value, list):
        return [strip(v) for v in value]
    return value


def diff(a: object, b: object, where: str) -> list[str]:
    """Every path at which ``a`` and ``b`` differ."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = [
            f"{where}.{k}: only in {'before' if k in a else 'after'}" for k in a.keys() ^ b.keys()
        ]
        return out + [d for k in a.keys() & b.keys() for d in diff(a[k], b[k], f"{where}.{k}")]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [
            d
            for i, (x, y) in enumerate(zip(a, b, strict=True))
            for d in diff(x, y, f"{where}[{i}]")
        ]
    return [] if a == b else [f"{where}: {a!r} != {b!r}"]


def load(path: Path) -> object:
    if path.suffix == ".jsonl":
        return [json.loads(line) for line in path.read_text().splitlines() if line]
    return json.loads(path.read_text())


def weights_differ(before: Path, after: Path) -> list[str]:
    """The names of the model tensors that differ between two checkpoints."""
    import torch

    if not before.exists():
        return []
    a, b = (torch.load(p, weights_only=True)["model"] for p in (before, after))
    if a.keys() != b.keys():
        return [f"{before}: the models' parameter names differ"]
    return [f"{before}: {k} differs" for k in a if not torch.equal(a[k], b[k])]


def compare(before: Path, after: Path) -> int:
    problems = []
    for run in sorted((before / "runs").iterdir()):
        files = sorted(p.name for p in run.iterdir() if p.suffix in (".json", ".jsonl"))
        found: list[str] = []
        for name in files:
            other = after / "runs" / run.name / name
            if not other.exists():
                found.append(f"{run.name}/{name}: missing after")
                continue
            found += diff(strip(load(run / name)), strip(load(other)), f"{run.name}/{name}")
        found += weights_differ(run / "checkpoint.pt", after / "runs" / run.name / "checkpoint.pt")
        print(f"{run.name}: {', '.join(files)}, weights {'differ' if found else 'identical'}")
        problems += found
    ignored = ", ".join([*sorted(VOLATILE), "*_time_s"])
    print("\n".join(problems) or f"all identical (ignored: {ignored})")
    return 1 if problems else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="verb", required=True)
    rec = sub.add_parser("record")
    rec.add_argument("out", type=Path)
    rec.add_argument("--only", nargs="*", default=[])
    cmp = sub.add_parser("compare")
    cmp.add_argument("before", type=Path)
    cmp.add_argument("after", type=Path)
    args = parser.parse_args()
    if args.verb == "record":
        return record(args.out, args.only)
    return compare(args.before, args.after)


if __name__ == "__main__":
    raise SystemExit(main())
