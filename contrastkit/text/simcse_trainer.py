"""Unsupervised SimCSE (Gao et al., 2021) with any two-view loss of the registry, on the
shared training loop.

A run is ``framework: simcse`` (:class:`~contrastkit.frameworks.simcse.SimCSE`: each
sentence of a batch goes through the encoder twice in one forward pass, the two dropout
masks make the two views, and the loss meets them through
:func:`~contrastkit.frameworks.simcse.two_view_loss`) on a text dataset (``sentences``: one
sentence per line; any text set works, its labels unused), trained by
:class:`SimCSETrainer`: the :class:`~contrastkit.training.Trainer` (epochs, optimiser,
schedule, engine, checkpoints, ``metrics.jsonl``, ``final.json``) with

* views that are the same sentences (the dropout masks differ; no augmentation);
* STS Spearman on ``sts_dev`` before training (the start, recorded as
  ``sts_dev_spearman_before``), every ``eval_steps`` batches and at the end of every
  epoch, the best model of the evaluations after training steps saved to ``<run>/best``
  (``save_pretrained``: a sentence-transformers folder) — SimCSE's model selection, whose
  first evaluation comes after ``eval_steps`` steps, so the untrained model is never kept
  even when training only lowers the dev score; without ``sts_dev`` the final model is
  saved there;
* ``<run>/history.json`` (:class:`SimCSEHistory`): the dev scores, the loss, the loss's
  adaptive temperature (from its registered diagnostics) and the gradient-paradigm paper's
  §3.2 batch geometry (:mod:`.diagnostics`), per step; each epoch's record in
  ``metrics.jsonl`` carries the dev score at its end (``sts_dev_spearman``, the curve a
  study's convergence check reads) and the epoch's mean geometry (a study report's "why"
  columns; steps where a quantity is undefined left out);
* with ``senteval`` (SentEval's ``downstream/`` folder), the selected model scored on
  ``senteval_tasks`` after training, in the training precision: ``<run>/senteval.json``
  (and ``.md``) as ``contrastkit senteval`` writes them, and in ``final.json``
  ``senteval_<task>`` per task and ``senteval_sts_avg`` / ``senteval_transfer_avg`` (the
  papers' averages, over the tasks given, and their counts ``senteval_sts_avg_tasks`` /
  ``senteval_transfer_avg_tasks``: the papers' averages hold 7 tasks each, and STS-B and
  SICK-R count only with a test split).

``contrastkit simcse`` sets SimCSE's unsupervised recipe unless told otherwise (AdamW,
linear decay to 0 without warm-up, gradient norm clipped at 1.0, batch 64, lr 3e-5,
``max_length`` 32, one epoch, evaluation every 125 steps; Gao et al., 2021, App. A); the
framework holds the papers' sentence hyper-parameters of the losses
(:attr:`~contrastkit.frameworks.simcse.SimCSE.loss_defaults`).
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from torch import Tensor, nn

from ..data import dataset_info
from ..engine import host_floats
from ..frameworks import SimCSE
from ..rundir import atomic_dir, atomic_write_text
from ..training import TrainConfig, Trainer
from . import diagnostics
from .data import read_sts
from .evaluate import sts_spearman
from .senteval_names import KFOLD
from .trainer import text_encoder

HISTORY = "history.json"
BEST = "best"
SENTEVAL = "senteval.json"


def sentence_losses() -> list[str]:
    """Registered losses usable on two views of a sentence batch: the simcse framework's."""
    return SimCSE.compatible_losses()


def loss_hyperparameters(loss: nn.Module) -> dict[str, object]:
    """The public scalar attributes of a loss module (its hyper-parameters), for logs."""
    return {
        k: v
        for k, v in vars(loss).items()
        if not k.startswith("_") and k != "training" and isinstance(v, (int, float, bool, str))
    }


