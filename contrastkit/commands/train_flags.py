"""The run-configuration flags that ``train`` and ``compare`` share: each flag's config key,
type, ``--help`` group and help, and the config values a parsed command line gives."""

from __future__ import annotations

import argparse
from typing import Any, NamedTuple

from ..training import parse_assignments

# The argument groups of `train --help` (and `compare --help`), in the order shown:
# group -> (title, description). Every flag below names one.
GROUPS: dict[str, tuple[str, str]] = {
    "data": ("data", "the dataset, its subset and the views made of it"),
    "model": ("model", "framework, encoder and heads"),
    "loss": ("loss", "the registered loss and its hyper-parameters"),
    "optimisation": (
        "optimisation",
        "epochs, batch, optimiser and schedule (unset: the optimiser's defaults, docs/defaults.md)",
    ),
    "engine": ("engine", "device, precision, compilation, threads, distributed"),
    "evaluation": ("evaluation", "kNN, linear probe, STS and SentEval scoring"),
    "output": ("output", "the run directory, checkpoints and logs"),
}


class Flag(NamedTuple):
    """One run-configuration flag: the config key it sets, its type, its ``--help`` group."""

    key: str
    kind: type
    group: str
    help: str


# flag -> its declaration
FLAGS: dict[str, Flag] = {
    "--dataset": Flag(
        "dataset", str, "data", "registered dataset: digits, cifar10, imagefolder, tu:NAME, ..."
    ),
    "--modality": Flag(
        "modality",
        str,
        "data",
        "image, signal, tabular, graph or text; checked against the dataset's (default: inferred)",
    ),
    "--num-samples": Flag(
        "num_samples", int, "data", "mnist1d: samples; images: train subset; davis: pairs"
    ),
    "--data-root": Flag(
        "data_root", str, "data", "datasets read by path: the folder or archive to read"
    ),
    "--cache-dir": Flag(
        "cache_dir", str, "data", "imagefolder decode cache (default ~/.cache/contrastkit)"
    ),
    "--image-size": Flag(
        "image_size", int, "data", "imagefolder: resize the short side, centre-crop SxS"
    ),
    "--workers": Flag(
        "workers", int, "data", "DataLoader workers decoding streamed image folders (2)"
    ),
    "--aug-recipe": Flag(
        "aug_recipe", str, "data", "image views: simclr, or byol (asymmetric pair)"
    ),
    "--imbalance": Flag(
        "imbalance", str, "data", "class-imbalanced training set: linear or exponential"
    ),
    "--imbalance-ratio": Flag("imbalance_ratio", float, "data", "imbalance n_max/n_min (C or 100)"),
    "--crop-scale": Flag(
        "crop_scale", float, "data", "image views: minimum crop area (0.2 / 0.08)"
    ),
    "--jitter": Flag(
        "jitter", str, "data", "image views: jitter strengths b,c,s,hue (0.4,0.4,0.4,0.1)"
    ),
    "--p-jitter": Flag(
        "p_jitter", float, "data", "image views: probability of the colour jitter (0.8)"
    ),
    "--aug-types": Flag("aug_types", int, "data", "number of augmentation types applied (1-5)"),
    "--views": Flag("num_views", int, "data", "multiview framework: number of views V (K = V - 1)"),
    "--binarize-threshold": Flag(
        "binarize_threshold",
        float,
        "data",
        "supervised framework on regression data: the loss gets labels 1[y >= T] (SupCon)",
    ),
    "--framework": Flag(
        "framework",
        str,
        "model",
        "simclr, moco, simsiam, barlow_twins, multiview, supervised, nnclr, simcse",
    ),
    "--backbone": Flag("backbone", str, "model", "conv (small CNN), resnet18, resnet34, resnet50"),
    "--text-model": Flag(
        "text_model", str, "model", "text data: local model folder (default: MiniLM)"
    ),
    "--max-length": Flag("max_length", int, "model", "text data: truncation length in tokens (64)"),
    "--pooling": Flag(
        "pooling", str, "model", "text data: cls or mean (default: the model's own, else cls)"
    ),
    "--dropout": Flag(
        "dropout", float, "model", "text data: the model's dropout rates (default: its own)"
    ),
    "--stem": Flag(
        "stem", str, "model", "resnet stem: cifar (3x3, no pool) or imagenet (7x7 + pool)"
    ),
    "--feature-dim": Flag("feature_dim", int, "model", "encoder output width"),
    "--width": Flag(
        "width", int, "model", "encoder channels (default: conv 32, resnets 64 as in He et al.)"
    ),
    "--proj-dim": Flag("proj_dim", int, "model", "projection head output width"),
    "--hidden-dim": Flag("hidden_dim", int, "model", "projection head hidden width"),
    "--queue-size": Flag("queue_size", int, "model", "moco: queue length"),
    "--momentum": Flag("momentum", float, "model", "moco: key-encoder momentum"),
    "--loss": Flag(
        "loss", str, "loss", "registered loss name (see `contrastkit.losses.available()`)"
    ),
    "--epochs": Flag("epochs", int, "optimisation", "training epochs"),
    "--batch-size": Flag("batch_size", int, "optimisation", "batch size N (>= 2)"),
    "--epoch-steps": Flag(
        "epoch_steps", int, "optimisation", "batches per epoch (default: every full batch)"
    ),
    "--lr": Flag(
        "lr",
        float,
        "optimisation",
        "base learning rate, scaled with the batch by --lr-scaling (default: the optimiser's, "
        "adam/adamw 1e-3, sgd 0.12, lars 0.3; docs/defaults.md)",
    ),
    "--weight-decay": Flag(
        "weight_decay",
        float,
        "optimisation",
        "weight decay, LARS: not on biases and norms (default: the optimiser's, sgd 1e-4, "
        "else 1e-6)",
    ),
    "--grad-accum": Flag(
        "grad_accum", int, "optimisation", "batches per optimiser step (gradient accumulation)"
    ),
    "--clip-grad": Flag(
        "clip_grad", float, "optimisation", "clip the global gradient L2 norm to this value"
    ),
    "--optimizer": Flag("optimizer", str, "optimisation", "adam (default), adamw, sgd or lars"),
    "--sgd-momentum": Flag("sgd_momentum", float, "optimisation", "sgd/lars momentum (0.9)"),
    "--schedule": Flag(
        "schedule",
        str,
        "optimisation",
        "constant, warmup_cosine, step or linear, per step (default: lars warmup_cosine, "
        "else constant)",
    ),
    "--warmup-epochs": Flag(
        "warmup_epochs",
        float,
        "optimisation",
        "warmup_cosine: linear warm-up epochs (default: lars 10, at most epochs/10; else 0)",
    ),
    "--lr-milestones": Flag(
        "lr_milestones", str, "optimisation", "step: comma-separated epochs, e.g. 155,170,185"
    ),
    "--lr-gamma": Flag(
        "lr_gamma", float, "optimisation", "step: learning-rate factor at each milestone (0.1)"
    ),
    "--lr-scaling": Flag(
        "lr_scaling",
        str,
        "optimisation",
        "linear_above_256 (lr x N/256 for N > 256), linear, sqrt or none (default: "
        "adam/adamw linear_above_256, sgd/lars linear)",
    ),
    "--seed": Flag(
        "seed", int, "optimisation", "random seed (model init, shuffling, augmentations)"
    ),
    "--finetune-epochs": Flag(
        "finetune_epochs",
        int,
        "optimisation",
        "davis: fine-tune encoder + GraphDTA head end to end this many epochs (paper: 200)",
    ),
    "--threads": Flag(
        "threads", int, "engine", "torch threads (default 1: small CNNs on shared CPUs)"
    ),
    "--device": Flag(
        "device", str, "engine", "auto (cuda, then mps, then cpu), cpu, cuda, cuda:N or mps"
    ),
    "--precision": Flag(
        "precision", str, "engine", "fp32, bf16 (autocast) or fp16 (autocast + GradScaler)"
    ),
    "--knn-k": Flag("knn_k", int, "evaluation", "k of the weighted kNN evaluation (200)"),
    "--knn-small-k": Flag("knn_small_k", int, "evaluation", "the small-k kNN reading (20)"),
    "--eval-every": Flag("eval_every", int, "evaluation", "kNN evaluation every this many epochs"),
    "--linear-epochs": Flag(
        "linear_epochs", int, "evaluation", "image data: linear evaluation epochs (100)"
    ),
    "--linear-lr": Flag(
        "linear_lr", float, "evaluation", "image data: linear evaluation SGD lr (0.02)"
    ),
    "--linear-optimizer": Flag(
        "linear_optimizer",
        str,
        "evaluation",
        "image data: linear evaluation by sgd (default) or lbfgs on pre-computed features",
    ),
    "--sts-dev": Flag(
        "sts_dev", str, "evaluation", "simcse framework: STS pairs for evaluation and selection"
    ),
    "--sts-format": Flag(
        "sts_format", str, "evaluation", "stsb (STS Benchmark columns, default) or tsv"
    ),
    "--eval-steps": Flag(
        "eval_steps", int, "evaluation", "simcse framework: score --sts-dev every K batches"
    ),
    "--senteval": Flag(
        "senteval", str, "evaluation", "simcse framework: score the best model on SentEval DIR"
    ),
    "--senteval-tasks": Flag(
        "senteval_tasks", str, "evaluation", "simcse framework: comma-separated SentEval tasks"
    ),
    "--senteval-classifier": Flag(
        "senteval_classifier", str, "evaluation", "simcse framework: sklearn or pytorch"
    ),
    "--senteval-jobs": Flag(
        "senteval_jobs", int, "evaluation", "simcse framework: SentEval classifiers at once"
    ),
    "--save-every": Flag(
        "save_every", int, "output", "also keep checkpoint_epochNNNN.pt every K epochs"
    ),
}

