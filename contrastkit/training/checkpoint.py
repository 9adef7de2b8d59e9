"""The files of a run across epochs: the record and checkpoint written after every epoch,
and the ``--resume`` that restores them (atomic, checksummed writes: :mod:`contrastkit.rundir`).

A run directory holds:

* ``metrics.jsonl``: one JSON record per epoch (mean loss, learning rate, training
  seconds, kNN accuracies and the seconds they took on evaluated epochs, the loss's
  diagnostics averaged over the epoch, MACL's / AMCL's per-step temperature trace, the
  online probe's numbers when it is on);
* ``checkpoint.pt``: state dicts only (model, optimiser, schedule, engine, the online
  probe, the CPU's and the device's RNG), the epoch, the training time, the config and the
  SHA-256 of that content, written atomically and verified on load, loaded with
  ``torch.load(weights_only=True)``; with ``save_every`` also ``checkpoint_epochNNNN.pt``
  every that many epochs;
* ``final.json`` (written by the trainer's ``finish``): kNN (k = 200 and small k),
  linear-probe accuracy, alignment, uniformity, training and final-evaluation seconds,
  device, GPU name, precision, compile, torch version, peak device memory, the full config
  and the seed;
* with ``tensorboard``, TensorBoard event files of the per-epoch scalars.

The functions take the run whose state they write or restore: a :class:`RunState`, which
the :class:`~.trainer.Trainer` is.
"""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path
from typing import Any, Protocol

import torch
from torch import nn

from .. import rundir
from ..checkpoint_file import CheckpointError, atomic_torch_save, load_checkpoint
from ..engine import LENGTH_DEPENDENT, Engine
from ..engine.device import rng_state, set_rng_state
from .config import ENVIRONMENT_KEYS, TrainConfig
from .defaults import in_effect
from .metrics import UndeclaredMetricWarning, undeclared

CHECKPOINT = "checkpoint.pt"
METRICS = "metrics.jsonl"
FINAL = "final.json"
# config keys whose differences do not make another run: where the data is and how the run
# executes, and the ``modality`` check (it changes nothing a run computes)
RUN_IGNORED = ("modality", *ENVIRONMENT_KEYS)


class RunState(Protocol):
    """What a run's files are written from and restored into (the trainer's state)."""

    config: TrainConfig
    out: Path | None
    rank: int
    world: int
    model: nn.Module
    optimizer: torch.optim.Optimizer
    scheduler: Any
    engine: Engine
    probe: Any  # the online probe (state_dict / load_state_dict), or None
    epoch: int
    train_time: float
    history: list[dict[str, Any]]

    def run_info(self) -> dict[str, Any]:
        """Hardware, numerics and code of the run, for ``final.json``."""
        ...


# the fields of metrics.jsonl and final.json that measure time or memory: two runs that
# train the same numbers differ in these only
TIMING_KEYS = (
    "epoch_time_s",
    "samples_per_s",
    "eval_time_s",
    "train_time_s",
    "final_eval_time_s",
    "peak_device_memory_mb",
)
# config keys that may change between a checkpoint and its resumption: where the data is
# and how the run executes (a study's partial runs continue on another machine), logging
RESUMABLE_CHANGES = ("epochs", "save_every", "tensorboard", *ENVIRONMENT_KEYS)


def extendable(config: TrainConfig) -> bool:
    """Whether a run of ``config`` stopped (or finished) at fewer epochs, continued to
    ``config.epochs``, trains exactly like one run straight through: true unless its
    learning-rate schedule depends on the total length (``warmup_cosine``, ``linear``)."""
    return config.schedule not in LENGTH_DEPENDENT


def length_note(config: TrainConfig, diff: list[str]) -> str:
    """For an error listing the differing keys ``diff``: why ``epochs`` may not differ."""
    if "epochs" in diff and not extendable(config):
        return (
            f"; schedule {config.schedule!r} sets the learning rate from the run's total "
            "length, so a run cannot be continued to another number of epochs"
        )
    return ""


# what a SimCSE run writes during its first epoch: the best dev model, the dev history
_SIMCSE_FIRST_EPOCH = ("best", "history.json")


def _first_epoch_leftover(name: str) -> bool:
    """Whether a file ``name`` in a run directory without a checkpoint is what a run killed
    before its first checkpoint leaves: its record, TensorBoard events, SimCSE's ``best/``
    model and ``history.json``, a temporary file or folder of an atomic write
    (``.NAME.xxxx.tmp``, ``.best.xxxx``)."""
    temporary = name.startswith(".") and (name.endswith(".tmp") or name.startswith(".best."))
    return name in (METRICS, "tensorboard", *_SIMCSE_FIRST_EPOCH) or temporary


