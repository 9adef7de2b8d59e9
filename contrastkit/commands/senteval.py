"""``contrastkit senteval``: SentEval's 7 STS + 7 transfer tasks for any local encoder."""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path
from typing import TYPE_CHECKING

from ..engine import DEVICES, PRECISIONS
from ..rundir import atomic_write_text, check_output_file
from ..text.encoder import POOLINGS
from ..text.senteval_names import CLASSIFIERS, KFOLD
from ..text.senteval_names import TASKS as TASK_NAMES
from ..training.settings import listed

if TYPE_CHECKING:
    from ..text.senteval import SentEvalResult

# SentEval's task names, comma-separated (from text.senteval_names, which building the
# CLI parser imports without scikit-learn)
TASKS = ",".join(TASK_NAMES)

NAME = "senteval"
HELP = (
    "SentEval-compatible evaluation: STS12-16, STS-B, SICK-R (Spearman x100 of cosine "
    "similarity) and MR, CR, SUBJ, MPQA, SST-2, TREC, MRPC (logistic regression accuracy), "
    "read from SentEval's data/downstream folder; prints SimCSE's table."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--model",
        help="model folder (transformers or sentence-transformers) or a contrastkit SimCSE "
        "run directory (uses its best/); default: the all-MiniLM-L6-v2 wheel",
    )
    parser.add_argument(
        "--data", required=True, help="SentEval's downstream/ folder (STS/, SICK/, MR/, ...)"
    )
    parser.add_argument(
        "--stsb", help="folder with sts-{train,dev,test}.csv (default: DATA/STS/STSBenchmark)"
    )
    parser.add_argument("--tasks", default=TASKS, help="comma-separated subset of: " + TASKS)
    parser.add_argument("--device", default="auto", help=listed(DEVICES))
    parser.add_argument("--batch-size", type=int, default=128, help="encoding batch size")
    parser.add_argument(
        "--precision",
        choices=tuple(PRECISIONS),
        default="fp32",
        help="encode under autocast (bf16/fp16); fp32 is SentEval's and the papers' setting",
    )
    parser.add_argument("--threads", type=int, help="torch CPU threads (default: torch's)")
    parser.add_argument(
        "--classifier",
        choices=CLASSIFIERS,
        default=CLASSIFIERS[0],
        help="transfer tasks: sklearn logistic regression, or pytorch: SentEval's Adam one "
        "that SimCSE's evaluation trains (on --device)",
    )
    parser.add_argument(
        "--jobs", type=int, default=1, help="transfer classifiers fitted at once (same scores)"
    )
    parser.add_argument("--pooling", choices=POOLINGS, help="override the model's pooling")
    parser.add_argument("--max-length", type=int, help="override the model's maximum length")
    parser.add_argument(
        "--kfold", type=int, default=KFOLD, help="cross-validation folds (SentEval's: %(default)s)"
    )
    parser.add_argument(
        "--cache-dir", help="embedding cache (default: $XDG_CACHE_HOME/contrastkit/senteval)"
    )
    parser.add_argument("--no-cache", action="store_true", help="always encode, write no cache")
    parser.add_argument("--name", help="model name in the table (default: from the folder)")
    parser.add_argument("--out", help="write every number as JSON here (and the table to .md)")


RESULT_KEYS = ("model", "encoder", "kfold")  # what --out holds (with the tasks' numbers)


def run(args: argparse.Namespace) -> int:
    from ..text.encoder import default_model_path
    from ..text.senteval import Layout, encoder_embedder, markdown_table, run_senteval
    from ..text.senteval.embed import default_cache_dir
    from ..text.senteval.run import check_task_files
    from ..text.senteval.transfer import Fitting
    from .common import apply_threads

    data = Path(args.data)
    if not data.is_dir():
        raise FileNotFoundError(f"--data {str(data)!r} is not a folder (SentEval's downstream/)")
    if args.kfold < 2:
        raise ValueError(f"--kfold must be >= 2, got {args.kfold}")
    apply_threads(args.threads)
    fitting = Fitting(args.classifier, jobs=args.jobs)  # checked before any encoding
    # before any work; an existing --out (and its .md) is replaced only if it is an
    # earlier result of this command
    out = None if args.out is None else check_output_file(args.out, keys=RESULT_KEYS)
    if out is not None and out.suffix == ".md":
        raise ValueError(
            f"--out {args.out!r}: the JSON goes there and the table beside it as "
            ".md, so --out must not end in .md (e.g. results.json)"
        )
    if out is not None and out.with_suffix(".md").exists() and not out.exists():
        raise ValueError(
            f"--out {args.out!r}: its table would replace {str(out.with_suffix('.md'))!r}, "
            "which this command did not write beside a result; choose another file"
        )
    tasks = tuple(t.strip() for t in args.tasks.split(",") if t.strip())
    layout = Layout(data, Path(args.stsb) if args.stsb else None)
    # bad or missing data refused before the model loads: every task asked for is evaluated
    check_task_files(layout, tasks, missing_ok=False)
    cache = (
        None if args.no_cache else Path(args.cache_dir) if args.cache_dir else default_cache_dir()
    )
    embed, info = encoder_embedder(
        args.model or default_model_path(),
        device=args.device,
        batch_size=args.batch_size,
        pooling=args.pooling,
        max_length=args.max_length,
        cache_dir=cache,
        precision=args.precision,
    )
    fitting = dataclasses.replace(fitting, device=str(info["device"]))
    name = args.name or _display_name(Path(str(info["model"])))

    def save(result: SentEvalResult) -> None:
        if out is not None:
            payload = {
                "model": name,
                "encoder": info,
                "kfold": args.kfold,
                "classifier": fitting.kind,
                **result.to_dict(),
            }
            atomic_write_text(out, json.dumps(payload, indent=2) + "\n")
            atomic_write_text(out.with_suffix(".md"), markdown_table(result, name))

    result = run_senteval(
        layout, embed, tasks, args.kfold, _flush_print, after_task=save, fitting=fitting
    )
    save(result)
    print(markdown_table(result, name))
    print(f"encoded {embed.encoded} sentences (the rest came from the cache {cache})")
    return 0


def _flush_print(line: str) -> None:
    print(line, flush=True)


def _display_name(root: Path) -> str:
    """The model's name for the table: its folder, or the parent's for ``best``/``model``."""
    return root.parent.name if root.name in ("best", "model") else root.name
