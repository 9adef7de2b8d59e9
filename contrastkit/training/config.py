"""Run configuration: defaults, YAML files and ``key=value`` overrides, validated up front.

Defaults follow MACL's CIFAR-10 recipe (Appendix B.3) where it carries over to CPU-sized
data: Adam, learning rate 1e-3 (× batch/256 above 256), weight decay 1e-6, constant rate,
projection width 128; epochs and queue size are sized for small data and a shared CPU.
Width follows the backbone (ResNets: He et al.'s 64) and lr, its scaling, weight decay,
schedule and warm-up the optimiser (LARS: SimCLR App. B.1's 0.3 × batch/256, 10 warm-up
epochs, cosine decay): :mod:`.defaults`, ``docs/defaults.md``.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from ..data import check_modality, dataset_info
from ..engine import LR_SCALINGS, OPTIMIZERS, PRECISIONS, SCHEDULES, scale_lr
from ..models import BACKBONES
from . import defaults

# where a run's data is and how it executes: set per machine (``contrastkit study --set``),
# never part of a protocol, and free to change when a run resumes; every other field is
ENVIRONMENT_KEYS = (
    *("data_root", "cache_dir", "sts_dev", "senteval", "senteval_jobs"),
    *("device", "threads", "workers", "compile", "channels_last"),
)


# the modalities' checks of their own settings (Modality.check), run by every config
_CHECKS: list[Callable[[TrainConfig], None]] = []


def add_check(check: Callable[[TrainConfig], None]) -> None:
    """Run ``check(config)`` in every config's :meth:`TrainConfig.validate` (after the
    engine's own checks, in the order added); ``register_modality`` adds a modality's."""
    _CHECKS.append(check)


@dataclass
class TrainConfig:
    """Everything that determines a training run (saved into checkpoints and final.json)."""

    framework: str = "simclr"
    loss: str = "ntxent"
    loss_args: dict[str, Any] = field(default_factory=dict)
    dataset: str = "digits"
    # image, signal, tabular, graph or text: checked against the dataset's (the registry's
    # register_kind); None = the dataset's. A check only: it changes nothing a run computes
    modality: str | None = None
    num_samples: int | None = None  # mnist1d: samples generated; image sets: train subset
    data_root: str | None = None  # datasets read by path (images, tu:NAME, davis)
    cache_dir: str | None = None  # imagefolder decode cache (default ~/.cache/contrastkit)
    image_size: int | None = None  # imagefolder: short side resized to S, centre S×S crop
    # imagefolder: decode per batch in DataLoader workers instead of into the cache;
    # None: when the decoded set would exceed 4 GiB (contrastkit.images.imagestream)
    stream: bool | None = None
    workers: int = 2  # DataLoader worker processes of streamed image sets (0: in-process)
    # pre-train on train + the dataset's unlabelled images (STL-10's 100,000); None: yes
    # when the dataset has them (Wang & Isola 2020's STL-10 'train+unlabeled', which CACR
    # App. B.1 follows); kNN / linear evaluation always use the labelled train / test
    unlabeled: bool | None = None
    imbalance: str | None = None  # linear | exponential (CACR §5.2), training split only
    imbalance_ratio: float | None = None  # n_max / n_min; None: C (linear), 100 (exp.)
    backbone: str = "conv"  # conv (the small CNN), resnet18, resnet34, resnet50
    stem: str | None = None  # resnet stem: cifar | imagenet; None: cifar below 64 px
    crop_scale: float | None = None  # image views: min crop area; None: 0.2 / 0.08 (>=64 px)
    # image views: brightness, contrast, saturation, hue strengths and the probability of
    # jittering; None: the recipe's (SimCLR 0.4, 0.4, 0.4, 0.1 with p 0.8; CACR App. B.1's
    # Algorithm 1: 0.4, 0.4, 0.4, 0.4, always applied)
    jitter: list[float] | None = None
    p_jitter: float | None = None
    epochs: int = 20
    batch_size: int = 64
    lr: float | None = None  # None: the optimiser's (.defaults: Adam 1e-3, LARS 0.3)
    # linear_above_256 (lr × batch/256 above 256), linear, sqrt, none (the booleans of older
    # configs: true = linear_above_256, false = none); None: the optimiser's (.defaults)
    lr_scaling: str | None = None
    weight_decay: float | None = None  # None: the optimiser's (.defaults)
    seed: int = 0
    feature_dim: int = 128
    width: int | None = None  # None: the backbone's (.defaults: conv 32, ResNets 64)
    proj_dim: int = 128
    hidden_dim: int | None = None
    aug_types: int | None = None  # None: all five types of the data kind
    # image views: simclr (one recipe for every view) or byol (BYOL's asymmetric pair:
    # blur p 1.0 / 0.1, solarisation p 0 / 0.2; Grill et al. 2020, Table 6)
    aug_recipe: str = "simclr"
    num_views: int | None = None  # multiview framework: V (K = V - 1 positives)
    queue_size: int = 4096
    momentum: float = 0.99
    knn_k: int = 200
    knn_small_k: int = 20
    eval_every: int = 1
    # fractions f of the run (0 < f < 1) at whose epoch round(f·epochs) the final
    # evaluation (linear probe, downstream head, geometry) also runs, into metrics.jsonl:
    # a study judges its metric's convergence on that curve (issue 40: 0.8, 0.9)
    final_eval_at: list[float] = field(default_factory=list)
    # torch threads; 1 by default: on this shared 2-core machine one 25-step epoch of the
    # small CNNs took 0.35 s with 1 thread and 24 s with 2 (oversubscription). None = torch's.
    threads: int | None = 1
    binarize_threshold: float | None = None  # SupCon on regression data: 1[y >= t]
    text_model: str | None = None  # text data: a local transformers folder (None: MiniLM)
    max_length: int = 64  # text data: truncation in tokens (SST sentences: ~19 words)
    pooling: str | None = None  # text data: cls | mean (None: the model's own, else cls)
    mlp_head: bool = False  # text data: SimCSE's training-only MLP head on the pooled output
    dropout: float | None = None  # text data: every dropout rate of the model (None: its own)
    # unlabelled sentences (simcse framework): STS pairs scored every eval_steps batches,
    # the best model kept (SimCSE, Gao et al., 2021: STS-B dev every 125 steps)
    sts_dev: str | None = None
    sts_format: str = "stsb"  # stsb (STS Benchmark columns) | tsv (s1<TAB>s2<TAB>score)
    eval_steps: int | None = None
    # simcse framework: SentEval's downstream/ folder; the selected model is scored on
    # senteval_tasks (comma-separated; None: all 14) after training, into final.json, with
    # the senteval_classifier (sklearn | pytorch: SentEval's Adam one), senteval_jobs at once
    senteval: str | None = None
    senteval_tasks: str | None = None
    senteval_classifier: str = "sklearn"
    senteval_jobs: int = 1
    epoch_steps: int | None = None  # batches per epoch (None: every full batch)
    # davis: epochs of end-to-end fine-tuning of encoder + GraphDTA head after pre-training
    # (LASCon App. D.4: 200); None: only the head on frozen embeddings
    finetune_epochs: int | None = None
    # image data: the linear evaluation on frozen features (contrastkit.evaluation.linear_eval);
    # None = MACL App. B.3's protocol: 100 epochs of SGD at lr 0.02 (momentum 0.9, batch 128);
    # optimizer "lbfgs": full-batch L-BFGS on the pre-computed features instead
    linear_epochs: int | None = None
    linear_lr: float | None = None
    linear_optimizer: str | None = None
    # under torchrun: batch norm over the global batch ("global BN", SimCLR §2.2)
    sync_batchnorm: bool = True
    # shared-encoder frameworks: all views in one batch (BN over V·N), or one view at a
    # time; None = the framework's default (joint for SimCLR, separate for Barlow Twins;
    # separate for text data, whose batches are lists of sentences)
    joint_views: bool | None = None
    # ---- engine (contrastkit.engine): hardware, numerics, optimiser, schedule, logging
    device: str = "auto"  # auto (cuda → mps → cpu), cpu, cuda, cuda:N, mps
    precision: str = "fp32"  # fp32, bf16 (autocast), fp16 (autocast + GradScaler)
    compile: bool = False  # torch.compile the encoder and heads
    # channels_last memory format for image (4-D) inputs; None: on CUDA with 2-D convolutions
    channels_last: bool | None = None
    grad_accum: int = 1  # backward passes (batches) per optimiser step
    clip_grad: float | None = None  # max global gradient L2 norm
    optimizer: str = "adam"  # adam (MACL App. B.3), adamw, sgd, lars (MACL App. B.1)
    sgd_momentum: float = 0.9  # sgd/lars momentum (CACR App. B.1; SimCLR's LARS)
    nesterov: bool = False
    schedule: str | None = None  # constant, warmup_cosine, step, linear; None: optimiser's
    warmup_epochs: float | None = None  # warmup_cosine; None: LARS 10 (.defaults), else 0
    lr_milestones: list[int] = field(default_factory=list)  # step (CACR: 155, 170, 185)
    lr_gamma: float = 0.1  # step: factor per milestone (CACR App. B.1: 0.1)
    save_every: int | None = None  # keep checkpoint_epochNNNN.pt every this many epochs
    tensorboard: bool = False  # TensorBoard event files in the run directory
    online_probe: bool = False  # linear classifier on detached features, trained alongside

    def __post_init__(self) -> None:
        if isinstance(self.lr_scaling, bool):  # configs written before lr_scaling was a rule
            self.lr_scaling = "linear_above_256" if self.lr_scaling else "none"
        if isinstance(self.lr_milestones, tuple):
            self.lr_milestones = list(self.lr_milestones)
        if isinstance(self.jitter, tuple):
            self.jitter = list(self.jitter)
        if isinstance(self.final_eval_at, tuple):
            self.final_eval_at = list(self.final_eval_at)
        for name, default in defaults.resolve(self.to_dict()).items():
            setattr(self, name, default.value)
        self.validate()
        if self.joint_views is None and dataset_info(self.dataset).modality == "text":
            self.joint_views = False  # sentence lists are encoded view by view (text.trainer)

    def validate(self) -> None:
        """Raise ``ValueError`` naming the first bad field."""
        check_modality(self.dataset, self.modality)  # ValueError naming the datasets
        self._validate_choices()  # first: an unknown optimiser leaves its defaults unset
        if self.backbone not in BACKBONES:
            known = ", ".join(BACKBONES)
            raise ValueError(f"unknown backbone {self.backbone!r}; available: {known}")
        if self.stem not in (None, "cifar", "imagenet"):
            raise ValueError(f"stem must be cifar, imagenet or null, got {self.stem!r}")
        if not isinstance(self.workers, int) or isinstance(self.workers, bool) or self.workers < 0:
            raise ValueError(f"workers must be an integer >= 0, got {self.workers!r}")
        for name in ("stream", "unlabeled"):
            if getattr(self, name) not in (None, True, False):
                raise ValueError(f"{name} must be true, false or null, got {getattr(self, name)!r}")
        if self.imbalance is not None and self.imbalance not in ("linear", "exponential"):
            raise ValueError(
                f"imbalance must be linear, exponential or null, got {self.imbalance!r}"
            )
        for name in (
            *("epochs", "batch_size", "feature_dim", "width", "proj_dim", "queue_size"),
            *("knn_k", "knn_small_k", "eval_every", "max_length", "senteval_jobs"),
        ):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if self.batch_size < 2:
            raise ValueError(
                "batch_size must be >= 2 (contrastive losses need negatives), "
                f"got {self.batch_size}"
            )
        for name in ("lr", "weight_decay", "momentum"):
            value = getattr(self, name)
            if not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
                raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
        if (
            not isinstance(self.seed, int)
            or isinstance(self.seed, bool)
            or not (0 <= self.seed < 2**32)
        ):
            raise ValueError(f"seed must be an integer in [0, 2**32), got {self.seed!r}")
        if self.lr <= 0:
            raise ValueError(f"lr must be > 0, got {self.lr}")
        for check in _CHECKS:  # each modality's settings (images, text, graphs...)
            check(self)
        self.final_eval_epochs()
        thr = self.binarize_threshold
        if thr is not None and (
            not isinstance(thr, int | float) or isinstance(thr, bool) or not math.isfinite(thr)
        ):
            raise ValueError(f"binarize_threshold must be a finite number or null, got {thr!r}")
        for name in (
            *("sync_batchnorm", "compile", "nesterov", "tensorboard"),
            *("online_probe", "mlp_head"),
        ):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name} must be true or false, got {getattr(self, name)!r}")
        self._validate_engine()
        for name in ("joint_views", "channels_last"):
            if getattr(self, name) is not None and not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name} must be true, false or null, got {getattr(self, name)!r}")
        if not isinstance(self.loss_args, dict):
            raise ValueError(f"loss_args must be a mapping, got {self.loss_args!r}")
        if self.data_root is not None and not isinstance(self.data_root, str):
            raise ValueError(f"data_root must be a path or null, got {self.data_root!r}")
        for name in (
            *("num_samples", "hidden_dim", "aug_types", "num_views", "threads", "save_every"),
            *("image_size", "linear_epochs", "eval_steps", "epoch_steps"),
        ):
            value = getattr(self, name)
            if value is not None and (
                not isinstance(value, int) or isinstance(value, bool) or value < 1
            ):
                raise ValueError(f"{name} must be a positive integer or null, got {value!r}")

    def _validate_choices(self) -> None:
        choices = {
            "optimizer": OPTIMIZERS,
            "lr_scaling": LR_SCALINGS,
            "precision": tuple(PRECISIONS),
            "schedule": SCHEDULES,
        }
        for name, allowed in choices.items():
            if getattr(self, name) not in allowed:
                raise ValueError(
                    f"{name} must be one of {', '.join(allowed)}, got {getattr(self, name)!r}"
                )

    def _validate_engine(self) -> None:
        if not isinstance(self.device, str) or not (
            self.device in ("auto", "cpu", "cuda", "mps")
            or (self.device.startswith("cuda:") and self.device[5:].isdigit())
        ):
            raise ValueError(f"device must be auto, cpu, cuda, cuda:N or mps, got {self.device!r}")
        if (
            not isinstance(self.grad_accum, int)
            or isinstance(self.grad_accum, bool)
            or (self.grad_accum < 1)
        ):
            raise ValueError(f"grad_accum must be a positive integer, got {self.grad_accum!r}")
        clip = self.clip_grad
        if clip is not None and (
            not isinstance(clip, int | float)
            or isinstance(clip, bool)
            or not math.isfinite(clip)
            or clip <= 0
        ):
            raise ValueError(f"clip_grad must be a finite number > 0 or null, got {clip!r}")
        for name, ok, text in (
            ("sgd_momentum", lambda v: 0 <= v < 1, "[0, 1)"),
            ("lr_gamma", lambda v: 0 < v <= 1, "(0, 1]"),
        ):
            value = getattr(self, name)
            if not isinstance(value, int | float) or isinstance(value, bool) or not ok(value):
                raise ValueError(f"{name} must be a number in {text}, got {value!r}")
        warm = self.warmup_epochs
        if (
            not isinstance(warm, int | float)
            or isinstance(warm, bool)
            or not 0 <= warm < self.epochs
        ):
            raise ValueError(
                f"warmup_epochs must be a number in [0, epochs = {self.epochs}), got {warm!r}"
            )
        marks = self.lr_milestones
        if (
            not isinstance(marks, list)
            or not all(isinstance(m, int) and not isinstance(m, bool) and m >= 1 for m in marks)
            or marks != sorted(set(marks))
        ):
            raise ValueError(
                f"lr_milestones must be increasing positive epoch numbers, got {marks!r}"
            )
        if warm and self.schedule != "warmup_cosine":
            raise ValueError(
                f"warmup_epochs applies to schedule 'warmup_cosine', not {self.schedule!r}"
            )
        if self.schedule == "step" and not marks:
            raise ValueError("schedule 'step' needs lr_milestones (e.g. [155, 170, 185])")

    def final_eval_epochs(self) -> list[int]:
        """The epochs before the last at which the final evaluation also runs
        (``final_eval_at``); ``ValueError`` for a fraction outside (0, 1)."""
        at = self.final_eval_at
        if not isinstance(at, list | tuple) or not all(
            isinstance(f, int | float) and not isinstance(f, bool) and 0 < f < 1 for f in at
        ):
            raise ValueError(f"final_eval_at must be a list of fractions in (0, 1), got {at!r}")
        if at and self.framework == "simcse":
            raise ValueError("final_eval_at does not apply to framework simcse (see eval_steps)")
        return sorted({max(1, round(f * self.epochs)) for f in at} - {self.epochs})

    @property
    def effective_lr(self) -> float:
        """``lr`` scaled for the batch of one optimiser step (``batch_size × grad_accum``)
        by the ``lr_scaling`` rule (:func:`contrastkit.engine.scale_lr`)."""
        return scale_lr(self.lr, self.batch_size * self.grad_accum, self.lr_scaling)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def differences(self, saved: object, ignore: Iterable[str] = ()) -> list[str]:
        """Sorted keys whose values differ between ``saved`` (the config mapping an earlier
        run wrote) and this config, ``ignore`` aside.

        ``saved`` goes through :meth:`from_dict` first, so keys added since it was written
        take their defaults and older spellings are normalised (a run written before a
        key existed equals a run with that key's default); a ``saved`` that is not a
        valid config differs in every key."""
        current = self.to_dict()
        skip = set(ignore)
        try:
            filled = TrainConfig.from_dict(dict(saved)).to_dict()  # type: ignore[call-overload]
        except (TypeError, ValueError):
            return sorted(k for k in current if k not in skip)
        return sorted(k for k in current if k not in skip and filled[k] != current[k])

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> TrainConfig:
        """Build from a mapping; unknown keys raise ``ValueError`` listing the known ones."""
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(
                f"unknown config key(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}"
            )
        return cls(**values)
