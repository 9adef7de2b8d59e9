"""The training loop: data, augmentations, framework, Adam, per-epoch evaluation, files.

A run directory holds:

* ``metrics.jsonl``: one JSON record per epoch (mean loss, kNN accuracies, the loss's
  diagnostics averaged over the epoch, and MACL's / AMCL's per-step temperature trace);
* ``checkpoint.pt``: state dicts only (model, optimiser, torch RNG), the epoch and the
  config, loaded with ``torch.load(weights_only=True)``;
* ``final.json``: kNN (k = 200 and small k), linear-probe accuracy, alignment,
  uniformity, timing, the full config and the seed.

Shuffling and augmentation draw from a generator seeded by ``(seed, epoch)``, so
``epochs=2`` + ``resume`` to 4 replays exactly the batches and views of a 4-epoch run.

Under ``torchrun --nproc-per-node W`` the trainer joins the gloo process group, wraps the
framework in DDP and gives every rank ``batch_size / W`` samples of the same global batch
(every rank draws the same shuffling and views and keeps its slice). Losses that take
``gather_distributed`` get it, so they contrast against every rank's embeddings (see
:mod:`contrastkit.distributed`). With ``sync_batchnorm`` (default) every batch norm layer
normalises over the global batch (:class:`contrastkit.distributed.SyncBatchNorm`, which,
unlike ``torch.nn.SyncBatchNorm``, runs on CPU), so a W-process run computes what one
process would on the whole batch. Rank 0 alone evaluates and writes the run directory.
"""

from __future__ import annotations

import json
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import torch
from tqdm import tqdm

from .. import distributed, losses
from ..data import Augment, Split, load_dataset
from ..evaluation import alignment_uniformity, knn_accuracy, linear_probe
from ..frameworks import build_framework
from ..models import build_encoder
from .config import TrainConfig