def config_differences(config: TrainConfig, saved: dict[str, Any], ignore: list[str]) -> list[str]:
    """The keys in which the checkpoint's config ``saved`` differs from ``config``, ``ignore``
    aside: keys this version does not know are named as such, and a ``saved`` that is no
    longer a valid config is compared key by key (instead of differing in every key)."""
    current = config.to_dict()
    unknown = sorted(set(saved) - set(current))
    known = {k: v for k, v in saved.items() if k in current}
    try:
        TrainConfig.from_dict(dict(known))  # still a valid config: compare it normalised
    except (TypeError, ValueError):
        diff = sorted(k for k in known if k not in ignore and known[k] != current[k])
    else:
        diff = config.differences(known, ignore)
    return diff + [f"{k} (unknown to this version)" for k in unknown]


def save_epoch(trainer: RunState, record: dict[str, Any]) -> None:
    """Append the epoch's ``record`` to ``metrics.jsonl``, then write the checkpoint
    (and its ``save_every`` copy); rank 0 only, nothing without a run directory."""
    if trainer.out is None or trainer.rank != 0:
        return
    # the record first, then the checkpoint: a kill between them leaves one record
    # more than the checkpoint's epoch, which restore drops
    rundir.append_line(trainer.out / METRICS, json.dumps(record))
    state = {
        "model": trainer.model.state_dict(),
        "optimizer": trainer.optimizer.state_dict(),
        "scheduler": trainer.scheduler.state_dict(),
        "engine": trainer.engine.state_dict(),
        **rng_state(trainer.engine.device),
        "epoch": trainer.epoch,
        "train_time_s": trainer.train_time,
        "config": trainer.config.to_dict(),
    }
    if trainer.probe is not None:
        state["probe"] = trainer.probe.state_dict()
    atomic_torch_save(state, trainer.out / CHECKPOINT)
    if trainer.config.save_every and trainer.epoch % trainer.config.save_every == 0:
        rundir.atomic_write_bytes(
            trainer.out / f"checkpoint_epoch{trainer.epoch:04d}.pt",
            (trainer.out / CHECKPOINT).read_bytes(),
        )