@dataclass
class SimCSEHistory:
    """What a run did, per step: dev scores at each evaluation (with the seconds since the
    trainer was built), the training loss, the adaptive temperature (the ``temperature``
    of the loss's registered diagnostics, if it reports one) and the §3.2 batch geometry;
    the best dev score and its step, the steps taken and the epochs' wall seconds (the dev
    evaluations within them included)."""

    evals: list[dict[str, float]] = field(default_factory=list)
    # the per-step values are device tensors until flush() reads them (once an epoch)
    train_loss: list[float | Tensor] = field(default_factory=list)
    temperature: list[float | Tensor] = field(default_factory=list)  # τ, losses that adapt it
    # per-step batch geometry (text.diagnostics: gradient-paradigm §3.2), one list per quantity
    diagnostics: dict[str, list[float | Tensor]] = field(default_factory=dict)
    best_step: int = 0
    best_spearman: float | None = None  # None until a dev evaluation
    seconds: float = 0.0
    steps: int = 0

    def to_dict(self) -> dict[str, object]:
        self.flush()
        return asdict(self)

    def flush(self) -> None:
        """The per-step values kept as device tensors, read as floats in one copy per list
        (:func:`~contrastkit.engine.host_floats`): a step itself waits for nothing."""
        self.train_loss = host_floats(self.train_loss)
        self.temperature = host_floats(self.temperature)
        self.diagnostics = {k: host_floats(v) for k, v in self.diagnostics.items()}

    def truncate(self, steps: int) -> None:
        """Forget everything after step ``steps`` (a resumed run replays those steps)."""
        self.flush()
        self.train_loss, self.temperature = self.train_loss[:steps], self.temperature[:steps]
        self.diagnostics = {k: v[:steps] for k, v in self.diagnostics.items()}
        self.evals = [e for e in self.evals if e["step"] <= steps]
        self.steps = min(self.steps, steps)
        trained = [e for e in self.evals if e["step"] > 0]  # the start is no candidate
        best = max(trained, key=lambda e: e["spearman"], default=None)
        self.best_spearman = None if best is None else best["spearman"]
        self.best_step = 0 if best is None else int(best["step"])


def same_sentences(batch: list[str], generator: object) -> list[str]:
    """SimCSE's "augmentation": both views are the batch itself (dropout differs)."""
    return batch


