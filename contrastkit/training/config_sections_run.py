"""The optimisation, engine, evaluation and output sections of
:class:`~contrastkit.training.TrainConfig`, declared as in :mod:`.config_sections` (which
holds data, model and loss).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ..engine import COMPILE_MODES, DEVICES, LR_SCALINGS, OPTIMIZERS, PRECISIONS, SCHEDULES
from .defaults import WARMUP_RULE, by_optimizer
from .settings import (
    boolean,
    boolean_or_null,
    comma_separated,
    finite_non_negative,
    listed,
    number_in,
    positive_int,
    positive_int_or_null,
)
from .settings import setting as S


def _seed(name: str, value: Any) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < 2**32:
        raise ValueError(f"{name} must be an integer in [0, 2**32), got {value!r}")


def _lr(name: str, value: Any) -> None:
    finite_non_negative(name, value)
    if value <= 0:
        raise ValueError(f"{name} must be > 0, got {value}")


def _device(name: str, value: Any) -> None:
    cuda_n = isinstance(value, str) and value.startswith("cuda:") and value[5:].isdigit()
    if not (value in DEVICES or cuda_n) or value == "cuda:N":
        raise ValueError(f"{name} must be {listed(DEVICES)}, got {value!r}")


def _clip(name: str, value: Any) -> None:
    if value is not None and (
        not isinstance(value, int | float)
        or isinstance(value, bool)
        or not math.isfinite(value)
        or value <= 0
    ):
        raise ValueError(f"{name} must be a finite number > 0 or null, got {value!r}")


def _milestones(name: str, value: Any) -> None:
    ok = isinstance(value, list) and all(
        isinstance(m, int) and not isinstance(m, bool) and m >= 1 for m in value
    )
    if not ok or value != sorted(set(value)):
        raise ValueError(f"{name} must be increasing positive epoch numbers, got {value!r}")


@dataclass
class OptimisationSection:
    """Settings of the optimisation section: epochs, batch, optimiser and schedule."""

    epochs: int = S(20, section="optimisation", check=positive_int, help="training epochs")
    batch_size: int = S(64, section="optimisation", check=positive_int, help="batch size N (>= 2)")
    epoch_steps: int | None = S(
        None,
        section="optimisation",
        check=positive_int_or_null,
        help="batches per epoch (default: every full batch)",
    )
    lr: float | None = S(
        None,
        section="optimisation",
        check=_lr,
        source="MACL App. B.3 (Adam 1e-3); SimCLR App. B.1 (LARS 0.3); docs/defaults.md",
        help=(
            "base learning rate, scaled with the batch by --lr-scaling (unset: the optimiser's, "
            f"{by_optimizer('lr')}; lars under --lr-scaling sqrt 1.2; docs/defaults.md)"
        ),
    )
    weight_decay: float | None = S(
        None,
        section="optimisation",
        check=finite_non_negative,
        source="MACL App. B.3 (1e-6); CACR App. B.1 (sgd 1e-4)",
        help=(
            "weight decay, LARS: not on biases and norms (unset: the optimiser's, "
            f"{by_optimizer('weight_decay')})"
        ),
    )
    grad_accum: int = S(
        1,
        section="optimisation",
        check=positive_int,
        help="batches per optimiser step (gradient accumulation: the mean of their gradients;"
        " an epoch's last step takes what is left of it)",
    )
    clip_grad: float | None = S(
        None,
        section="optimisation",
        check=_clip,
        help="clip the global gradient L2 norm to this value",
    )
    optimizer: str = S(
        "adam",
        section="optimisation",
        choices=OPTIMIZERS,
        source="MACL App. B.3 (adam), App. B.1 (lars)",
        help="{choices} ({default})",
    )
    sgd_momentum: float = S(
        0.9,
        section="optimisation",
        check=number_in(0, 1, "[0, 1)"),
        source="CACR App. B.1",
        help="sgd/lars momentum ({default})",
    )
    nesterov: bool = S(
        False, section="optimisation", check=boolean, help="Nesterov momentum (sgd, lars)"
    )
    schedule: str | None = S(
        None,
        section="optimisation",
        choices=SCHEDULES,
        help=f"{{choices}}, per step (unset: {by_optimizer('schedule')})",
    )
    warmup_epochs: float | None = S(
        None,
        section="optimisation",
        source="SimCLR App. B.1 (LARS: 10)",
        help=f"warmup_cosine: linear warm-up epochs (unset: {WARMUP_RULE})",
    )
    lr_milestones: list[int] = S(
        section="optimisation",
        factory=list,
        check=_milestones,
        parse=comma_separated(int, "--lr-milestones must be comma-separated epochs"),
        source="CACR App. B.1 (155, 170, 185)",
        help="step: comma-separated epochs, e.g. 155,170,185",
    )
    lr_gamma: float = S(
        0.1,
        section="optimisation",
        check=number_in(0, 1, "(0, 1]"),
        source="CACR App. B.1",
        help="step: learning-rate factor at each milestone ({default})",
    )
    lr_scaling: str | None = S(
        None,
        section="optimisation",
        choices=LR_SCALINGS,
        help=(
            "lr x a function of the batch N: {choices}; linear_above_256 is N/256 for N > 256 "
            f"(unset: {by_optimizer('lr_scaling')})"
        ),
    )
    seed: int = S(
        0,
        section="optimisation",
        check=_seed,
        help="random seed (model init, shuffling, augmentations)",
    )
    finetune_epochs: int | None = S(
        None,
        section="optimisation",
        source="LASCon App. D.4 (200)",
        help="davis: fine-tune encoder + GraphDTA head end to end this many epochs (paper: 200)",
    )


@dataclass
class EngineSection:
    """Settings of the engine section: hardware, numerics, distributed training
    (:mod:`contrastkit.engine`)."""

    threads: int | None = S(
        1,
        section="engine",
        check=positive_int_or_null,
        environment=True,
        source=(
            "measured: one 25-step epoch of the small CNNs took 0.35 s with 1 thread and 24 s with "
            "2 on a shared 2-core machine"
        ),
        help="torch threads (default {default}: small CNNs on shared CPUs; null: torch's)",
    )
    device: str = S(
        "auto",
        section="engine",
        check=_device,
        environment=True,
        help="{choices}",
        choices={name: "cuda, then mps, then cpu" if name == "auto" else "" for name in DEVICES},
    )
    precision: str = S(
        "fp32",
        section="engine",
        choices=tuple(PRECISIONS),
        help="{choices}: half precisions under autocast, fp16 with a GradScaler ({default})",
    )
    compile: bool = S(
        False,
        section="engine",
        check=boolean,
        environment=True,
        help="torch.compile the encoder, heads and image views",
    )
    compile_mode: str = S(
        "default",
        section="engine",
        choices=COMPILE_MODES,
        environment=True,
        source="torch.compile's modes",
        help="torch.compile mode with --compile: {choices}; reduce-overhead: CUDA graphs",
    )
    channels_last: bool | None = S(
        None,
        section="engine",
        check=boolean_or_null,
        environment=True,
        source="H200: bf16 ResNet-18 step 1.36x (docs/results/performance-log.md, 2nd GPU run)",
        help=(
            "channels_last memory format for image models (default: on for CUDA and a convolutional"
            " encoder)"
        ),
    )
    aug_backend: str = S(
        "auto",
        section="engine",
        choices={
            "auto": "triton on a CUDA GPU of compute capability >= 7.0 when installed, else torch",
            "torch": "",
            "triton": "one fused kernel; CUDA",
        },
        environment=True,
        source=(
            "H200: bf16 SimCLR views' host time 3.9 -> 2.4 ms"
            " (docs/results/gpu/h200-2026-11-28-train.txt)"
        ),
        help="image views' colour jitter and grayscale: {choices}",
    )
    sync_batchnorm: bool = S(
        True,
        section="engine",
        check=boolean,
        source="SimCLR §2.2 (global BN)",
        help="under torchrun: batch norm over the global batch (--no-sync-batchnorm: per rank)",
    )


@dataclass
class EvaluationSection:
    """Settings of the evaluation section: kNN, linear probe, STS and SentEval scoring."""

    knn_k: int = S(
        200,
        section="evaluation",
        check=positive_int,
        help="k of the weighted kNN evaluation ({default})",
    )
    knn_small_k: int = S(
        20, section="evaluation", check=positive_int, help="the small-k kNN reading ({default})"
    )
    eval_every: int = S(
        1, section="evaluation", check=positive_int, help="kNN evaluation every this many epochs"
    )
    final_eval_at: list[float] = S(
        section="evaluation",
        factory=list,
        parse=comma_separated(float, "--final-eval-at must be comma-separated fractions"),
        help=(
            "fractions f (0 < f < 1) of the run at whose epoch the final evaluation also runs (a "
            "study's convergence check, e.g. 0.8,0.9)"
        ),
    )
    linear_epochs: int | None = S(
        None,
        section="evaluation",
        check=positive_int_or_null,
        source="MACL App. B.3 (100 epochs of SGD, lr 0.02)",
        help="image data: linear evaluation epochs",
    )
    linear_lr: float | None = S(
        None, section="evaluation", help="image data: linear evaluation SGD lr"
    )
    linear_optimizer: str | None = S(
        None,
        section="evaluation",
        help="image data: linear evaluation optimiser, on pre-computed features",
    )
    sts_dev: str | None = S(
        None,
        section="evaluation",
        environment=True,
        source="SimCSE's run_unsup_example.sh (Gao et al., 2021): STS-B dev every 125 steps",
        help="simcse framework: STS pairs for evaluation and selection",
    )
    # sts_format and senteval_classifier: their names are the text modality's
    # (text.data.STS_FORMATS, text.senteval_names.CLASSIFIERS), so its config check
    # (text.modality.check, run by every validate) checks them: training must not import text
    sts_format: str = S("stsb", section="evaluation", help="the STS pairs' file format ({default})")
    eval_steps: int | None = S(
        None,
        section="evaluation",
        check=positive_int_or_null,
        help="simcse framework: score --sts-dev every K batches",
    )
    senteval: str | None = S(
        None,
        section="evaluation",
        environment=True,
        help="simcse framework: score the best model on SentEval DIR",
    )
    senteval_tasks: str | None = S(
        None,
        section="evaluation",
        help="simcse framework: comma-separated SentEval tasks",
    )
    senteval_classifier: str = S(
        "sklearn",
        section="evaluation",
        help="simcse framework: SentEval's transfer classifier ({default})",
    )
    senteval_jobs: int = S(
        1,
        section="evaluation",
        check=positive_int,
        environment=True,
        help="simcse framework: SentEval classifiers at once",
    )


@dataclass
class OutputSection:
    """Settings of the output section: checkpoints and logs."""

    save_every: int | None = S(
        None,
        section="output",
        check=positive_int_or_null,
        help="also keep checkpoint_epochNNNN.pt every K epochs",
    )
    tensorboard: bool = S(
        False,
        section="output",
        check=boolean,
        help="write TensorBoard event files into the run directory",
    )
    online_probe: bool = S(
        False,
        section="evaluation",
        check=boolean,
        help="train a linear probe on detached features alongside (per-epoch logs)",
    )
