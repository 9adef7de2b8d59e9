"""The fields of :class:`~contrastkit.training.TrainConfig`, one dataclass per section, each
field declared once with :func:`~contrastkit.training.settings.setting` (type, default,
help, source, check; the flags and ``--help`` are generated from these). ``TrainConfig``
inherits them all, so a config stays one flat mapping (YAML files and ``final.json`` keep
their keys).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..data.imbalance import DEFAULT_RATIO
from ..data.imbalance import RULES as IMBALANCE_RULES
from ..frameworks import FRAMEWORKS
from ..models import BACKBONES
from ..models.backbones import LARGE_IMAGE
from ..models.resnet import STEMS
from .defaults import by_backbone, by_framework
from .settings import (
    boolean,
    boolean_or_null,
    comma_separated,
    finite_non_negative,
    finite_or_null,
    of_type,
    positive_int,
    positive_int_or_null,
)
from .settings import setting as S


def _backbone(name: str, value: Any) -> None:
    if value not in BACKBONES:
        raise ValueError(f"unknown backbone {value!r}; available: {', '.join(BACKBONES)}")


def _framework(name: str, value: Any) -> None:
    """One of the frameworks registered when the config is checked (not when declared)."""
    if value not in FRAMEWORKS:
        raise ValueError(f"unknown framework {value!r}; available: {', '.join(FRAMEWORKS)}")


def _joint_views_defaults() -> str:
    """The frameworks' ``joint_views`` defaults for ``--help``: ``"joint: simclr, ...;
    separate: barlow_twins"``."""
    joint = {
        name: cls.joint_views_default
        for name, cls in FRAMEWORKS.items()
        if hasattr(cls, "joint_views_default")
    }
    return "; ".join(
        f"{word}: {', '.join(n for n, v in joint.items() if v is flag)}"
        for word, flag in (("joint", True), ("separate", False))
        if flag in joint.values()
    )


def _workers(name: str, value: Any) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValueError(f"{name} must be an integer >= 0, got {value!r}")


@dataclass
class DataSection:
    """Settings of the data section: the dataset, its subset and the views made of it."""

    dataset: str = S(
        "digits",
        section="data",
        help="registered dataset: digits, cifar10, imagefolder, tu:NAME, ...",
    )
    modality: str | None = S(
        None,
        section="data",
        help=(
            "image, signal, tabular, graph or text; checked against the dataset's (default: "
            "inferred); a check only"
        ),
    )
    num_samples: int | None = S(
        None,
        section="data",
        check=positive_int_or_null,
        help="mnist1d: samples; images: train subset; davis: pairs",
    )
    data_root: str | None = S(
        None,
        section="data",
        check=of_type(str, "a path", null=True),
        environment=True,
        help="datasets read by path: the folder or archive to read",
    )
    cache_dir: str | None = S(
        None,
        section="data",
        environment=True,
        help="imagefolder decode cache",
    )
    image_size: int | None = S(
        None,
        section="data",
        check=positive_int_or_null,
        help="imagefolder: resize the short side, centre-crop SxS",
    )
    stream: bool | None = S(
        None,
        section="data",
        check=boolean_or_null,
        help="imagefolder: decode per batch in DataLoader workers (default: above 4 GiB)",
    )
    workers: int = S(
        2,
        section="data",
        check=_workers,
        environment=True,
        help="DataLoader workers decoding streamed image folders ({default})",
    )
    unlabeled: bool | None = S(
        None,
        section="data",
        check=boolean_or_null,
        source="Wang & Isola 2020's STL-10 'train+unlabeled' (their code)",
        help="pre-train on train + unlabelled images (STL-10; default: when present)",
    )
    imbalance: str | None = S(
        None,
        section="data",
        choices=IMBALANCE_RULES,
        source="CACR §5.2",
        help="class-imbalanced training set: {choices}",
    )
    imbalance_ratio: float | None = S(
        None,
        section="data",
        help=(
            "imbalance n_max/n_min (unset: "
            + ", ".join(f"{rule} {ratio:g}" for rule, ratio in DEFAULT_RATIO.items())
            + ", else the number of classes)"
        ),
    )
    aug_recipe: str = S(
        "simclr",
        section="data",
        source="SimCLR App. A; byol: Grill et al. 2020, Table 6",
        help="image views: the recipe",
    )
    crop_scale: float | None = S(None, section="data", help="image views: minimum crop area")
    jitter: list[float] | None = S(
        None,
        section="data",
        parse=comma_separated(float, "--jitter must be four comma-separated numbers", 4),
        source="SimCLR App. A; CACR App. B.1 (0.4 hue)",
        help="image views: jitter strengths b,c,s,hue",
    )
    p_jitter: float | None = S(
        None, section="data", help="image views: probability of the colour jitter"
    )
    aug_types: int | None = S(
        None,
        section="data",
        check=positive_int_or_null,
        source="AMCL Table 5's order",
        help="number of augmentation types applied (1-5)",
    )
    num_views: int | None = S(
        None,
        section="data",
        flag="--views",
        check=positive_int_or_null,
        help="multiview framework: number of views V (K = V - 1)",
    )
    binarize_threshold: float | None = S(
        None,
        section="data",
        check=finite_or_null,
        help="supervised framework on regression data: the loss gets labels 1[y >= T] (SupCon)",
    )
    modality_args: dict[str, Any] = S(
        section="data",
        factory=dict,
        check=of_type(dict, "a mapping"),
        cli=False,
        help="the settings a modality declares for itself (--modality-arg KEY=VALUE)",
    )


