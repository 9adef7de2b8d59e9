"""The trainer's image hooks: the papers' evaluation protocol and analyses per run.

:class:`ImageTrainer` is the :class:`~contrastkit.training.Trainer` of datasets of kind
``"image"`` (chosen by the image modality, :mod:`contrastkit.images.modality`); the loop is
the Trainer's. It adds

* at every evaluation epoch (``knn`` hook): CACR's conditional entropy ``H(X⁻|X)`` of the
  repulsion weights over mini-batches of augmented training views embedded as the loss
  sees them (projection head when the framework has one), with its maximum ``log(M-1)``
  (CACR Fig. 3/5; :func:`~contrastkit.images.analyses.epoch_repulsion_entropy`);
* at the end (``finish`` hook): linear evaluation with top-1 / top-5
  (:func:`~contrastkit.evaluation.linear_eval`, MACL App. B.3's SGD protocol, with
  ``ImageTrainer.linear_epochs`` epochs), and with a run directory
  ``similarities.png`` (AMCL Fig. 1/6: positive / negative pair cosine histograms of head
  and backbone features on the test split, overlaps in ``final.json``) and ``map2d.png``
  (a 2-D map of test features, MACL Fig. 4; t-SNE unless :attr:`ImageTrainer.map_method`
  is ``"umap"`` / ``"auto"``), ``cacr_weights.png`` (CACR Fig. 4: one test query, four more
  views of it with their attraction weights π⁺ and the negatives of largest repulsion weight
  π⁻, t⁺ = 1, t⁻ = 2), and AMCL Table 4's label-fraction probe (``probe_{n}_per_class``).

Analyses use at most :attr:`ImageTrainer.analysis_samples` samples (seeded, fixed).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from ..evaluation import label_fraction_probe, linear_eval
from ..evaluation.linear_eval import EPOCHS as LINEAR_EPOCHS
from ..training import Trainer, ViewAugment
from .analyses import (
    embed_2d,
    epoch_repulsion_entropy,
    pair_similarities,
    plot_2d_map,
    plot_query_weights,
    plot_similarity_histograms,
    query_weights,
    similarity_histograms,
)
from .image_augment import view_augments

SIMILARITIES_PNG = "similarities.png"
MAP_PNG = "map2d.png"
WEIGHTS_PNG = "cacr_weights.png"


class ImageTrainer(Trainer):
    """A :class:`Trainer` with the image protocol's evaluation (see the module docstring)."""

    linear_epochs: int = LINEAR_EPOCHS  # MACL App. B.3
    label_fractions: tuple[int, ...] = (10, 50, 100, 500)  # AMCL Table 4 (labels per class)
    analysis_samples: int = 2048
    entropy_t_neg: float = 2.0  # CACR's t⁻ on CIFAR-10 (App. B)
    # t-SNE: umap-learn's numba compilation alone took ~1 min on this CPU; "auto" = UMAP
    map_method: str = "tsne"

    def build_view_augments(self) -> list[ViewAugment]:
        """The ``aug_recipe``'s view generators (:func:`~.image_augment.view_augments`);
        the analyses keep :attr:`augment`, the SimCLR recipe."""
        cfg = self.config
        side = min(self.data.input_shape[1:])
        return list(
            view_augments(
                cfg.aug_recipe, side, cfg.aug_types, cfg.crop_scale, cfg.jitter, cfg.p_jitter,
                backend=cfg.aug_backend,
            )
        )  # fmt: skip

    def linear_protocol(self) -> dict[str, Any]:
        """The linear evaluation's settings: the config's ``linear_*`` keys over MACL App.
        B.3's defaults (:attr:`linear_epochs` epochs of SGD at :func:`linear_eval`'s lr)."""
        cfg = self.config
        out: dict[str, Any] = {"epochs": cfg.linear_epochs or self.linear_epochs}
        if cfg.linear_lr is not None:
            out["lr"] = cfg.linear_lr
        if cfg.linear_optimizer is not None:
            out["optimizer"] = cfg.linear_optimizer
        return out

    def _subset(self, x: Tensor, tag: int) -> Tensor:
        n = min(self.analysis_samples, x.shape[0])
        gen = torch.Generator().manual_seed(self.config.seed * 7919 + tag)
        return x[torch.randperm(x.shape[0], generator=gen)[:n].sort().values]

    def _head_embed(self, x: Tensor) -> Tensor:
        return self.model.head(self.model.encoder(x))

    @torch.no_grad()
    def _eval_mode(self, fn: Any, *args: Any) -> Any:
        was = self.model.training
        self.model.eval()
        try:
            return fn(*args)
        finally:
            self.model.train(was)

    def knn(self, train_feats: Tensor, test_feats: Tensor) -> dict[str, float]:
        out = super().knn(train_feats, test_feats)
        x = self._subset(self.data.x_train, 1)
        m = min(512, self.config.batch_size, x.shape[0])
        if m >= 3:
            gen = torch.Generator().manual_seed(self.config.seed)
            out.update(
                self._eval_mode(
                    epoch_repulsion_entropy,
                    self._head_embed,
                    x,
                    self.augment,
                    gen,
                    m,
                    self.entropy_t_neg,
                )
            )
        return out

    def final_metrics(self, train_feats: Tensor, test_feats: Tensor) -> dict[str, Any]:
        final = super().final_metrics(train_feats, test_feats)
        d, cfg = self.data, self.config
        final.update(
            linear_eval(
                train_feats,
                d.y_train,
                test_feats,
                d.y_test,
                **self.linear_protocol(),
                seed=cfg.seed,
            )
        )
        final.update(
            label_fraction_probe(
                train_feats, d.y_train, test_feats, d.y_test, self.label_fractions, (cfg.seed,)
            )
        )
        x = self._subset(d.x_test, 2)
        panels = {}
        for name, embed in (("head", self._head_embed), ("backbone", self.model.encoder)):
            gen = torch.Generator().manual_seed(cfg.seed)
            panels[name] = self._eval_mode(pair_similarities, embed, x, self.augment, gen)
            hist = similarity_histograms(*panels[name])
            final[f"similarity_overlap_{name}"] = hist["overlap"][0]
            final[f"positive_cosine_mean_{name}"] = float(panels[name][0].mean())
            final[f"negative_cosine_mean_{name}"] = float(panels[name][1].mean())
        if self.out is not None:
            plot_similarity_histograms(panels, self.out / SIMILARITIES_PNG)
            idx = torch.randperm(d.x_test.shape[0], generator=torch.Generator().manual_seed(2))
            idx = idx[: min(self.analysis_samples, d.x_test.shape[0])]
            feats = test_feats[idx.to(test_feats.device)]
            coords, method = embed_2d(feats, self.map_method, seed=cfg.seed)
            title = f"{cfg.framework}/{cfg.loss} on {cfg.dataset}: test features ({method})"
            plot_2d_map(coords, d.y_test[idx], self.out / MAP_PNG, title)
            final["map2d_method"] = method
            self._plot_query_weights(x)
        return final

    def _plot_query_weights(self, x: Tensor, positives: int = 4) -> None:
        """CACR Fig. 4 for the first sample of ``x``: ``positives`` further views of it
        against one view of each other sample, weights from the head embeddings."""
        gen = torch.Generator().manual_seed(self.config.seed)
        views = self.augment(x[:1].expand(positives + 1, *x.shape[1:]), gen)
        others = self.augment(x[1:], gen)
        z = self._eval_mode(self._head_embed, torch.cat([views, others]))
        w_pos, w_neg = query_weights(
            z[0], z[1 : positives + 1], z[positives + 1 :], 1.0, self.entropy_t_neg
        )
        plot_query_weights(views[0], views[1:], w_pos, others, w_neg, self.out / WEIGHTS_PNG)