# on/off flags (--x / --no-x), each the config key of the same name: flag -> (group, help)
BOOLEAN_FLAGS: dict[str, tuple[str, str]] = {
    "--compile": ("engine", "torch.compile the encoder and heads"),
    "--channels-last": ("engine", "channels_last memory format for image models"),
    "--nesterov": ("optimisation", "Nesterov momentum (sgd, lars)"),
    "--tensorboard": ("output", "write TensorBoard event files into the run directory"),
    "--online-probe": (
        "evaluation",
        "train a linear probe on detached features alongside (per-epoch logs)",
    ),
    "--stream": (
        "data",
        "imagefolder: decode per batch in DataLoader workers (default: above 4 GiB)",
    ),
    "--unlabeled": (
        "data",
        "pre-train on train + unlabelled images (STL-10; default: when present)",
    ),
    "--mlp-head": ("model", "text data: SimCSE's training-only MLP head on the pooled output"),
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


def add_train_arguments(
    parser: argparse.ArgumentParser,
) -> dict[str, argparse._ArgumentGroup]:
    """The run-configuration flags shared by ``train`` and ``compare``, each in its
    ``--help`` group (``GROUPS``); returns the groups, for a command's own flags."""
    parser.usage = "%(prog)s [-h] [--config CONFIG] [OPTION ...]"
    parser.add_argument("--config", help="YAML file of config values (flags override it)")
    groups = {
        name: parser.add_argument_group(title, description)
        for name, (title, description) in GROUPS.items()
    }
    for flag, spec in FLAGS.items():
        groups[spec.group].add_argument(
            flag, dest=spec.key, type=spec.kind, default=None, help=spec.help
        )
    loss = groups["loss"]
    loss.add_argument(
        "--loss-arg",
        action="append",
        metavar="KEY=VALUE",
        help="loss hyper-parameter, repeatable (e.g. --loss-arg alpha=0.5)",
    )
    loss.add_argument("--temperature", type=float, help="shortcut for --loss-arg temperature=T")
    loss.add_argument("--heads", type=int, help="AMCL: shortcut for --loss-arg heads=C")
    loss.add_argument(
        "--similarity", help="LASCon: linear, tanh or indicator (--loss-arg similarity=...)"
    )
    loss.add_argument("--c", type=float, help="LASCon: steepness c of Eq. (5) (--loss-arg c=C)")
    loss.add_argument("--variant", help="LASCon: out or in (--loss-arg variant=...)")
    groups["engine"].add_argument(
        "--no-sync-batchnorm",
        dest="sync_batchnorm",
        action="store_false",
        default=None,
        help="under torchrun: batch norm per rank instead of over the global batch",
    )
    groups["model"].add_argument(
        "--joint-views",
        dest="joint_views",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="encode all views as one batch, so batch norm sees V·N samples (default: the "
        "framework's; SimCLR joint, Barlow Twins separate)",
    )
    for flag, (group, text) in BOOLEAN_FLAGS.items():
        groups[group].add_argument(
            flag,
            dest=flag[2:].replace("-", "_"),
            action=argparse.BooleanOptionalAction,
            default=None,
            help=text,
        )
    output = groups["output"]
    output.add_argument("--resume", action="store_true", help="continue the run in --out")
    output.add_argument(
        "--overwrite", action="store_true", help="empty a non-empty --out and start afresh"
    )
    output.add_argument("--no-progress", action="store_true", help="no progress bar")
    return groups


def overrides_from_args(args: argparse.Namespace) -> dict[str, Any]:
    """Config values given on the command line (unset flags left out)."""
    values = {
        spec.key: getattr(args, spec.key)
        for spec in FLAGS.values()
        if getattr(args, spec.key) is not None
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
