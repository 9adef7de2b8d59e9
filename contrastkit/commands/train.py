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

from ..frameworks import FRAMEWORK_OPTIONS, check_run
from ..rundir import prepare_run_dir, removed_if_unused
from ..training import TrainConfig, flatten, load_yaml, merge_config, trainer_class
from ..training.defaults import describe
from .train_flags import add_train_arguments, overrides_from_args

NAME = "train"
HELP = "train a self-supervised encoder with any registered loss and evaluate it"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    groups = add_train_arguments(parser)
    groups["output"].add_argument(
        "--out", help="run directory (metrics.jsonl, checkpoint.pt, final.json)"
    )


def check_config(
    config: TrainConfig, given: Collection[str], used: Collection[str] | None = None
) -> None:
    """Check the loss arguments and framework options of ``config`` before any work
    (:func:`~contrastkit.frameworks.check_run`); ``given`` are the keys the user set."""
    options = {key: getattr(config, key) for key in FRAMEWORK_OPTIONS}
    check_run(config.framework, config.loss, config.loss_args, options, given, used)


def run(args: argparse.Namespace) -> int:
    base = flatten(load_yaml(args.config)) if args.config else {}
    out = args.out if args.out is not None else base.pop("out", None)
    base.pop("out", None)
    overrides = overrides_from_args(args)
    config = TrainConfig.from_dict(merge_config(base, overrides))
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
