"""Training with labels: the ``supervised`` framework and regression tasks.

:class:`LabelAwareTrainer` extends :class:`~contrastkit.training.Trainer` for

* continuous-label datasets (``regression=True`` in the dataset registry: ``diabetes``,
  ``digits_rotation``, ``sst5``): no kNN accuracy (labels are not classes), ``aug_types``
  refused (their modalities' views keep the label);
* SupCon on a regression task with ``binarize_threshold``: the loss sees
  ``1[y >= threshold]`` (LASCon Table 1's protocol); evaluation uses the continuous labels;
* every run it handles, ``final.json`` gains the downstream MLP head's metrics
  (:func:`~contrastkit.evaluation.downstream.prediction_head`: MAE / Pearson / Spearman, or
  accuracy), LASCon §4.2's label-aware alignment and uniformity on two views of the test
  split, and (with a run directory) ``circular.png``, the §4.2 circular plot of the test
  representations.

Label-aware geometry is measured with one similarity for every run of a task, so runs
trained with different losses are comparable: Eq. (5) linear with c = 1 for continuous
labels (LASCon Table 3 uses linear similarity), the class indicator for classes.
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from ..data import Split, dataset_from_config, is_regression
from ..evaluation import alignment_uniformity, linear_probe
from ..evaluation.downstream import prediction_head
from ..evaluation.label_geometry import circular_plot, two_view_label_geometry
from ..losses.views import normalize
from .config import TrainConfig
from .modality import ViewAugment
from .trainer import Trainer

CIRCULAR_PNG = "circular.png"


def binarize(labels: Tensor, threshold: float) -> Tensor:
    """Class ``1[y >= threshold]`` (int64, ``[N]``) of continuous ``labels [N]``: the
    binarised labels SupCon trains with on a regression task (LASCon Table 1)."""
    if not isinstance(labels, Tensor) or labels.dim() != 1:
        got = tuple(labels.shape) if isinstance(labels, Tensor) else type(labels).__name__
        raise ValueError(f"labels must be a tensor of shape [N], got {got}")
    if not isinstance(threshold, int | float) or not math.isfinite(threshold):
        raise ValueError(f"threshold must be a finite number, got {threshold!r}")
    return (labels >= threshold).long()


def trained_labels(config: TrainConfig, task: Split, regression: bool) -> Split:
    """``task`` with the labels its loss trains on: binarised at ``binarize_threshold``
    (LASCon Table 1's protocol for SupCon on a continuous label), else as they are. A
    ``ValueError`` when the threshold puts every training sample in one class, or when a
    loss that pairs equal labels (``supcon``, ``lascon`` with the ``indicator``
    similarity) would see continuous labels that are not whole numbers: there its
    positives are the samples that share a value by chance (on Davis, the pairs at the
    pKd floor of 5)."""
    t = config.binarize_threshold
    if t is None:
        equal = config.loss == "supcon" or (
            config.loss == "lascon" and (config.loss_args or {}).get("similarity") == "indicator"
        )
        y = task.y_train
        if regression and equal and y.is_floating_point() and bool((y != y.round()).any()):
            raise ValueError(
                f"loss {config.loss!r} pairs equal labels, and {config.dataset!r} has "
                "continuous labels: set binarize_threshold (SupCon's protocol in LASCon "
                "Table 1)"
            )
        return task
    y_train = binarize(task.y_train, t)
    if y_train.min() == y_train.max():
        raise ValueError(f"binarize_threshold {t} puts every training sample in one class")
    return dataclasses.replace(task, y_train=y_train, y_test=binarize(task.y_test, t))


def labels_matter(config: TrainConfig, label_aware: bool = False) -> bool:
    """Whether a run is label-aware: ``label_aware`` is set (a SimCLR baseline compared
    with SupCon), the framework is ``supervised``, the labels are continuous, or the loss
    sees binarised labels (``binarize_threshold``)."""
    return (
        label_aware
        or config.framework == "supervised"
        or is_regression(config.dataset)
        or config.binarize_threshold is not None
    )


def shared_trainer(config: TrainConfig, label_aware: bool = False) -> type[Trainer]:
    """The shared rule: :class:`LabelAwareTrainer` for label-aware runs
    (:func:`labels_matter`), else :class:`Trainer`."""
    return LabelAwareTrainer if labels_matter(config, label_aware) else Trainer


def check_binarize_threshold(config: TrainConfig, regression: bool) -> None:
    """``binarize_threshold`` applies to the supervised framework on a ``regression``
    dataset only (a ``ValueError`` elsewhere, where nothing would read it)."""
    if config.binarize_threshold is not None and not (
        regression and config.framework == "supervised"
    ):
        raise ValueError(
            "binarize_threshold applies to the supervised framework on a regression "
            f"dataset, got framework {config.framework!r} on {config.dataset!r}"
        )


class LabelAwareTrainer(Trainer):
    """A :class:`Trainer` that also handles continuous labels (see the module docstring)."""

    def __init__(
        self, config: TrainConfig, out: str | Path | None = None, progress: bool = True
    ) -> None:
        self.regression = is_regression(config.dataset)
        check_binarize_threshold(config, self.regression)
        super().__init__(config, out, progress)

    @property
    def epoch_features(self) -> bool:
        """Continuous labels: no kNN, so no features to compute after each epoch."""
        return not self.regression

    def load_data(self) -> Split:
        """The task with continuous labels in :attr:`task`; what the loss trains on (the
        labels binarised at ``binarize_threshold`` for SupCon) is returned."""
        self.task = dataset_from_config(self.config)
        return trained_labels(self.config, self.task, self.regression)

    def build_augment(self) -> ViewAugment:
        """The modality's views; ``aug_types`` is refused on regression data, whose
        views are fixed so that they keep the label."""
        if self.regression and self.config.aug_types is not None:
            raise ValueError(
                f"aug_types does not apply to the regression dataset {self.config.dataset!r} "
                "(its augmentations are fixed so that they keep the label)"
            )
        return super().build_augment()

    def knn(self, train_feats: Tensor, test_feats: Tensor) -> dict[str, float]:
        """kNN accuracy for class labels; nothing for continuous labels."""
        return {} if self.regression else super().knn(train_feats, test_feats)

    def final_metrics(self, train_feats: Tensor, test_feats: Tensor) -> dict[str, Any]:
        """kNN and linear probe (class labels), the downstream head, the encoder's
        geometry and its label geometry (LASCon §4.2)."""
        t, cfg = self.task, self.config
        train_feats, test_feats = train_feats.cpu(), test_feats.cpu()  # sklearn, heads: CPU
        task = "regression" if self.regression else "classification"
        metrics: dict[str, Any] = {}
        if not self.regression:
            metrics.update(self.knn(train_feats, test_feats))
            metrics["linear_accuracy"] = linear_probe(train_feats, t.y_train, test_feats, t.y_test)
        metrics.update(
            prediction_head(train_feats, t.y_train, test_feats, t.y_test, task, seed=cfg.seed)
        )
        gen = torch.Generator().manual_seed(cfg.seed)
        metrics.update(alignment_uniformity(self.encode, t.x_test, self.augment, gen))
        metrics.update(self.label_geometry(torch.Generator().manual_seed(cfg.seed)))
        return {**metrics, "task": task}

    def finish(self) -> dict[str, Any]:
        """Final evaluation (:meth:`final_metrics`); writes ``final.json`` and
        ``circular.png`` when there is a run directory."""
        t, cfg = self.task, self.config
        train_feats, test_feats = self.features()
        final = self.write_final(self.final_metrics(train_feats, test_feats))
        if self.out is not None:
            circular_plot(
                normalize(test_feats.cpu().double()),
                t.y_test,
                self.out / CIRCULAR_PNG,
                f"{cfg.framework}/{cfg.loss} on {cfg.dataset} (test, seed {cfg.seed})",
            )
        return final

    def label_geometry(self, generator: torch.Generator) -> dict[str, float]:
        """LASCon §4.2 alignment / uniformity of two augmented views of the test split."""
        x, y = self.task.x_test, self.task.y_test
        with torch.no_grad():
            z1 = normalize(self.encode(self.augment(x, generator)).cpu().double())
            z2 = normalize(self.encode(self.augment(x, generator)).cpu().double())
        similarity = "linear" if self.regression else "indicator"
        return two_view_label_geometry(z1, z2, y, similarity, 1.0)
