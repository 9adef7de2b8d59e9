"""The text modality: sentence datasets on the shared loop, encoded by a pretrained
transformer.

Its trainers build their encoder (:func:`~.trainer.text_encoder`) and views themselves:
:class:`~.simcse.SimCSETrainer` for the ``simcse`` framework (dropout views, STS dev
selection, SentEval), :class:`~.trainer.SentenceTrainer` (EDA views, LASCon's downstream
head) for the rest. :func:`check` refuses the sentence settings on other data and checks
their values.

The values of ``pooling``, ``sts_format`` and ``senteval_classifier`` are this modality's
names (:data:`.encoder.POOLINGS`, :data:`.data.STS_FORMATS`,
:data:`.senteval_names.CLASSIFIERS`), so :func:`check` checks them rather than their
declarations in :mod:`contrastkit.training` (which must not import the text package; the
import contracts in ``pyproject.toml``). Every modality's check runs in every
:meth:`TrainConfig.validate <contrastkit.training.TrainConfig.validate>`, so a bad value is
refused whatever the dataset.
"""

from __future__ import annotations

import dataclasses

from ..data import dataset_info
from ..training import Metric, Modality, TrainConfig, Trainer
from ..training.settings import listed
from .data import STS_FORMATS
from .encoder import DEFAULT_MODEL, DEFAULT_MODEL_WHEEL, DEFAULT_POOLING, POOLINGS
from .senteval_names import CLASSIFIERS, TASKS
from .simcse_trainer import SimCSETrainer
from .trainer import SentenceTrainer


def text_trainer(config: TrainConfig, label_aware: bool = False) -> type[Trainer]:
    """:class:`SimCSETrainer` for the simcse framework, else :class:`SentenceTrainer`
    (label-aware in any case)."""
    return SimCSETrainer if config.framework == "simcse" else SentenceTrainer


def check(config: TrainConfig) -> None:
    """The sentence settings: text data only, the simcse framework's only with it, and
    their values (``ValueError`` naming the first bad one)."""
    cfg = config
    text = dataset_info(cfg.dataset).modality == "text"
    for name in ("text_model", "pooling", "mlp_head", "dropout", "sts_dev", "eval_steps"):
        if getattr(cfg, name) not in (None, False) and not text:
            raise ValueError(
                f"{name} applies to text datasets (sst5, sentences), not {cfg.dataset!r}"
            )
    for name in ("sts_dev", "eval_steps", "senteval", "senteval_tasks"):
        if getattr(cfg, name) is not None and cfg.framework != "simcse":
            raise ValueError(f"{name} applies to framework simcse, not {cfg.framework!r}")
    if cfg.senteval_classifier not in CLASSIFIERS:
        raise ValueError(
            f"senteval_classifier must be {listed(CLASSIFIERS)}, got {cfg.senteval_classifier!r}"
        )
    defaults = {f.name: f.default for f in dataclasses.fields(cfg)}
    for name in ("senteval_tasks", "senteval_classifier", "senteval_jobs"):
        if getattr(cfg, name) != defaults[name] and cfg.senteval is None:
            raise ValueError(f"{name} needs senteval (SentEval's downstream/ folder)")
    if cfg.pooling is not None and cfg.pooling not in POOLINGS:
        raise ValueError(f"pooling must be {listed((*POOLINGS, 'null'))}, got {cfg.pooling!r}")
    if cfg.dropout is not None and not (
        isinstance(cfg.dropout, int | float) and 0 <= cfg.dropout < 1
    ):
        raise ValueError(f"dropout must be a number in [0, 1) or null, got {cfg.dropout!r}")
    if cfg.sts_format not in STS_FORMATS:
        raise ValueError(f"sts_format must be {listed(STS_FORMATS)}, got {cfg.sts_format!r}")
    if cfg.eval_steps is not None and cfg.sts_dev is None:
        raise ValueError("eval_steps needs sts_dev (the STS pairs to evaluate)")


# what SimCSETrainer adds to final.json: the STS-B dev Spearman before training, at the
# last and at the best evaluation, and SentEval's scores of the selected model
TEXT_METRICS = (
    Metric("sts_dev_spearman_before", "STS dev before"),
    Metric("sts_dev_spearman_last"),
    Metric("sts_dev_spearman_best", "STS dev best"),
    Metric("best_step"),
    Metric("steps"),
    Metric("senteval_sts_avg"),
    Metric("senteval_transfer_avg"),
    Metric("senteval_sts_avg_tasks"),  # how many tasks each average holds (the papers': 7)
    Metric("senteval_transfer_avg_tasks"),
    Metric(r"senteval_[A-Za-z0-9]+", pattern=True),  # one task's score
)
# what the text modality adds to the --help of the config settings it reads
TEXT_NOTES = (
    ("text_model", f"default {DEFAULT_MODEL}, from the {DEFAULT_MODEL_WHEEL} wheel"),
    ("pooling", f"{listed(POOLINGS)}; default the model folder's, else {DEFAULT_POOLING}"),
    ("dropout", "default the model's own"),
    ("sts_format", f"{listed(STS_FORMATS)}; stsb: the STS Benchmark's columns"),
    ("senteval_tasks", f"default all {len(TASKS)}"),
    ("senteval_classifier", listed(CLASSIFIERS)),
)
TEXT = Modality(
    "text",
    kinds=("text",),  # sentences (.datasets.Sentences), a pretrained transformer
    trainer=text_trainer,
    check=check,
    metrics=TEXT_METRICS,
    # SimCSE's STS-B dev curve is scored once per epoch of a few epochs, and a line
    # through 2-3 of its noisy points would call anything flat
    curve_points=(("sts_dev_spearman", 4),),
    unset=(("joint_views", False),),  # sentence lists are encoded view by view (.trainer)
    notes=TEXT_NOTES,
    description="sentences: a pretrained transformer, EDA or dropout views",
)
