"""The training loop every modality shares: data, augmentations, framework, optimiser,
per-epoch evaluation, files; hardware and numerics through :class:`contrastkit.engine.Engine`.

The loop asks of a dataset only ``len(x)``, the batches of index rows
(:func:`~contrastkit.data.sources.iter_batches`: ``x[idx]``, ``x[a:b]``, or decoded in
``DataLoader`` workers for streamed images), ``engine.to_device(batch)``,
``augment(batch, generator)`` and ``encoder(view)``, so tensors, graph containers and
streamed or memory-mapped image sets train alike. Data that fit on the device are moved
there once; else CPU tensors are pinned and each batch is copied with ``non_blocking=True``.
kNN features are computed on the device in chunks; what goes to scikit-learn is moved to
the CPU explicitly. The pre-training set may add STL-10's unlabelled images
(:func:`~contrastkit.data.sources.pretraining_set`); view ``v`` comes from
``view_augments[v mod len]``.

A run directory holds ``metrics.jsonl`` (one record per epoch), ``checkpoint.pt`` and
``final.json`` (kNN, linear probe, alignment, uniformity, timing, hardware, config, seed):
:mod:`.checkpoint` describes each.

Shuffling and augmentation draw from a generator seeded by ``(seed, epoch)``, so
``epochs=2`` + ``resume`` to 4 replays exactly the batches and views of a 4-epoch run.

Under ``torchrun --nproc-per-node W`` the trainer joins the process group (NCCL on CUDA,
one GPU per process picked by ``LOCAL_RANK``; gloo on CPU), wraps the framework in DDP and
gives every rank ``batch_size / W`` samples of the same global batch
(every rank draws the same shuffling and views and keeps its slice; a streamed or
memory-mapped image set decodes only the rank's slice, the rest of the batch zeros).
Losses that take ``gather_distributed`` get it, so they contrast against every rank's
embeddings (see :mod:`contrastkit.distributed`). With ``sync_batchnorm`` (default) batch
norm normalises over the global batch on any device (:func:`~contrastkit.distributed.wrap_ddp`),
so a W-process run computes what one process would on the whole batch. Rank 0 alone
evaluates and writes the run directory.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch

from .. import distributed, losses
from ..data import Split, dataset_from_config
from ..data.sources import iter_batches, pretraining_set
from ..engine import Engine, build_optimizer, build_schedule, cat_rows, eval_mode, host_floats
from ..engine.device import device_info
from ..evaluation import alignment_uniformity, knn_accuracies, linear_probe
from ..frameworks import build_framework, framework_class
from ..provenance import code_info
from . import checkpoint
from .config import TrainConfig
from .modality import Modality, ViewAugment, make_views, modality_of
from .monitors import OnlineProbe, TensorBoardLog, finite_numbers

# per-step values kept in full (as ``<name>_steps``), not only averaged
TRACED = ("temperature", "alignment_A", "tau_pos_mean", "tau_neg_mean")
TRACE_SUFFIX = "_steps"


def epoch_generator(seed: int, epoch: int) -> torch.Generator:
    """The generator of one epoch's shuffling and views, independent of earlier epochs."""
    return torch.Generator().manual_seed(seed * 1_000_003 + epoch)


