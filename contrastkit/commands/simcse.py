"""``contrastkit simcse``: unsupervised SimCSE fine-tuning with any two-view loss. (LASCon's
supervised text task on SST-5 is a dataset of the shared loop: ``contrastkit train
--dataset sst5``, :mod:`contrastkit.text.trainer`.)"""

from __future__ import annotations

import argparse
import json

from .. import losses
from ..rundir import prepare_run_dir
from ..text.data import STS_FORMATS, read_sentences, read_sts
from ..text.diagnostics import plot_diagnostics
from ..text.encoder import POOLINGS, SentenceEncoder, default_model_path
from ..text.presets import BUILTIN, PRESETS, resolve_options
from ..text.simcse import SimCSEConfig, build_loss, loss_hyperparameters, train_simcse
from ..training.config_io import parse_assignments
from . import apply_threads

NAME = "simcse"
HELP = (
    "Unsupervised SimCSE: two dropout passes of each sentence are the two views of any "
    "two-view contrastkit loss; STS dev evaluation and best-checkpoint saving. "
    "(SST-5 with SimCLR, SupCon or LASCon: contrastkit train --dataset sst5.)"
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--preset",
        choices=sorted(PRESETS),
        help="a paper's settings (text/presets.py); explicit options override it",
    )
    parser.add_argument("--loss", help="registry loss taking two views (default: infonce)")
    parser.add_argument(
        "--loss-arg",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="loss hyper-parameter (repeatable); overrides the sentence defaults",
    )
    parser.add_argument("--train-file", help="one sentence per line (required)")
    parser.add_argument("--threads", type=int, help="torch CPU threads (default: torch's)")
    parser.add_argument("--sts-dev", help="STS dev pairs for evaluation and model selection")
    parser.add_argument("--sts-format", choices=STS_FORMATS, default="stsb")
    parser.add_argument("--out", required=True, help="run folder: best/ model, history.json")
    parser.add_argument("--model", help="local model folder (default: the MiniLM wheel)")
    parser.add_argument("--pooling", choices=POOLINGS, help="default: the model's own, else cls")
    parser.add_argument("--mlp-head", action="store_true", help="SimCSE's training-only MLP head")
    parser.add_argument("--dropout", type=float, help="dropout rate (default 0.1, SimCSE)")
    parser.add_argument("--batch-size", type=int, help="default 64")
    parser.add_argument("--lr", type=float, help="default 3e-5")
    parser.add_argument("--max-length", type=int, help="training truncation length (32)")
    parser.add_argument("--epochs", type=int, help="default 1")
    parser.add_argument("--max-steps", type=int, help="stop after this many steps")
    parser.add_argument("--eval-every", type=int, help="default 125")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--device", default="auto", help="auto (cuda, mps, cpu), cpu, cuda:N, mps")
    parser.add_argument(
        "--precision",
        choices=("fp32", "bf16", "fp16"),
        default="fp32",
        help="the encoder under autocast (fp16 with a GradScaler); the loss in float32",
    )
    parser.add_argument("--grad-accum", type=int, default=1, help="batches per optimiser step")
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    parser.add_argument(
        "--overwrite", action="store_true", help="empty a non-empty --out and start afresh"
    )


def run(args: argparse.Namespace) -> int:
    given = {k: getattr(args, k) for k in BUILTIN}
    options, preset_loss_args, preset = resolve_options(given, args.preset)
    if preset is not None:
        print(preset.describe())
    args.__dict__.update(options)
    for flag in ("epochs", "batch_size", "max_length", "eval_every"):
        if getattr(args, flag) < 1:
            name = "--" + flag.replace("_", "-")
            raise ValueError(f"{name} must be a positive integer, got {getattr(args, flag)}")
    if args.max_steps is not None and args.max_steps < 1:
        raise ValueError(f"--max-steps must be a positive integer, got {args.max_steps}")
    apply_threads(args.threads)
    if args.train_file is None:
        raise ValueError("--train-file is required (one sentence per line)")
    loss_args = {**preset_loss_args, **parse_assignments(args.loss_arg)}
    losses.check_args(args.loss, loss_args, provided=("in_dim",))  # before loading anything
    out = prepare_run_dir(args.out, overwrite=args.overwrite)
    cfg = config_from_args(args)
    sentences = read_sentences(args.train_file)
    dev = read_sts(args.sts_dev, args.sts_format) if args.sts_dev else None
    encoder = SentenceEncoder.from_pretrained(
        args.model or default_model_path(),
        pooling=args.pooling,
        mlp_head=args.mlp_head,
        dropout=args.dropout,
    )
    loss = build_loss(args.loss, loss_args, dim=encoder.dim)
    print(
        f"loss {args.loss}: {json.dumps(loss_hyperparameters(loss))}; "
        f"{encoder.pooling} pooling, dropout {args.dropout}, {len(sentences)} sentences"
    )
    history = train_simcse(
        encoder, loss, sentences, dev, cfg, out_dir=out, progress=not args.no_progress
    )
    if dev is not None:
        first, last = history.evals[0]["spearman"], history.evals[-1]["spearman"]
        print(
            f"STS dev Spearman x100: before {100 * first:.2f}, after {100 * last:.2f} "
            f"(change {100 * (last - first):+.2f}), best {100 * history.best_spearman:.2f} "
            f"at step {history.best_step}; {history.steps} steps in {history.seconds:.0f} s"
        )
    plot_diagnostics(out / "history.json", out / "diagnostics.png")
    print(f"saved {out}/best, {out}/history.json and {out}/diagnostics.png")
    return 0


def config_from_args(args: argparse.Namespace) -> SimCSEConfig:
    return SimCSEConfig(
        batch_size=args.batch_size,
        lr=args.lr,
        max_length=args.max_length,
        epochs=args.epochs,
        max_steps=args.max_steps,
        eval_every=args.eval_every,
        seed=args.seed,
        device=args.device,
        precision=args.precision,
        grad_accum=args.grad_accum,
    )
