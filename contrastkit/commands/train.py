"""``contrastkit train``: train one self-supervised encoder and evaluate it.

Values come from the defaults of :class:`~contrastkit.training.TrainConfig`, then the
``--config`` YAML file, then the command-line flags (highest priority).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from ..training import TrainConfig, load_yaml, parse_assignments
from ..training.label_aware import trainer_class

NAME = "train"
HELP = "train a self-supervised encoder with any registered loss and evaluate it"

# flag -> (config key, type, help)
FLAGS: dict[str, tuple[str, type, str]] = {
    "--framework": ("framework", str, "simclr, moco, simsiam, barlow_twins, multiview, supervised"),
    "--loss": ("loss", str, "registered loss name (see `contrastkit.losses.available()`)"),
    "--dataset": ("dataset", str, "digits, mnist1d, digits_rotation, diabetes, tu:NAME, davis"),
    "--data-root": ("data_root", str, "folder of datasets read by path (tu:NAME, davis)"),
    "--num-samples": ("num_samples", int, "mnist1d: samples made (20000); davis: train pairs kept"),
    "--epochs": ("epochs", int, "training epochs"),
    "--batch-size": ("batch_size", int, "batch size N (>= 2)"),
    "--lr": ("lr", float, "Adam learning rate (scaled by N/256 above N = 256)"),
    "--weight-decay": ("weight_decay", float, "Adam weight decay"),
    "--seed": ("seed", int, "random seed (model init, shuffling, augmentations)"),
    "--feature-dim": ("feature_dim", int, "encoder output width"),
    "--width": ("width", int, "encoder channels"),
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
    "--binarize-threshold": (
        "binarize_threshold",
        float,
        "supervised framework on regression data: the loss gets labels 1[y >= T] (SupCon)",
    ),
}


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
    parser.add_argument("--resume", action="store_true", help="continue the run in --out")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_train_arguments(parser)
    parser.add_argument("--out", help="run directory (metrics.jsonl, checkpoint.pt, final.json)")


def overrides_from_args(args: argparse.Namespace) -> dict[str, Any]:
    """Config values given on the command line (unset flags left out)."""
    values = {
        key: getattr(args, key) for key, _, _ in FLAGS.values() if getattr(args, key) is not None
    }
    for key in ("sync_batchnorm", "joint_views"):
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


def run(args: argparse.Namespace) -> int:
    base = load_yaml(args.config) if args.config else {}
    out = args.out or base.pop("out", None)
    base.pop("out", None)
    config = TrainConfig.from_dict(merge(base, overrides_from_args(args)))
    if args.resume and out is None:
        raise ValueError("--resume needs --out (the run directory to continue)")
    trainer = trainer_class(config)(config, out, progress=not args.no_progress)
    final = trainer.fit(resume=args.resume)
    if final:  # under torchrun only rank 0 evaluates
        print(json.dumps({k: v for k, v in final.items() if k != "config"}, indent=2))
    return 0