class Trainer:
    """Builds a run from a :class:`TrainConfig` and trains it.

    Args:
        config: the run's configuration.
        out: run directory (created); ``None`` keeps everything in memory.
        progress: show a tqdm progress bar on stderr.
    """

    epoch_features = True  # evaluated epochs compute frozen features (kNN, online probe)

    @classmethod
    def check_paths(cls, config: TrainConfig, out: str | Path | None) -> None:
        """Refuse, before a command creates ``out``, the paths this trainer would refuse
        when built; the base trainer checks its paths as it loads them."""

    def __init__(
        self, config: TrainConfig, out: str | Path | None = None, progress: bool = True
    ) -> None:
        self.config = config
        self.out = None if out is None else Path(out)
        self.code = code_info()  # at the start: the checkout may move while the run trains
        if config.threads is not None:
            torch.set_num_threads(config.threads)
        self.engine = Engine(
            config.device,
            config.precision,
            config.compile,
            config.channels_last,
            config.grad_accum,
            config.clip_grad,
            config.compile_mode,
        )
        device = self.engine.device
        self.world, self.rank = distributed.join(device)
        self.progress = progress and self.rank == 0
        self.pin = device.type == "cuda"  # streamed batches page-locked for async copies
        self.data = self.load_data()
        labelled_only = ["online_probe"] if config.online_probe else []
        if framework_class(config.framework).needs_labels:
            labelled_only.append(f"the {config.framework} framework")
        self.train_x, self.train_y = pretraining_set(self.data, config.unlabeled, labelled_only)
        self.steps_per_epoch = config.steps_per_epoch(len(self.train_x), self.world)
        torch.manual_seed(config.seed)
        loss_args = dict(config.loss_args)
        if self.world > 1 and distributed.accepts_gather(losses.info(config.loss).cls):
            loss_args.setdefault("gather_distributed", True)
        self.model = build_framework(
            config.framework,
            self.build_encoder(),
            config.loss,
            loss_args,
            proj_dim=config.proj_dim,
            hidden_dim=config.hidden_dim,
            queue_size=config.queue_size,
            momentum=config.momentum,
            grad_accum=config.grad_accum,
            num_views=config.num_views,
            joint_views=config.joint_views,
        )
        self.model = self.engine.prepare(self.model)
        placed = self.place_data(self.data)
        if self.train_x is self.data.x_train:  # else: gathered from memory maps per batch
            self.train_x, self.train_y = placed.x_train, placed.y_train
        self.data = placed
        self.ddp = None
        if self.world > 1:
            self.ddp = distributed.wrap_ddp(self.model, device, config.sync_batchnorm)
            self.model = self.ddp.module
        # the network parts (encoder, heads, momentum encoder), never the loss: its fused
        # autograd Functions stay eager
        network = [m for name, m in self.model.named_children() if name != "loss"]
        self.engine.compile_modules(*network)
        self.augment = self.build_augment()
        self.view_augments = self.build_view_augments()
        self.engine.prepare_views(*self.view_augments)
        self.optimizer = build_optimizer(
            config.optimizer,
            self.model.parameters(),
            lr=config.effective_lr,
            weight_decay=config.weight_decay,
            momentum=config.sgd_momentum,
            nesterov=config.nesterov,
        )
        self.scheduler = build_schedule(
            config.schedule,
            self.optimizer,
            math.ceil(self.steps_per_epoch / config.grad_accum),
            config.epochs,
            config.warmup_epochs,
            config.lr_milestones,
            config.lr_gamma,
        )
        self.probe = None
        if config.online_probe:
            feature_dim, d = self.model.encoder.feature_dim, self.data
            self.probe = OnlineProbe.for_labels(
                feature_dim, d.y_train, d.y_test, device, config.dataset
            )
        self.epoch = 0
        self.history: list[dict[str, Any]] = []
        self.train_time = 0.0
        self.epoch_end = time.perf_counter()  # the final evaluation starts here
        logs_events = config.tensorboard and self.out is not None and self.rank == 0
        self.tensorboard = TensorBoardLog(self.out / "tensorboard" if logs_events else None)

    def load_data(self) -> Split:
        """The dataset the loss trains on."""
        return dataset_from_config(self.config)

    @property
    def modality(self) -> Modality:
        """The registered :class:`~.modality.Modality` of the run's dataset."""
        return modality_of(self.config.dataset)

    def build_encoder(self) -> torch.nn.Module:
        """The modality's encoder of :attr:`data` (:meth:`Modality.build_encoder`)."""
        return self.modality.build_encoder(self.data, self.config)

    def build_augment(self) -> ViewAugment:
        """The modality's view generator of :attr:`data` (:meth:`Modality.build_augment`)."""
        return self.modality.build_augment(self.data, self.config)

    def build_view_augments(self) -> list[ViewAugment]:
        """The loop's view generators, one per view position (cycled over the views):
        :attr:`augment` for every view unless a modality offers ``aug_recipe``s."""
        if self.config.aug_recipe != "simclr":
            raise ValueError(
                f"aug_recipe {self.config.aug_recipe!r} applies to image datasets, not to "
                f"{self.config.dataset!r}"
            )
        return [self.augment]

    def place_data(self, split: Split) -> Split:
        """``split`` with its tensors placed by :meth:`Engine.place` (on the device if they
        fit, else pinned CPU memory)."""
        names = ("x_train", "y_train", "x_test", "y_test")
        placed = self.engine.place([getattr(split, n) for n in names])
        return dataclasses.replace(split, **dict(zip(names, placed, strict=True)))

    # ----------------------------------------------------------------- training
    def train_epoch(self) -> dict[str, Any]:
        """One pass over the shuffled training set (last partial batch dropped)."""
        cfg, model, engine = self.config, self.model, self.engine
        gen = epoch_generator(cfg.seed, self.epoch)
        x, y, augs = self.train_x, self.train_y, self.view_augments
        order = torch.randperm(len(x), generator=gen)
        steps = self.steps_per_epoch
        logs: dict[str, list[torch.Tensor | float]] = defaultdict(list)
        total = torch.zeros((), device=engine.device)
        model.train()
        start = time.perf_counter()
        rows = order[: steps * cfg.batch_size].view(steps, cfg.batch_size)
        local = slice(
            self.rank * cfg.batch_size // self.world, (self.rank + 1) * cfg.batch_size // self.world
        )
        keep = local if self.world > 1 else None  # a rank reads / decodes its share only
        # indices on the data's device once an epoch (CPU indices: a blocking copy a batch)
        on = x.device if isinstance(x, torch.Tensor) else rows.device
        rows = rows.to(on)
        label_rows = rows.to(y.device) if isinstance(y, torch.Tensor) else rows
        from tqdm import tqdm  # the command line's: the library imports without it

        bar = tqdm(
            iter_batches(x, rows, cfg.workers, self.pin, keep),
            total=steps,
            desc=f"epoch {self.epoch + 1}/{cfg.epochs}",
            leave=False,
            disable=not self.progress,
            unit="batch",
        )
        forward = self.ddp or model
        lr = self.scheduler.get_last_lr()[0]
        for i, xb in enumerate(bar):
            engine.begin_step()
            batch = engine.to_device(xb)
            views = [engine.format_input(v[local]) for v in make_views(augs, batch, gen, model)]
            need = model.needs_labels or self.probe
            labels = engine.to_device(y[label_rows[i]][local]) if need else None
            last = i == steps - 1  # an epoch's last batch always ends with a step
            with engine.no_sync(self.ddp, last), self._capture(), engine.autocast():
                loss = forward(views, labels if model.needs_labels else None)
            engine.backward_step(
                loss,
                self.optimizer,
                describe=lambda i=i: f"epoch {self.epoch + 1}, batch {i + 1}: {model.step_logs()}",
                force_step=last,
                scheduler=self.scheduler,
            )
            if self.probe is not None:
                self.probe.step(labels)
            values = model.step_values()  # device tensors: read once, at the epoch's end
            self.after_batch(self.epoch * steps + i + 1, loss, values)
            total += loss.detach()
            for key, value in values.items():
                logs[key].append(value)
            if self.progress and i % 10 == 9:
                rate = (i + 1) * cfg.batch_size / (time.perf_counter() - start)
                bar.set_postfix_str(f"{rate:.0f} samples/s", refresh=False)
        engine.check_pending()  # the last step's deferred finite check (fused optimisers)
        seconds = time.perf_counter() - start
        self.train_time += seconds
        mean_loss = float(distributed.global_mean(total)) / steps
        record: dict[str, Any] = {
            "epoch": self.epoch + 1,
            "loss": mean_loss,
            "epoch_time_s": seconds,
            "samples_per_s": steps * cfg.batch_size / seconds,
        }
        if cfg.schedule != "constant":
            record["lr"] = lr
        steps_logs = {k: host_floats(v) for k, v in logs.items()}  # one copy per diagnostic
        record.update({k: sum(v) / len(v) for k, v in steps_logs.items()})
        record.update({k + TRACE_SUFFIX: steps_logs[k] for k in TRACED if k in steps_logs})
        if self.probe is not None:
            record.update(self.probe.epoch_logs())
        return record

    def after_batch(
        self, step: int, loss: torch.Tensor, step_values: dict[str, torch.Tensor | float]
    ) -> None:
        """Called after batch ``step`` (counted from 1 over the run) with its loss and the
        framework's step values (:meth:`~contrastkit.frameworks.Framework.step_values`,
        device tensors where the loss has them); a trainer that evaluates within epochs
        overrides it (SimCSE's dev evaluation)."""

    def _capture(self) -> Any:
        return self.probe.capture(self.model.encoder) if self.probe else contextlib.nullcontext()

    def encode(self, x: Any, batch_size: int = 1024) -> torch.Tensor:
        """Frozen encoder features ``[len(x), feature_dim]`` (float32, on the device) of
        ``x``, in chunks ``x[a:b]`` of ``batch_size`` (eval mode, no gradient)."""
        engine = self.engine
        rows = [slice(a, a + batch_size) for a in range(0, len(x), batch_size)]

        def parts(encoder: torch.nn.Module) -> Iterator[torch.Tensor]:
            for batch in iter_batches(x, rows, self.config.workers, self.pin):
                # the last chunk is copied (cat_rows): under CUDA graphs its memory may be
                # reused, as a training step's, instead of recording a graph per chunk
                engine.begin_step()
                yield encoder(engine.format_input(engine.to_device(batch)))

        with eval_mode(self.model.encoder) as encoder, engine.autocast():
            return cat_rows(parts(encoder), len(x)).float()

    def features(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Frozen encoder features of the train and test splits (on the device)."""
        return self.encode(self.data.x_train), self.encode(self.data.x_test)

    def knn(self, train_feats: torch.Tensor, test_feats: torch.Tensor) -> dict[str, float]:
        cfg, device = self.config, train_feats.device
        y_train, y_test = self.data.y_train.to(device), self.data.y_test.to(device)
        ks = (cfg.knn_k, cfg.knn_small_k)
        acc = knn_accuracies(train_feats, y_train, test_feats, y_test, ks)
        return {
            "knn_accuracy": acc[cfg.knn_k],
            f"knn_accuracy_k{cfg.knn_small_k}": acc[cfg.knn_small_k],
        }

    def fit(self, resume: bool = False) -> dict[str, Any]:
        """Train to ``config.epochs`` (continuing from the checkpoint if ``resume``)."""
        if self.out is not None:
            if resume:
                checkpoint.restore(self)
            else:  # the commands call rundir.prepare_run_dir before any work
                self.out.mkdir(parents=True, exist_ok=True)
                if self.rank == 0 and any(self.out.iterdir()):
                    raise ValueError(
                        f"{self.out} already holds a run; pass --resume or choose another --out"
                    )
        while self.epoch < self.config.epochs:
            record = self.train_epoch()
            self.epoch += 1
            evaluate = self.epoch % self.config.eval_every == 0 or self.epoch == self.config.epochs
            began = time.perf_counter()
            feats = None  # frozen (train, test) features, computed once per epoch
            if evaluate and self.rank == 0 and self.epoch_features:
                feats = self.features()
                record.update(self.knn(*feats))
                if self.probe is not None:
                    record["online_probe_test_accuracy"] = self.probe.accuracy(
                        feats[1], self.data.y_test
                    )
            if self.rank == 0 and self.epoch in self.config.final_eval_epochs():
                record.update(finite_numbers(self.final_metrics(*(feats or self.features()))))
            record["eval_time_s"] = time.perf_counter() - began  # ~0 on epochs not evaluated
            self.history.append(record)
            checkpoint.save_epoch(self, record)
            self.tensorboard.log(record)
            self.epoch_end = time.perf_counter()
        self.tensorboard.close()
        return self.finish()

    def run_info(self) -> dict[str, Any]:
        """Hardware, numerics and code (:func:`~contrastkit.provenance.code_info`, read when
        the process's first run started) of the run, for ``final.json``."""
        return {**device_info(self.engine.device), **self.engine.describe(), **self.code}

    def finish(self) -> dict[str, Any]:
        """Final evaluation; writes ``final.json`` when there is a run directory.

        Under ``torchrun`` only rank 0 evaluates; the other ranks return ``{}``."""
        if self.rank != 0:
            return {}
        return self.write_final(self.final_metrics(*self.features()))

    def final_metrics(self, train_feats: torch.Tensor, test_feats: torch.Tensor) -> dict[str, Any]:
        """kNN, linear probe, alignment and uniformity of the trained encoder, given its
        frozen features of the train and test splits. A trainer with another evaluation
        protocol overrides it; :meth:`fit` also calls it at ``final_eval_at``'s epochs."""
        d, cfg = self.data, self.config
        geometry = alignment_uniformity(
            self.encode, d.x_test, self.augment, torch.Generator().manual_seed(cfg.seed)
        )
        return {
            **self.knn(train_feats, test_feats),
            "linear_accuracy": linear_probe(  # scikit-learn: CPU arrays
                train_feats.cpu(), d.y_train.cpu(), test_feats.cpu(), d.y_test.cpu()
            ),
            **geometry,
        }

    def write_final(self, metrics: dict[str, Any]) -> dict[str, Any]:
        """``metrics`` completed with what describes the run and, with a run directory,
        written to ``final.json`` (:func:`.checkpoint.write_final`); returned. Every
        trainer's ``finish`` ends here."""
        return checkpoint.write_final(self, metrics, time.perf_counter() - self.epoch_end)
