"""``contrastkit train``: train one self-supervised encoder and evaluate it.

Values come from the defaults of :class:`~contrastkit.training.TrainConfig`, then the
``--config`` YAML file, then the command-line flags (highest priority). The width, learning
rate, its scaling, weight decay, schedule and warm-up left unset follow the backbone and
optimiser (:mod:`contrastkit.training.defaults`, ``docs/defaults.md``); a run prints them
with their sources when it starts (stderr) and records them in ``final.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Collection
from pathlib import Path
from typing import Any

from ..frameworks import FRAMEWORK_OPTIONS, check_run
from ..rundir import prepare_run_dir, removed_if_unused
from ..training import TrainConfig, load_yaml, parse_assignments
from ..training.defaults import describe
from ..training.label_aware import trainer_class

NAME = "train"
HELP = "train a self-supervised encoder with any registered loss and evaluate it"

# flag -> (config key, type, help)
FLAGS: dict[str, tuple[str, type, str]] = {
    "--framework": (
        "framework",
        str,
        "simclr, moco, simsiam, barlow_twins, multiview, supervised, nnclr, simcse",
    ),
    "--loss": ("loss", str, "registered loss name (see `contrastkit.losses.available()`)"),
    "--dataset": ("dataset", str, "registered dataset: digits, cifar10, imagefolder, tu:NAME, ..."),
    "--modality": (
        "modality",
        str,
        "image, signal, tabular, graph or text; checked against the dataset's (default: inferred)",
    ),
    "--num-samples": ("num_samples", int, "mnist1d: samples; images: train subset; davis: pairs"),
    "--data-root": ("data_root", str, "datasets read by path: the folder or archive to read"),
    "--cache-dir": ("cache_dir", str, "imagefolder decode cache (default ~/.cache/contrastkit)"),
    "--image-size": ("image_size", int, "imagefolder: resize the short side, centre-crop SxS"),
    "--workers": ("workers", int, "DataLoader workers decoding streamed image folders (2)"),
    "--aug-recipe": ("aug_recipe", str, "image views: simclr, or byol (asymmetric pair)"),
    "--imbalance": ("imbalance", str, "class-imbalanced training set: linear or exponential"),
    "--imbalance-ratio": ("imbalance_ratio", float, "imbalance n_max/n_min (C or 100)"),
    "--backbone": ("backbone", str, "conv (small CNN), resnet18, resnet34, resnet50"),
    "--text-model": ("text_model", str, "text data: local model folder (default: MiniLM)"),
    "--max-length": ("max_length", int, "text data: truncation length in tokens (64)"),
    "--pooling": ("pooling", str, "text data: cls or mean (default: the model's own, else cls)"),
    "--dropout": ("dropout", float, "text data: the model's dropout rates (default: its own)"),
    "--sts-dev": ("sts_dev", str, "simcse framework: STS pairs for evaluation and selection"),
    "--sts-format": ("sts_format", str, "stsb (STS Benchmark columns, default) or tsv"),
    "--eval-steps": ("eval_steps", int, "simcse framework: score --sts-dev every K batches"),
    "--senteval": ("senteval", str, "simcse framework: score the best model on SentEval DIR"),
    "--senteval-tasks": ("senteval_tasks", str, "simcse framework: comma-separated SentEval tasks"),
    "--senteval-classifier": ("senteval_classifier", str, "simcse framework: sklearn or pytorch"),
    "--senteval-jobs": ("senteval_jobs", int, "simcse framework: SentEval classifiers at once"),
    "--epoch-steps": ("epoch_steps", int, "batches per epoch (default: every full batch)"),
    "--stem": ("stem", str, "resnet stem: cifar (3x3, no pool) or imagenet (7x7 + pool)"),
    "--crop-scale": ("crop_scale", float, "image views: minimum crop area (0.2 / 0.08)"),
    "--jitter": ("jitter", str, "image views: jitter strengths b,c,s,hue (0.4,0.4,0.4,0.1)"),
    "--p-jitter": ("p_jitter", float, "image views: probability of the colour jitter (0.8)"),
    "--epochs": ("epochs", int, "training epochs"),
    "--batch-size": ("batch_size", int, "batch size N (>= 2)"),
    "--lr": (
        "lr",
        float,
        "base learning rate, scaled with the batch by --lr-scaling (default: the optimiser's, "
        "adam/adamw 1e-3, sgd 0.12, lars 0.3; docs/defaults.md)",
    ),
    "--weight-decay": (
        "weight_decay",
        float,
        "weight decay, LARS: not on biases and norms (default: the optimiser's, sgd 1e-4, "
        "else 1e-6)",
    ),
    "--seed": ("seed", int, "random seed (model init, shuffling, augmentations)"),
    "--feature-dim": ("feature_dim", int, "encoder output width"),
    "--width": ("width", int, "encoder channels (default: conv 32, resnets 64 as in He et al.)"),
    "--proj-dim": ("proj_dim", int, "projection head output width"),
    "--hidden-dim": ("hidden_dim", int, "projection head hidden width"),
    "--aug-types": ("aug_types", int, "number of augmentation types applied (1-5)"),
    "--views": ("num_views", int, "multiview framework: number of views V (K = V - 1)"),
    "--queue-size": ("queue_size", int, "moco: queue length"),
    "--momentum": ("momentum", float, "moco: key-encoder momentum"),
    "--knn-k": ("knn_k", int, "k of the weighted kNN evaluation (200)"),
    "--knn-small-k": ("knn_small_k", int, "the small-k kNN reading (20)"),
    "--eval-every": ("eval_every", int, "kNN evaluation every this many epochs"),
    "--threads": ("threads", int, "torch threads (default 1: small CNNs on shared CPUs)"),
    "--device": ("device", str, "auto (cuda, then mps, then cpu), cpu, cuda, cuda:N or mps"),
    "--precision": ("precision", str, "fp32, bf16 (autocast) or fp16 (autocast + GradScaler)"),
    "--grad-accum": ("grad_accum", int, "batches per optimiser step (gradient accumulation)"),
    "--clip-grad": ("clip_grad", float, "clip the global gradient L2 norm to this value"),
    "--optimizer": ("optimizer", str, "adam (default), adamw, sgd or lars"),
    "--sgd-momentum": ("sgd_momentum", float, "sgd/lars momentum (0.9)"),
    "--schedule": (
        "schedule",
        str,
        "constant, warmup_cosine, step or linear, per step (default: lars warmup_cosine, "
        "else constant)",
    ),
    "--warmup-epochs": (
        "warmup_epochs",
        float,
        "warmup_cosine: linear warm-up epochs (default: lars 10, at most epochs/10; else 0)",
    ),
    "--lr-milestones": ("lr_milestones", str, "step: comma-separated epochs, e.g. 155,170,185"),
    "--lr-gamma": ("lr_gamma", float, "step: learning-rate factor at each milestone (0.1)"),
    "--lr-scaling": (
        "lr_scaling",
        str,
        "linear_above_256 (lr x N/256 for N > 256), linear, sqrt or none (default: "
        "adam/adamw linear_above_256, sgd/lars linear)",
    ),
    "--save-every": ("save_every", int, "also keep checkpoint_epochNNNN.pt every K epochs"),
    "--finetune-epochs": (
        "finetune_epochs",
        int,
        "davis: fine-tune encoder + GraphDTA head end to end this many epochs (paper: 200)",
    ),
    "--linear-epochs": ("linear_epochs", int, "image data: linear evaluation epochs (100)"),
    "--linear-lr": ("linear_lr", float, "image data: linear evaluation SGD lr (0.02)"),
    "--linear-optimizer": (
        "linear_optimizer",
        str,
        "image data: linear evaluation by sgd (default) or lbfgs on pre-computed features",
    ),
    "--binarize-threshold": (
        "binarize_threshold",
        float,
        "supervised framework on regression data: the loss gets labels 1[y >= T] (SupCon)",
    ),
}

# on/off flags (--x / --no-x), each the config key of the same name
BOOLEAN_FLAGS: dict[str, str] = {
    "--compile": "torch.compile the encoder and heads",
    "--channels-last": "channels_last memory format for image models",
    "--nesterov": "Nesterov momentum (sgd, lars)",
    "--tensorboard": "write TensorBoard event files into the run directory",
    "--online-probe": "train a linear probe on detached features alongside (per-epoch logs)",
    "--stream": "imagefolder: decode per batch in DataLoader workers (default: above 4 GiB)",
    "--unlabeled": "pre-train on train + unlabelled images (STL-10; default: when present)",
    "--mlp-head": "text data: SimCSE's training-only MLP head on the pooled output",
}


def _milestones(text: str) -> list[int]:
    try:
        return [int(s) for s in text.split(",") if s.strip()]
    except ValueError:
        raise ValueError(f"--lr-milestones must be comma-separated epochs, got {text!r}") from None


def _jitter(text: str) -> list[float]:
    try:
        values = [float(s) for s in text.split(",")]
    except ValueError:
        values = []
    if len(values) != 4:
        raise ValueError(f"--jitter must be four comma-separated numbers, got {text!r}")
    return values


def add_train_arguments(parser: argparse.ArgumentParser) -> None:
    """The run-configuration flags shared by ``train`` and ``compare``."""
    parser.add_argument("--config", help="YAML file of config values (flags override it)")
    for flag, (key, kind, text) in FLAGS.items():
        parser.add_argument(flag, dest=key, type=kind, default=None, help=text)
    parser.add_argument(
        "--loss-arg",
        action="append",
        metavar="KEY=VALUE",
        help="loss hyper-parameter, repeatable (e.g. --loss-arg alpha=0.5)",
    )
    parser.add_argument("--temperature", type=float, help="shortcut for --loss-arg temperature=T")
    parser.add_argument("--heads", type=int, help="AMCL: shortcut for --loss-arg heads=C")
    parser.add_argument(
        "--similarity", help="LASCon: linear, tanh or indicator (--loss-arg similarity=...)"
    )
    parser.add_argument("--c", type=float, help="LASCon: steepness c of Eq. (5) (--loss-arg c=C)")
    parser.add_argument("--variant", help="LASCon: out or in (--loss-arg variant=...)")
    parser.add_argument(
        "--no-sync-batchnorm",
        dest="sync_batchnorm",
        action="store_false",
        default=None,
        help="under torchrun: batch norm per rank instead of over the global batch",
    )
    parser.add_argument(
        "--joint-views",
        dest="joint_views",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="encode all views as one batch, so batch norm sees V·N samples (default: the "
        "framework's; SimCLR joint, Barlow Twins separate)",
    )
    for flag, text in BOOLEAN_FLAGS.items():
        parser.add_argument(
            flag,
            dest=flag[2:].replace("-", "_"),
            action=argparse.BooleanOptionalAction,
            default=None,
            help=text,
        )
    parser.add_argument("--resume", action="store_true", help="continue the run in --out")
    parser.add_argument(
        "--overwrite", action="store_true", help="empty a non-empty --out and start afresh"
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_train_arguments(parser)
    parser.add_argument("--out", help="run directory (metrics.jsonl, checkpoint.pt, final.json)")


def overrides_from_args(args: argparse.Namespace) -> dict[str, Any]:
    """Config values given on the command line (unset flags left out)."""
    values = {
        key: getattr(args, key) for key, _, _ in FLAGS.values() if getattr(args, key) is not None
    }
    if "lr_milestones" in values:
        values["lr_milestones"] = _milestones(values["lr_milestones"])
    if "jitter" in values:
        values["jitter"] = _jitter(values["jitter"])
    booleans = [flag[2:].replace("-", "_") for flag in BOOLEAN_FLAGS]
    for key in ("sync_batchnorm", "joint_views", *booleans):
        if getattr(args, key) is not None:
            values[key] = getattr(args, key)
    loss_args = parse_assignments(args.loss_arg)
    if args.temperature is not None:
        loss_args["temperature"] = args.temperature
    if args.heads is not None:
        loss_args["heads"] = args.heads
    for key in ("similarity", "c", "variant"):
        if getattr(args, key) is not None:
            loss_args[key] = getattr(args, key)
    if loss_args:
        values["loss_args"] = loss_args
    return values


def merge(base: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    """``base`` updated by ``overrides``; ``loss_args`` are merged key by key."""
    merged = {**base, **overrides}
    if "loss_args" in base and "loss_args" in overrides:
        merged["loss_args"] = {**base["loss_args"], **overrides["loss_args"]}
    return merged


def check_config(
    config: TrainConfig, given: Collection[str], used: Collection[str] | None = None
) -> None:
    """Check the loss arguments and framework options of ``config`` before any work
    (:func:`~contrastkit.frameworks.check_run`); ``given`` are the keys the user set."""
    options = {key: getattr(config, key) for key in FRAMEWORK_OPTIONS}
    check_run(config.framework, config.loss, config.loss_args, options, given, used)


def run(args: argparse.Namespace) -> int:
    base = load_yaml(args.config) if args.config else {}
    out = args.out if args.out is not None else base.pop("out", None)
    base.pop("out", None)
    overrides = overrides_from_args(args)
    config = TrainConfig.from_dict(merge(base, overrides))
    check_config(config, {*base, *overrides})
    for flag in ("resume", "overwrite"):
        if getattr(args, flag) and out is None:
            raise ValueError(f"--{flag} needs --out (the run directory)")
    if args.resume and not Path(out).is_dir():
        raise ValueError(f"--resume: run directory {str(out)!r} does not exist")
    cls = trainer_class(config)
    cls.check_paths(config, out)
    with removed_if_unused(out):
        if out is not None:
            out = prepare_run_dir(out, resume=args.resume, overwrite=args.overwrite)
        trainer = cls(config, out, progress=not args.no_progress)  # reads the data
        if trainer.rank == 0 and not args.resume:  # once, when a run starts (not resumes)
            print(describe(config.to_dict()), file=sys.stderr)
        final = trainer.fit(resume=args.resume)
    if final:  # under torchrun only rank 0 evaluates
        print(json.dumps({k: v for k, v in final.items() if k != "config"}, indent=2))
    return 0