CHECKPOINT = "checkpoint.pt"
METRICS = "metrics.jsonl"
FINAL = "final.json"
TRACED = (
    "temperature",
    "alignment_A",
    "tau_pos_mean",
    "tau_neg_mean",
)  # per-step values kept in full, not only averaged


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

    def __init__(
        self, config: TrainConfig, out: str | Path | None = None, progress: bool = True
    ) -> None:
        self.config = config
        self.out = None if out is None else Path(out)
        if config.threads is not None:
            torch.set_num_threads(config.threads)
        self.world, self.rank = (
            (distributed.world_size(), distributed.rank())
            if distributed.init_from_env()
            else (1, 0)
        )
        self.progress = progress and self.rank == 0
        self.data = self.load_data()
        n_train = len(self.data.x_train)
        if config.batch_size > n_train:
            raise ValueError(
                f"batch_size {config.batch_size} exceeds the {n_train} training samples "
                f"of {config.dataset}"
            )
        if config.batch_size % self.world:
            raise ValueError(
                f"batch_size {config.batch_size} must divide evenly over {self.world} processes"
            )
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
            num_views=config.num_views,
            joint_views=config.joint_views,
        )
        self.ddp = None
        if self.world > 1:
            if config.sync_batchnorm:
                self.model = distributed.convert_sync_batchnorm(self.model)
            self.ddp = torch.nn.parallel.DistributedDataParallel(self.model)
        self.augment = self.build_augment()
        self.optimizer = torch.optim.Adam(
            self.model.parameters(), lr=config.effective_lr, weight_decay=config.weight_decay
        )
        self.epoch = 0
        self.history: list[dict[str, Any]] = []
        self.train_time = 0.0

    def load_data(self) -> Split:
        """The dataset the loss trains on."""
        return load_dataset(self.config.dataset, self.config.num_samples)

    def build_encoder(self) -> torch.nn.Module:
        cfg = self.config
        return build_encoder(self.data.kind, self.data.input_shape, cfg.feature_dim, cfg.width)

    def build_augment(self) -> Any:
        return Augment(self.data.kind, self.config.aug_types)

    # ----------------------------------------------------------------- training
    def train_epoch(self) -> dict[str, Any]:
        """One pass over the shuffled training set (last partial batch dropped)."""
        cfg, model = self.config, self.model
        gen = epoch_generator(cfg.seed, self.epoch)
        x, y = self.data.x_train, self.data.y_train
        order = torch.randperm(len(x), generator=gen)
        steps = len(x) // cfg.batch_size
        logs: dict[str, list[float]] = defaultdict(list)
        total = torch.zeros(())
        model.train()
        start = time.perf_counter()
        bar = tqdm(
            order[: steps * cfg.batch_size].view(steps, cfg.batch_size),
            desc=f"epoch {self.epoch + 1}/{cfg.epochs}",
            leave=False,
            disable=not self.progress,
        )
        local = slice(
            self.rank * cfg.batch_size // self.world, (self.rank + 1) * cfg.batch_size // self.world
        )
        forward = self.ddp or model
        for idx in bar:
            batch = x[idx]
            views = [self.augment(batch, gen)[local] for _ in range(model.num_views)]
            loss = forward(views, y[idx][local] if model.needs_labels else None)
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            self.optimizer.step()
            total += loss.detach()
            for key, value in model.step_logs().items():
                logs[key].append(value)
        seconds = time.perf_counter() - start
        self.train_time += seconds
        mean_loss = float(distributed.global_mean(total)) / steps
        if not torch.isfinite(torch.tensor(mean_loss)):
            raise FloatingPointError(f"non-finite training loss at epoch {self.epoch + 1}")
        record: dict[str, Any] = {
            "epoch": self.epoch + 1,
            "loss": mean_loss,
            "epoch_time_s": seconds,
            "samples_per_s": steps * cfg.batch_size / seconds,
        }
        record.update({k: sum(v) / len(v) for k, v in logs.items()})
        record.update({f"{k}_steps": logs[k] for k in TRACED if k in logs})
        return record

    def features(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Frozen encoder features of the train and test splits."""
        return self.model.encode(self.data.x_train), self.model.encode(self.data.x_test)

    def knn(self, train_feats: torch.Tensor, test_feats: torch.Tensor) -> dict[str, float]:
        d, cfg = self.data, self.config
        return {
            "knn_accuracy": knn_accuracy(train_feats, d.y_train, test_feats, d.y_test, cfg.knn_k),
            f"knn_accuracy_k{cfg.knn_small_k}": knn_accuracy(
                train_feats, d.y_train, test_feats, d.y_test, cfg.knn_small_k
            ),
        }

    def fit(self, resume: bool = False) -> dict[str, Any]:
        """Train to ``config.epochs`` (continuing from the checkpoint if ``resume``)."""
        if self.out is not None:
            self.out.mkdir(parents=True, exist_ok=True)
            if resume:
                self.load_checkpoint()
            elif (self.out / CHECKPOINT).exists():
                raise ValueError(
                    f"{self.out} already holds a run; pass --resume or choose another --out"
                )
        while self.epoch < self.config.epochs:
            record = self.train_epoch()
            self.epoch += 1
            evaluate = self.epoch % self.config.eval_every == 0 or self.epoch == self.config.epochs
            if evaluate and self.rank == 0:
                record.update(self.knn(*self.features()))
            self.history.append(record)
            self._save_epoch(record)
        return self.finish()

    def finish(self) -> dict[str, Any]:
        """Final evaluation; writes ``final.json`` when there is a run directory.

        Under ``torchrun`` only rank 0 evaluates; the other ranks return ``{}``."""
        if self.rank != 0:
            return {}
        d, cfg = self.data, self.config
        train_feats, test_feats = self.features()
        geometry = alignment_uniformity(
            self.model.encode, d.x_test, self.augment, torch.Generator().manual_seed(cfg.seed)
        )
        final: dict[str, Any] = {
            **self.knn(train_feats, test_feats),
            "linear_accuracy": linear_probe(train_feats, d.y_train, test_feats, d.y_test),
            **geometry,
            "epochs": self.epoch,
            "train_time_s": self.train_time,
            "seed": cfg.seed,
            "world_size": self.world,
            "config": cfg.to_dict(),
        }
        if self.out is not None:
            (self.out / FINAL).write_text(json.dumps(final, indent=2) + "\n")
        return final

    # ------------------------------------------------------------ persistence
    def _save_epoch(self, record: dict[str, Any]) -> None:
        if self.out is None or self.rank != 0:
            return
        with (self.out / METRICS).open("a") as fh:
            fh.write(json.dumps(record) + "\n")
        state = {
            "model": self.model.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "torch_rng": torch.get_rng_state(),
            "epoch": self.epoch,
            "train_time_s": self.train_time,
            "config": self.config.to_dict(),
        }
        tmp = self.out / (CHECKPOINT + ".tmp")
        torch.save(state, tmp)
        tmp.replace(self.out / CHECKPOINT)

    def load_checkpoint(self) -> None:
        """Restore model, optimiser, RNG and history from the run directory."""
        assert self.out is not None
        path = self.out / CHECKPOINT
        if not path.exists():
            raise FileNotFoundError(f"no checkpoint to resume from at {path}")
        state = torch.load(path, weights_only=True)
        saved = {k: v for k, v in state["config"].items() if k not in ("epochs", "threads")}
        current = {k: v for k, v in self.config.to_dict().items() if k not in ("epochs", "threads")}
        if saved != current:
            diff = sorted(k for k in current if saved.get(k) != current[k])
            raise ValueError(
                "--resume with a different config than the checkpoint's "
                f"(differs in: {', '.join(diff)})"
            )
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        torch.set_rng_state(state["torch_rng"])
        self.epoch = int(state["epoch"])
        self.train_time = float(state["train_time_s"])
        lines = (
            (self.out / METRICS).read_text().splitlines() if (self.out / METRICS).exists() else []
        )
        self.history = [json.loads(line) for line in lines[: self.epoch]]
        if self.rank == 0:
            (self.out / METRICS).write_text("".join(json.dumps(r) + "\n" for r in self.history))
