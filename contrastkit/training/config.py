"""Run configuration: defaults, YAML files and ``key=value`` overrides, validated up front.

Defaults follow MACL's CIFAR-10 recipe (Appendix B.3) where it carries over to CPU-sized
data: Adam, learning rate 1e-3, weight decay 1e-6, projection width 128; everything else
(encoder width, epochs, queue size) is sized for small data and a shared CPU.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ..data import DATASETS
from ..graphs import is_graph_dataset


@dataclass
class TrainConfig:
    """Everything that determines a training run (saved into checkpoints and final.json)."""

    framework: str = "simclr"
    loss: str = "ntxent"
    loss_args: dict[str, Any] = field(default_factory=dict)
    dataset: str = "digits"
    num_samples: int | None = None  # mnist1d only: total generated samples (20,000)
    data_root: str | None = None  # folder of datasets read by path (tu:NAME, davis)
    epochs: int = 20
    batch_size: int = 64
    lr: float = 1e-3  # MACL App. B.3 (Adam, CIFAR-10)
    lr_scaling: bool = True  # MACL App. B.3: lr × batch/256 for batches above 256
    weight_decay: float = 1e-6  # MACL App. B.3
    seed: int = 0
    feature_dim: int = 128
    width: int = 32
    proj_dim: int = 128
    hidden_dim: int | None = None
    aug_types: int | None = None  # None: all five types of the data kind
    num_views: int | None = None  # multiview framework: V (K = V - 1 positives)
    queue_size: int = 4096
    momentum: float = 0.99
    knn_k: int = 200
    knn_small_k: int = 20
    eval_every: int = 1
    # torch threads; 1 by default: on this shared 2-core machine one 25-step epoch of the
    # small CNNs took 0.35 s with 1 thread and 24 s with 2 (oversubscription). None = torch's.
    threads: int | None = 1
    binarize_threshold: float | None = None  # SupCon on regression data: 1[y >= t]
    # under torchrun: batch norm over the global batch ("global BN", SimCLR §2.2)
    sync_batchnorm: bool = True
    # shared-encoder frameworks: all views in one batch (BN over V·N), or one view at a
    # time; None = the framework's default (joint for SimCLR, separate for Barlow Twins)
    joint_views: bool | None = None

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        """Raise ``ValueError`` naming the first bad field."""
        if self.dataset not in DATASETS and not is_graph_dataset(self.dataset):
            raise ValueError(f"unknown dataset {self.dataset!r}; available: {', '.join(DATASETS)}")
        for name in (
            "epochs",
            "batch_size",
            "feature_dim",
            "width",
            "proj_dim",
            "queue_size",
            "knn_k",
            "knn_small_k",
            "eval_every",
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
        if self.lr <= 0:
            raise ValueError(f"lr must be > 0, got {self.lr}")
        thr = self.binarize_threshold
        if thr is not None and (
            not isinstance(thr, int | float) or isinstance(thr, bool) or not math.isfinite(thr)
        ):
            raise ValueError(f"binarize_threshold must be a finite number or null, got {thr!r}")
        for name in ("sync_batchnorm", "lr_scaling"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name} must be true or false, got {getattr(self, name)!r}")
        if self.joint_views is not None and not isinstance(self.joint_views, bool):
            raise ValueError(f"joint_views must be true, false or null, got {self.joint_views!r}")
        if not isinstance(self.loss_args, dict):
            raise ValueError(f"loss_args must be a mapping, got {self.loss_args!r}")
        if self.data_root is not None and not isinstance(self.data_root, str):
            raise ValueError(f"data_root must be a path or null, got {self.data_root!r}")
        for name in ("num_samples", "hidden_dim", "aug_types", "num_views", "threads"):
            value = getattr(self, name)
            if value is not None and (
                not isinstance(value, int) or isinstance(value, bool) or value < 1
            ):
                raise ValueError(f"{name} must be a positive integer or null, got {value!r}")

    @property
    def effective_lr(self) -> float:
        """``lr``, scaled by ``batch_size / 256`` above 256 when ``lr_scaling`` is on."""
        return self.lr * max(1.0, self.batch_size / 256) if self.lr_scaling else self.lr

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

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


def load_yaml(path: str | Path) -> dict[str, Any]:
    """A YAML mapping from ``path`` (``FileNotFoundError``/``ValueError`` with the path)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"config file {str(path)!r} does not exist")
    data = yaml.safe_load(path.read_text()) or {}
    if not isinstance(data, dict):
        raise ValueError(
            f"config file {str(path)!r} must hold a mapping, got {type(data).__name__}"
        )
    return data


def parse_value(text: str) -> Any:
    """A ``key=value`` value as YAML scalar: ``0.1`` → float, ``true`` → bool, ``x`` → str."""
    return yaml.safe_load(text) if text.strip() else text


def parse_assignments(items: list[str] | None, what: str = "--loss-arg") -> dict[str, Any]:
    """``["temperature=0.2", "adaptive=false"]`` → ``{"temperature": 0.2, "adaptive": False}``."""
    out: dict[str, Any] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"{what} expects key=value, got {item!r}")
        out[key.strip()] = parse_value(value)
    return out
