"""``contrastkit export RUN --out DIR``: the encoder of a training run on its own, for reuse.

Reads ``RUN/checkpoint.pt`` (``torch.load(weights_only=True)``: tensors and plain values
only; its SHA-256 verified, :func:`contrastkit.checkpoint_file.load_checkpoint`), rebuilds
the run's framework from the config saved in it, loads the weights, and writes the encoder
alone to ``DIR`` as ``encoder.safetensors`` + ``encoder.json`` (see
:mod:`contrastkit.models.export`). Load it back with ``contrastkit.models.load_encoder(DIR)``;
projection heads, momentum encoders, queues and optimiser state stay behind. A run on text
data (the registry's ``text`` modality) is written as a ``transformers`` /
sentence-transformers model folder instead
(:meth:`~contrastkit.text.encoder.SentenceEncoder.save_pretrained`), which
``SentenceTransformer(DIR)``, ``contrastkit senteval --model DIR`` and ``--text-model DIR``
read.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from torch import nn

from ..checkpoint_file import load_checkpoint
from ..data import dataset_info
from ..models.export import read_spec, save_encoder
from ..rundir import atomic_dir
from ..training import CHECKPOINT, TrainConfig, trainer_class

NAME = "export"
HELP = "write the encoder of a run as safetensors + JSON (load it with models.load_encoder)"
# config keys (when the run has them) set so the encoder is rebuilt on the CPU, eagerly,
# whatever device the run trained on
REBUILD_OVERRIDES: dict[str, Any] = {"device": "cpu", "compile": False, "compile_mode": "default"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run", help=f"run directory of `contrastkit train` (holds {CHECKPOINT})")
    parser.add_argument("--out", required=True, help="new or empty directory to write into")


def read_checkpoint(run: Path) -> dict[str, Any]:
    """The checkpoint of run directory ``run``, loaded weights-only on the CPU with its
    digest verified (:class:`~contrastkit.checkpoint_file.CheckpointError` otherwise)."""
    if not run.exists():
        raise FileNotFoundError(f"run directory {str(run)!r} does not exist")
    path = run / CHECKPOINT
    if not path.is_file():
        raise ValueError(
            f"{str(run)!r} is not a run directory: expected {CHECKPOINT} in it "
            "(written by `contrastkit train --out`)"
        )
    state = load_checkpoint(path, required=("model", "config"))
    if not (isinstance(state["model"], dict) and isinstance(state["config"], dict)):
        raise ValueError(f"{path} is not a contrastkit training checkpoint (no model/config)")
    return state


def run_encoder(state: dict[str, Any]) -> nn.Module:
    """The trained encoder of checkpoint ``state``: the run's framework is built as the
    trainer builds it (same dataset, encoder and heads) and the weights are loaded strictly,
    so the encoder is exactly the one the run trained and evaluated."""
    saved = state["config"]
    config = TrainConfig.from_dict(
        {**saved, **{k: v for k, v in REBUILD_OVERRIDES.items() if k in saved}}
    )
    trainer = trainer_class(config)(config, None, progress=False)
    try:
        trainer.model.load_state_dict(state["model"])
    except RuntimeError as exc:
        detail = " ".join(str(exc).split())[:300]
        raise ValueError(f"the checkpoint does not fit its own config: {detail}") from None
    return trainer.model.encoder


def run(args: argparse.Namespace) -> int:
    run_dir, out = Path(args.run), Path(args.out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ValueError(f"--out {str(out)!r} exists and is not empty; choose a new directory")
    state = read_checkpoint(run_dir)
    encoder = run_encoder(state)
    source = {
        "run": str(run_dir.resolve()),
        "epoch": int(state.get("epoch", 0)),
        "config": state["config"],
    }
    if dataset_info(state["config"]["dataset"]).modality == "text":
        with atomic_dir(out) as tmp:
            encoder.encoder.save_pretrained(tmp)
        print(f"exported the transformer of {run_dir} (epoch {source['epoch']}) to {out}")
        return 0
    save_encoder(encoder, out, source)
    spec = read_spec(out)
    print(
        f"exported the {spec['architecture']} encoder of {run_dir} (epoch {source['epoch']}) "
        f"to {out}: contrastkit.models.load_encoder({str(out)!r})"
    )
    return 0
