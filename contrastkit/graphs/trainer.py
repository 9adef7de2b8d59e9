"""The graph modality plugged into the shared training loop, with GraphCL's SVM evaluation.

:class:`GraphTrainer` is a :class:`~contrastkit.training.Trainer` whose dataset is a TU set
(``tu:NAME`` read from ``data_root``), whose encoder is :class:`~.gin.GINEncoder` and whose
augmentation is :class:`~.augment.GraphAugment`; the epoch loop, optimiser, checkpoints and
metrics are the base class's. Evaluation follows GraphCL's unsupervised protocol: the
frozen embeddings of every graph go to :func:`~.evaluate.svm_cross_validation`, and
``final.json`` gains ``svm_accuracy`` and ``svm_accuracy_std`` (over the 10 folds). There
is no kNN accuracy: train and test are the same graphs (see :mod:`.tu`).

Config mapping: ``width`` is GIN's hidden width, ``feature_dim = width × layers`` (the
concatenated readout), ``aug_types = k`` draws among the first ``k`` of
:data:`~.augment.TYPES` (``None``: all four, GraphCL's random choice). The two views are
encoded in separate passes (``joint_views = false`` unless set), as GraphCL's loop does.
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from ..data import Split
from ..evaluation import alignment_uniformity
from ..training import TrainConfig, Trainer
from ..training.label_aware import trained_labels
from .augment import TYPES, GraphAugment
from .davis import DAVIS, DTAAugment, load_davis
from .dta import GraphDTAEncoder, dta_finetune, dta_head
from .evaluate import svm_cross_validation
from .gin import GINEncoder
from .tu import PREFIX, load_tu

DAVIS_TYPES = ("mask_attributes", "drop_nodes", "mask_subgraph")  # NM, ND, SM (App. D.4)


class GraphTrainer(Trainer):
    """A :class:`Trainer` for ``tu:NAME`` datasets (see the module docstring)."""

    def __init__(
        self, config: TrainConfig, out: str | Path | None = None, progress: bool = True
    ) -> None:
        if config.dataset.partition(":")[0] != PREFIX:
            raise ValueError(f"GraphTrainer needs a dataset tu:NAME, got {config.dataset!r}")
        if config.feature_dim % config.width:
            raise ValueError(
                f"feature_dim ({config.feature_dim}) must be a multiple of width "
                f"({config.width}): GIN's embedding is width × layers"
            )
        if config.aug_types is not None and config.aug_types > len(TYPES):
            raise ValueError(f"aug_types must be 1-{len(TYPES)} for graphs, got {config.aug_types}")
        if config.joint_views is None:
            config = dataclasses.replace(config, joint_views=False)
        super().__init__(config, out, progress)

    def load_data(self) -> Split:
        if self.config.num_samples is not None:
            raise ValueError("num_samples does not apply to TU datasets; leave it unset")
        return load_tu(self.config.dataset.partition(":")[2], self.config.data_root)

    def build_encoder(self) -> torch.nn.Module:
        cfg = self.config
        return GINEncoder(self.data.x_train.num_features, cfg.width, cfg.feature_dim // cfg.width)

    def build_augment(self) -> GraphAugment:
        k = self.config.aug_types
        return GraphAugment(TYPES if k is None else TYPES[:k])

    def features(self) -> tuple[Tensor, Tensor]:
        """Embeddings of every graph (train and test are the same set)."""
        h = self.model.encode(self.data.x_train)
        return h, h

    def knn(self, train_feats: Tensor, test_feats: Tensor) -> dict[str, float]:
        """No kNN accuracy: there is no held-out split (GraphCL's protocol is the SVM)."""
        return {}

    def final_metrics(self, train_feats: Tensor, test_feats: Tensor) -> dict[str, Any]:
        """SVM 10-fold accuracy of the embeddings (train and test are the same set),
        alignment / uniformity."""
        d, cfg = self.data, self.config
        svm = svm_cross_validation(train_feats, d.y_train, seed=cfg.seed)
        geometry = alignment_uniformity(
            self.model.encode, d.x_train, self.augment, torch.Generator().manual_seed(cfg.seed)
        )
        return {**svm, **geometry}


class DavisTrainer(Trainer):
    """Davis drug–target affinity (LASCon App. D.4) on the shared loop.

    Encoder :class:`~.dta.GraphDTAEncoder` (``feature_dim`` = drug + protein halves, GIN
    ``width`` and 5 layers), augmentation :class:`~.davis.DTAAugment` over the drug graph
    drawing per pair among NM, ND, SM at 20 % (``aug_types = k`` keeps the first ``k`` of
    :data:`DAVIS_TYPES`). ``binarize_threshold`` (SupCon: 7, LASCon Table 1) gives the loss
    ``1[pKd >= t]``; evaluation always uses the continuous pKd: a regression head on frozen
    embeddings (:func:`~.dta.dta_head`) writes ``dta_mse``, ``dta_mae``, ``dta_pearson``,
    ``dta_spearman`` and ``dta_ci`` on DeepDTA's test fold into ``final.json``; with
    ``finetune_epochs`` set, the paper's protocol (:func:`~.dta.dta_finetune`: encoder and
    GraphDTA head trained end to end, batch 256, lr 5e-4) adds ``finetune_*`` metrics.
    """

    def __init__(
        self, config: TrainConfig, out: str | Path | None = None, progress: bool = True
    ) -> None:
        if config.dataset != DAVIS:
            raise ValueError(f"DavisTrainer needs dataset davis, got {config.dataset!r}")
        if config.aug_types is not None and config.aug_types > len(DAVIS_TYPES):
            raise ValueError(f"aug_types must be 1-{len(DAVIS_TYPES)} for davis")
        if config.joint_views is None:
            config = dataclasses.replace(config, joint_views=False)
        super().__init__(config, out, progress)

    def load_data(self) -> Split:
        """Davis; ``num_samples`` keeps that many training pairs (a fixed random subset,
        generator seed 0, for CPU-sized runs); the test fold is always whole."""
        self.task = load_davis(self.config.data_root)
        n = self.config.num_samples
        if n is not None:
            if n > len(self.task.x_train):
                raise ValueError(f"num_samples {n} exceeds the {len(self.task.x_train)} pairs")
            keep = torch.randperm(
                len(self.task.x_train), generator=torch.Generator().manual_seed(0)
            )
            keep = keep[:n].sort().values
            self.task = dataclasses.replace(
                self.task, x_train=self.task.x_train[keep], y_train=self.task.y_train[keep]
            )
        return trained_labels(self.config, self.task, regression=True)

    def build_encoder(self) -> torch.nn.Module:
        cfg = self.config
        return GraphDTAEncoder(self.task.x_train.drugs.num_features, cfg.feature_dim, cfg.width)

    def build_augment(self) -> DTAAugment:
        k = self.config.aug_types
        types = DAVIS_TYPES if k is None else DAVIS_TYPES[:k]
        return DTAAugment(GraphAugment(types, ratio=0.2, mask="zero"))

    def features(self) -> tuple[Tensor, Tensor]:
        return self.model.encode(self.task.x_train), self.model.encode(self.task.x_test)

    def knn(self, train_feats: Tensor, test_feats: Tensor) -> dict[str, float]:
        """No kNN: the labels are continuous."""
        return {}

    def final_metrics(self, train_feats: Tensor, test_feats: Tensor) -> dict[str, Any]:
        """A regression head on the frozen embeddings (:func:`~.dta.dta_head`, an MLP of
        this project's; GraphDTA's own head is trained end to end by ``finetune_epochs``)."""
        t = self.task
        return dta_head(train_feats, t.y_train, test_feats, t.y_test, seed=self.config.seed)

    def finish(self) -> dict[str, Any]:
        """:meth:`final_metrics`, then with ``finetune_epochs`` the end-to-end fine-tuning;
        writes ``final.json``."""
        if self.rank != 0:
            return {}
        cfg = self.config
        metrics = self.final_metrics(*self.features())
        if cfg.finetune_epochs is not None:
            d, t = self.data, self.task
            start = time.perf_counter()
            metrics |= dta_finetune(
                self.model.encoder,
                d.x_train,
                t.y_train,
                d.x_test,
                t.y_test,
                cfg.finetune_epochs,
                seed=cfg.seed,
            )
            metrics["finetune_time_s"] = time.perf_counter() - start
        return self.write_final(metrics)