class SimCSETrainer(Trainer):
    """The shared loop for unsupervised SimCSE runs (module docstring).

    Args:
        config: a run with ``framework: simcse`` on a text dataset.
        out: run directory; ``None`` keeps everything in memory (no ``best/``).
        progress: show a progress bar.
    """

    epoch_features = False  # no kNN: runs are judged on STS pairs

    def __init__(
        self, config: TrainConfig, out: str | Path | None = None, progress: bool = True
    ) -> None:
        if config.framework != "simcse" or dataset_info(config.dataset).modality != "text":
            raise ValueError(
                "SimCSETrainer trains framework simcse on a text dataset (sentences), got "
                f"{config.framework!r} on {config.dataset!r}"
            )
        if config.aug_types is not None:
            raise ValueError("aug_types does not apply to simcse: its views are dropout passes")
        self.dev = read_sts(config.sts_dev, config.sts_format) if config.sts_dev else None
        self.senteval_tasks = senteval_tasks(config, out)
        super().__init__(config, out, progress)
        self.log = SimCSEHistory()
        self.temperature = float(loss_hyperparameters(self.model.loss).get("temperature", 0.05))
        self._start = time.perf_counter()

    @classmethod
    def check_paths(cls, config: TrainConfig, out: str | Path | None) -> None:
        senteval_tasks(config, out)

    def build_encoder(self) -> nn.Module:
        return text_encoder(self.config)

    def build_augment(self) -> Any:
        return same_sentences

    def train_epoch(self) -> dict[str, Any]:
        self.log.truncate(self.epoch * self.steps_per_epoch)  # after a resume: the checkpoint's
        if self.epoch == 0 and not self.log.evals:
            self.evaluate(0)  # the starting point, not a candidate of model selection
        record = super().train_epoch()
        self.log.flush()
        self.save_history()
        start = self.epoch * self.steps_per_epoch
        for key, values in self.log.diagnostics.items():  # the epoch's mean §3.2 geometry
            finite = [v for v in values[start:] if math.isfinite(v)]
            if finite:
                record[key] = math.fsum(finite) / len(finite)
        last = self.log.evals[-1] if self.log.evals else None
        if last is not None and last["step"] == (self.epoch + 1) * self.steps_per_epoch:
            record["sts_dev_spearman"] = last["spearman"]
        return record

    def after_batch(self, step: int, loss: Tensor, step_values: dict[str, Tensor | float]) -> None:
        log = self.log
        log.train_loss.append(loss.detach())
        log.steps = step
        tau = step_values.get("temperature")
        if tau is not None:
            log.temperature.append(tau)
        if self.model.last_views is not None:
            diagnostics.record(log.diagnostics, *self.model.last_views, self.temperature)
        every = self.config.eval_steps
        if (every and step % every == 0) or step % self.steps_per_epoch == 0:
            self.evaluate(step)

    def evaluate(self, step: int) -> None:
        """STS Spearman of the current encoder on ``sts_dev``; after a training step
        (``step > 0``), the best model is saved (by rank 0 alone under ``torchrun``)."""
        if self.dev is None or self.rank != 0:
            return
        encoder = self.model.encoder.encoder  # SentenceFeatures -> SentenceEncoder
        rho = sts_spearman(encoder, self.dev)["spearman"]
        seconds = time.perf_counter() - self._start
        self.log.evals.append({"step": step, "spearman": rho, "seconds": seconds})
        best = self.log.best_spearman
        if step > 0 and (best is None or rho > best):
            self.log.best_spearman, self.log.best_step = rho, step
            if self.out is not None:
                self._save_best(encoder)

    def _save_best(self, encoder: nn.Module) -> None:
        """``encoder`` to ``<run>/best``, swapped in whole: a crash keeps the last one."""
        assert self.out is not None
        with atomic_dir(self.out / BEST, replace=True) as tmp:
            encoder.save_pretrained(tmp)

    def save_history(self) -> None:
        self.log.seconds = self.train_time
        if self.out is not None and self.rank == 0:
            record = {"config": self.config.to_dict(), **self.log.to_dict()}
            atomic_write_text(self.out / HISTORY, json.dumps(record, indent=2) + "\n")

    def fit(self, resume: bool = False) -> dict[str, Any]:
        """Train, continuing from the checkpoint if ``resume``: the history is cut back to
        the checkpoint's epoch (a ``best/`` saved during a lost epoch is kept until a better
        score replaces it)."""
        if resume and self.out is not None and (self.out / HISTORY).is_file():
            saved = json.loads((self.out / HISTORY).read_text())
            saved.pop("config", None)
            self.log = SimCSEHistory(**saved)
        return super().fit(resume)

    def finish(self) -> dict[str, Any]:
        """``final.json`` with the dev scores (before, best, last), the step counts and, with
        ``senteval``, the SentEval scores of the selected model."""
        if self.rank != 0:
            return {}
        if self.dev is None and self.out is not None:
            self._save_best(self.model.encoder.encoder)
        self.save_history()
        evals = self.log.evals
        metrics: dict[str, Any] = {"steps": self.log.steps}
        if evals:
            metrics |= {
                "sts_dev_spearman_before": evals[0]["spearman"],
                "sts_dev_spearman_last": evals[-1]["spearman"],
                "sts_dev_spearman_best": self.log.best_spearman,
                "best_step": self.log.best_step,
            }
        if self.senteval_tasks and self.out is not None:
            metrics |= self.senteval(self.out)
        return self.write_final(metrics)

    def senteval(self, out: Path) -> dict[str, float]:
        """SentEval on ``out/best`` (``senteval.json`` beside it); the scores for
        ``final.json``. Files missing from a task's folder raise (no partial average)."""
        from .senteval import (
            STS_TASKS,
            TRANSFER_TASKS,
            Layout,
            encoder_embedder,
            markdown_table,
            run_senteval,
        )
        from .senteval.transfer import Fitting

        cfg, device = self.config, str(self.engine.device)
        embed, info = encoder_embedder(out / BEST, device=device, precision=cfg.precision)
        layout = Layout(Path(str(cfg.senteval)))
        fitting = Fitting(cfg.senteval_classifier, device, cfg.senteval_jobs)
        result = run_senteval(
            layout, embed, self.senteval_tasks, log=lambda _: None, fitting=fitting
        )
        if result.skipped:
            raise FileNotFoundError("; ".join(result.skipped.values()))
        payload = {
            "model": out.name,
            "encoder": info,
            "kfold": KFOLD,
            "classifier": fitting.kind,
            **result.to_dict(),
        }
        atomic_write_text(out / SENTEVAL, json.dumps(payload, indent=2) + "\n")
        atomic_write_text((out / SENTEVAL).with_suffix(".md"), markdown_table(result, out.name))
        scores = {f"senteval_{t}": result.score(t) for t in self.senteval_tasks}
        for key, group in (
            ("senteval_sts_avg", STS_TASKS),
            ("senteval_transfer_avg", TRANSFER_TASKS),
        ):
            value, count = result.average(group)
            if count:  # the papers average 7 tasks each; say how many this one holds
                scores[key], scores[f"{key}_tasks"] = value, count
        return {k: v for k, v in scores.items() if v is not None}


def senteval_tasks(config: TrainConfig, out: str | Path | None) -> tuple[str, ...]:
    """The SentEval tasks a run is scored on after training, checked before it trains:
    known names, a run directory to hold the model, every task's folder present."""
    if config.senteval is None:
        return ()
    from .senteval import TASKS, Layout

    given = config.senteval_tasks
    tasks = tuple(t.strip() for t in given.split(",") if t.strip()) if given else TASKS
    unknown = [t for t in tasks if t not in TASKS]
    if unknown or not tasks:
        raise ValueError(f"senteval_tasks: unknown {unknown}; choose from {', '.join(TASKS)}")
    if out is None:
        raise ValueError("senteval needs a run directory (it scores the saved best/ model)")
    if not Path(config.senteval).is_dir():
        raise FileNotFoundError(f"senteval: {config.senteval!r} is not a folder (downstream/)")
    layout = Layout(Path(config.senteval))
    missing = [str(layout.folder(t)) for t in tasks if not layout.folder(t).is_dir()]
    if missing:
        raise FileNotFoundError(f"senteval: no task folder {', '.join(missing)}")
    return tasks