def restore(trainer: RunState) -> None:
    """Restore model, optimiser, RNG and history from the run directory.

    A directory without a checkpoint that holds only what a run killed during its first
    epoch leaves (``metrics.jsonl``, ``tensorboard/``, temporaries) restarts at epoch 1,
    dropping any record written before the kill; one holding anything else (a
    ``final.json`` of another run) is refused, untouched. A checkpoint that is corrupt,
    incomplete or without its digest (unless trusted: :func:`.load_checkpoint`),
    or a ``metrics.jsonl`` that is missing, unreadable or shorter than the checkpoint's
    epoch, raises ``ValueError`` naming the file; a config that differs names the keys
    (:func:`config_differences`)."""
    assert trainer.out is not None
    path, metrics = trainer.out / CHECKPOINT, trainer.out / METRICS
    if not trainer.out.is_dir():
        raise FileNotFoundError(f"no checkpoint to resume from: no directory {trainer.out}")
    if not path.exists():
        foreign = sorted(p.name for p in trainer.out.iterdir() if not _first_epoch_leftover(p.name))
        if foreign:
            raise ValueError(
                f"--resume: {str(trainer.out)!r} holds no {CHECKPOINT} but holds "
                f"{', '.join(foreign[:4])}{', ...' if len(foreign) > 4 else ''}: not a run "
                "killed in its first epoch, so nothing there is resumed or overwritten; "
                "choose another --out"
            )
        if trainer.rank == 0:
            print(f"no checkpoint in {trainer.out}: starting at epoch 1", file=sys.stderr)
            rundir.atomic_write_text(metrics, "")
        return
    keys = ("model", "optimizer", "torch_rng", "epoch", "train_time_s", "config")
    state = load_checkpoint(path, required=keys, map_location=trainer.engine.device)
    if not isinstance(state["config"], dict):
        raise CheckpointError(f"checkpoint {str(path)!r} holds no config mapping")
    config = trainer.config
    if isinstance(state["epoch"], int) and state["epoch"] > config.epochs:
        raise ValueError(
            f"--resume: the checkpoint is at epoch {state['epoch']}, beyond --epochs "
            f"{config.epochs}; a run is continued, never shortened (choose another --out)"
        )
    may_change = [k for k in RESUMABLE_CHANGES if k != "epochs" or extendable(config)]
    diff = config_differences(config, state["config"], may_change)
    if diff:
        raise ValueError(
            f"--resume with a different config than the checkpoint's (differs in: "
            f"{', '.join(diff)}){length_note(config, diff)}"
        )
    try:
        trainer.model.load_state_dict(state["model"])
        trainer.optimizer.load_state_dict(state["optimizer"])
        if "scheduler" in state:
            trainer.scheduler.load_state_dict(state["scheduler"])
        trainer.engine.load_state_dict(state.get("engine", {}))
        if trainer.probe is not None and "probe" in state:
            trainer.probe.load_state_dict(state["probe"])
        set_rng_state(
            {k: v.cpu() for k, v in state.items() if k.endswith("_rng")}, trainer.engine.device
        )
        trainer.epoch = int(state["epoch"])
        trainer.train_time = float(state["train_time_s"])
    except (RuntimeError, TypeError, ValueError, KeyError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        message = f"checkpoint {str(path)!r} does not fit this run: {first}"
        raise CheckpointError(message) from None
    if not metrics.is_file():
        raise ValueError(
            f"--resume: {str(metrics)!r} is missing (the checkpoint is at epoch {trainer.epoch})"
        )
    records, total = rundir.read_jsonl(metrics, limit=trainer.epoch)
    if len(records) < trainer.epoch:
        raise ValueError(
            f"--resume: {str(metrics)!r} holds {len(records)} records but the checkpoint "
            f"is at epoch {trainer.epoch}"
        )
    trainer.history = records[: trainer.epoch]
    if trainer.rank == 0 and total > trainer.epoch:  # records after the checkpoint: dropped
        text = "".join(json.dumps(r) + "\n" for r in trainer.history)
        rundir.atomic_write_text(metrics, text)


def write_final(
    trainer: RunState, metrics: dict[str, Any], final_eval_time_s: float
) -> dict[str, Any]:
    """``metrics`` completed with what describes the run (epochs, training time, the final
    evaluation's ``final_eval_time_s``, seed, world size, :meth:`RunState.run_info`, the
    defaults in effect, config) and, with a run directory, written atomically to
    ``final.json``; returned. A number of ``metrics`` that no
    :class:`~.metrics.Metric` declares gives an :class:`~.metrics.UndeclaredMetricWarning`:
    ``contrastkit study`` would refuse it as a metric, and ``contrastkit compare`` would
    leave it out."""
    missing = undeclared(metrics)
    if missing:
        warnings.warn(
            f"final.json numbers {', '.join(missing)} are declared by no Metric; declare them "
            "in the modality's metrics (contrastkit.training.Metric) so that contrastkit "
            "study and compare know them",
            UndeclaredMetricWarning,
            stacklevel=3,
        )
    cfg = trainer.config
    final: dict[str, Any] = {
        **metrics,
        "epochs": trainer.epoch,
        "train_time_s": trainer.train_time,
        "final_eval_time_s": final_eval_time_s,
        "seed": cfg.seed,
        "world_size": trainer.world,
        **trainer.run_info(),
        "defaults_applied": in_effect(cfg.to_dict()),  # .defaults: values and sources
        "config": cfg.to_dict(),
    }
    if trainer.out is not None:
        trainer.out.mkdir(parents=True, exist_ok=True)
        rundir.atomic_write_text(trainer.out / FINAL, rundir.strict_json(final))  # no NaN
    return final


def run_state(directory: Path, config: TrainConfig) -> str:
    """Where the run of ``config`` in ``directory`` stands, by the one rule that ``compare
    --resume`` and ``study`` follow: ``finished`` (its ``final.json`` is of this config),
    ``partial`` (a checkpoint, or a finished run of fewer epochs, to continue) or ``new``.

    Configs are compared without :data:`RUN_IGNORED` (where the data is, how it executes,
    the ``modality`` check) and, when the run can be extended (:func:`extendable`),
    without ``epochs``. A directory that holds a run of another config, or a finished run
    of more epochs, raises ``ValueError`` naming the keys that differ."""
    ignore = (*RUN_IGNORED, "epochs") if extendable(config) else RUN_IGNORED
    saved: dict[str, Any] | None = None
    if (directory / FINAL).exists():
        final = read_final(directory / FINAL)
        saved = final.get("config")
        if not config.differences(saved, ignore):
            if int(final["epochs"]) == config.epochs:
                return "finished"
            if int(final["epochs"]) > config.epochs:
                raise ValueError(
                    f"{directory} holds a finished run of {final['epochs']} epochs, not "
                    f"{config.epochs}; use another directory"
                )
    if (directory / CHECKPOINT).exists():  # verified: a damaged one is one line naming it
        saved = load_checkpoint(directory / CHECKPOINT, required=("config",))["config"]
        if not config.differences(saved, ignore):
            return "partial"
    if saved is not None:
        diff = config.differences(saved, ignore)
        raise ValueError(
            f"{directory} holds a run of a different config (differs in: {', '.join(diff)})"
            f"{length_note(config, diff)}; use another directory"
        )
    return "new"


def resumes(directory: Path, state: str) -> bool:
    """Whether training the run in ``directory`` (in :func:`run_state` ``state``) resumes:
    a ``partial`` run continues, and a ``new`` one with files was killed before its first
    checkpoint, so resuming restarts it at epoch 1 and drops the records it logged."""
    return state == "partial" or (directory.is_dir() and any(directory.iterdir()))


def read_final(path: Path) -> dict[str, Any]:
    """The ``final.json`` mapping at ``path`` (``ValueError`` naming it if it is not one)."""
    try:
        final = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path} is not a JSON results file ({exc})") from None
    if not isinstance(final, dict):
        raise ValueError(f"{path} is not a JSON results file")
    epochs = final.get("epochs")
    if not isinstance(epochs, int) or isinstance(epochs, bool) or epochs < 0:
        raise ValueError(
            f"{path} is not a run's final.json: 'epochs' must be a count, got {epochs!r}"
        )
    if not isinstance(final.get("config"), dict):
        raise ValueError(f"{path} is not a run's final.json: it holds no 'config' mapping")
    return final