@dataclass
class ModelSection:
    """Settings of the model section: framework, encoder and heads."""

    framework: str = S(
        "simclr",
        section="model",
        check=_framework,
        choices=tuple(FRAMEWORKS),
        help="{choices}",
    )
    backbone: str = S(
        "conv",
        section="model",
        check=_backbone,
        choices=BACKBONES,
        help="{choices}; conv is a small CNN",
    )
    stem: str | None = S(
        None,
        section="model",
        choices=STEMS,
        help=(
            "resnet stem: {choices}, a 3x3 convolution or a 7x7 one and a max-pool (unset: cifar "
            f"below {LARGE_IMAGE} px)"
        ),
    )
    feature_dim: int = S(
        128,
        section="model",
        check=positive_int,
        help="encoder output width (the small CNN, MLP and GIN encoders; a ResNet's is set by "
        "its width: 512 for ResNet-18 at 64)",
    )
    width: int | None = S(
        None,
        section="model",
        check=positive_int_or_null,
        source="He et al. 2016 (ResNets: 64)",
        help=f"encoder channels (unset: {by_backbone()})",
    )
    proj_dim: int = S(
        128,
        section="model",
        check=positive_int,
        source="MACL App. B.1 (a 128-dimensional latent space)",
        help="projection head output width",
    )
    hidden_dim: int | None = S(
        None, section="model", check=positive_int_or_null, help="projection head hidden width"
    )
    queue_size: int = S(
        4096, section="model", check=positive_int, help="moco: queue length; nnclr: support set"
    )
    momentum: float = S(
        0.99, section="model", check=finite_non_negative, help="moco: key-encoder momentum"
    )
    text_model: str | None = S(None, section="model", help="text data: local model folder")
    max_length: int = S(
        64,
        section="model",
        check=positive_int,
        help="text data: truncation length in tokens ({default})",
    )
    # checked by the text modality (text.modality.check), whose names (text.encoder.POOLINGS)
    # training must not import
    pooling: str | None = S(None, section="model", help="text data: pooling of the token states")
    mlp_head: bool = S(
        False,
        section="model",
        check=boolean,
        source="SimCSE (Gao et al., 2021)",
        help="text data: SimCSE's training-only MLP head on the pooled output",
    )
    dropout: float | None = S(None, section="model", help="text data: the model's dropout rates")
    joint_views: bool | None = S(
        None,
        section="model",
        check=boolean_or_null,
        help=(
            "encode all views as one batch, so batch norm sees V·N samples (unset: the "
            f"framework's, {_joint_views_defaults()})"
        ),
    )


@dataclass
class LossSection:
    """Settings of the loss section: the registered loss and its hyper-parameters."""

    loss: str | None = S(
        None,
        section="loss",
        help="registered loss name (see `contrastkit.losses.available()`; unset: the "
        f"framework's, {by_framework()})",
    )
    loss_args: dict[str, Any] = S(
        section="loss",
        factory=dict,
        check=of_type(dict, "a mapping"),
        cli=False,
        help="the loss's hyper-parameters (--loss-arg KEY=VALUE)",
    )
