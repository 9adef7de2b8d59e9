"""``contrastkit simcse``: unsupervised SimCSE fine-tuning with any two-view loss. (LASCon's
supervised text task on SST-5 is a dataset of the shared loop: ``contrastkit train
--dataset sst5``, :mod:`contrastkit.text.trainer`.)"""

from __future__ import annotations

import argparse
import json

from ..frameworks import check_run
from ..rundir import prepare_run_dir, removed_if_unused
from ..text.data import STS_FORMATS
from ..text.diagnostics import plot_diagnostics
from ..text.encoder import POOLINGS
from ..text.presets import BUILTIN, PRESETS, resolve_options
from ..text.simcse_trainer import (
    BEST,
    HISTORY,
    SimCSETrainer,
    loss_hyperparameters,
)
from ..training import TrainConfig
from ..training.config_io import parse_assignments
from .common import apply_threads

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
    parser.add_argument(
        "--senteval", help="SentEval's downstream/ folder: score the selected model after training"
    )
    parser.add_argument("--senteval-tasks", help="comma-separated SentEval tasks (default: all)")
    parser.add_argument(
        "--senteval-classifier",
        choices=("sklearn", "pytorch"),
        default="sklearn",
        help="SentEval's transfer classifier (pytorch: the Adam one SimCSE's evaluation trains)",
    )
    parser.add_argument(
        "--senteval-jobs", type=int, default=1, help="SentEval classifiers fitted at once"
    )
    parser.add_argument(
        "--out", required=True, help="run folder: best/ model, history.json, final.json"
    )
    parser.add_argument("--model", help="local model folder (default: the MiniLM wheel)")
    parser.add_argument("--pooling", choices=POOLINGS, help="default: the model's own, else cls")
    parser.add_argument("--mlp-head", action="store_true", help="SimCSE's training-only MLP head")
    parser.add_argument("--dropout", type=float, help="dropout rate (default 0.1, SimCSE)")
    parser.add_argument("--batch-size", type=int, help="default 64")
    parser.add_argument("--lr", type=float, help="default 3e-5")
    parser.add_argument("--max-length", type=int, help="training truncation length (32)")
    parser.add_argument("--epochs", type=int, help="default 1")
    parser.add_argument(
        "--max-steps", type=int, help="stop the (one-epoch) run after this many steps"
    )
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
    parser.add_argument("--compile", action="store_true", help="torch.compile the encoder")
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    parser.add_argument(
        "--overwrite", action="store_true", help="empty a non-empty --out and start afresh"
    )
    parser.add_argument(
        "--resume", action="store_true", help="continue the run in --out from its checkpoint"
    )


def run(args: argparse.Namespace) -> int:
    given = {k: getattr(args, k) for k in BUILTIN}
    options, preset_loss_args, preset = resolve_options(given, args.preset)
    if preset is not None:
        print(preset.describe())
    args.__dict__.update(options)
    for flag in ("epochs", "batch_size", "max_length", "eval_every", "max_steps"):
        value = getattr(args, flag)
        if value is not None and value < 1:
            name = "--" + flag.replace("_", "-")
            raise ValueError(f"{name} must be a positive integer, got {value}")
    if args.train_file is None:
        raise ValueError("--train-file is required (one sentence per line)")
    if args.max_steps is not None and args.epochs != 1:
        raise ValueError("--max-steps caps a one-epoch run; leave it out with --epochs > 1")
    apply_threads(args.threads)
    loss_args = {**preset_loss_args, **parse_assignments(args.loss_arg)}
    check_run("simcse", args.loss, loss_args, {})  # the loss and its arguments, up front
    config = config_from_args(args, loss_args)  # every value checked before --out is touched
    SimCSETrainer.check_paths(config, args.out)
    with removed_if_unused(args.out):
        out = prepare_run_dir(args.out, overwrite=args.overwrite, resume=args.resume)
        trainer = SimCSETrainer(config, out, progress=not args.no_progress)
        encoder = trainer.model.encoder.encoder
        print(
            f"loss {args.loss}: {json.dumps(loss_hyperparameters(trainer.model.loss))}; "
            f"{encoder.pooling} pooling, dropout {args.dropout}, {len(trainer.train_x)} sentences"
        )
        final = trainer.fit(resume=args.resume)
    if "sts_dev_spearman_best" in final:
        first, last = final["sts_dev_spearman_before"], final["sts_dev_spearman_last"]
        print(
            f"STS dev Spearman x100: before {100 * first:.2f}, after {100 * last:.2f} "
            f"(change {100 * (last - first):+.2f}), best "
            f"{100 * final['sts_dev_spearman_best']:.2f} at step {final['best_step']}; "
            f"{final['steps']} steps in {final['train_time_s']:.0f} s"
        )
    names = {"senteval_sts_avg": "STS avg", "senteval_transfer_avg": "transfer avg"}
    averages = [f"{name} {final[key]:.2f}" for key, name in names.items() if key in final]
    if averages:
        print(f"SentEval of {out}/{BEST}: {', '.join(averages)} ({out}/senteval.md)")
    plot_diagnostics(out / HISTORY, out / "diagnostics.png")
    print(f"saved {out}/{BEST}, {out}/{HISTORY}, {out}/final.json and {out}/diagnostics.png")
    return 0


def config_from_args(args: argparse.Namespace, loss_args: dict[str, object]) -> TrainConfig:
    """SimCSE's unsupervised recipe (module docstring of :mod:`contrastkit.text.simcse_trainer`)
    as a run of the shared loop, with the command's options."""
    return TrainConfig(
        framework="simcse",
        loss=args.loss,
        loss_args=loss_args,
        dataset="sentences",
        data_root=args.train_file,
        text_model=args.model,
        pooling=args.pooling,
        mlp_head=args.mlp_head,
        dropout=args.dropout,
        max_length=args.max_length,
        sts_dev=args.sts_dev,
        sts_format=args.sts_format,
        eval_steps=args.eval_every if args.sts_dev else None,
        senteval=args.senteval,
        senteval_tasks=args.senteval_tasks,
        senteval_classifier=args.senteval_classifier,
        senteval_jobs=args.senteval_jobs,
        batch_size=args.batch_size,
        epochs=args.epochs,
        epoch_steps=args.max_steps,
        lr=args.lr,
        lr_scaling="none",
        optimizer="adamw",
        weight_decay=0.0,
        schedule="linear",  # to 0 over the optimiser steps, no warm-up (Hugging Face Trainer)
        clip_grad=1.0,
        seed=args.seed,
        device=args.device,
        precision=args.precision,
        grad_accum=args.grad_accum,
        compile=args.compile,
        threads=args.threads,
    )
