"""The image and signal modalities: what they bring to the shared loop.

* encoder: the backbone registry's (:func:`contrastkit.models.build_encoder`: the small conv
  encoder, or a ResNet behind the image input layer), after :func:`check_image_size`;
* views: :class:`~.image_augment.ImageAugment` (SimCLR's recipe) for uint8 ``"image"``
  data, :class:`~.augment.Augment` for the small ``"2d"`` images and ``"1d"`` signals,
  and the label-keeping types of :data:`~.rotation.LABEL_KEEPING_TYPES` for regression
  sets whose label a view must not change;
* trainer: :class:`~.trainer.ImageTrainer` (the papers' linear evaluation and analyses)
  for ``"image"`` data, the shared rule otherwise;
* checks: the view settings (``crop_scale``, ``jitter``, ``p_jitter``, ``aug_recipe``) and
  the linear-evaluation settings, which apply to image datasets only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from torch import nn

from ..data import Split, dataset_info
from ..evaluation.linear_eval import EPOCHS as LINEAR_EPOCHS
from ..evaluation.linear_eval import LR as LINEAR_LR
from ..evaluation.linear_eval import OPTIMIZERS as LINEAR_OPTIMIZERS
from ..models import build_encoder
from ..models.backbones import LARGE_IMAGE, MIN_SIDE
from ..training import Metric, Modality, TrainConfig, Trainer
from ..training.label_aware import shared_trainer
from ..training.settings import listed
from .augment import Augment
from .image_augment import (
    AUG_RECIPES,
    CROP_SCALE,
    CROP_SCALE_LARGE,
    JITTER,
    JITTER_LARGE,
    P_JITTER,
    ImageAugment,
    check_jitter,
)
from .imagefolder import CACHE_HELP
from .rotation import LABEL_KEEPING_TYPES
from .trainer import ImageTrainer


def build_augment(
    split: Split,
    aug_types: int | None = None,
    crop_scale: float | None = None,
    jitter: Sequence[float] | None = None,
    p_jitter: float | None = None,
    aug_backend: str | None = None,
) -> Augment | ImageAugment:
    """The view generator for ``split``'s kind: :class:`ImageAugment` (SimCLR's recipe;
    ``crop_scale``, ``jitter``, ``p_jitter`` and ``aug_backend`` as given, else its
    defaults) for ``"image"`` data, :class:`Augment` for the small ``"2d"`` / ``"1d"`` data.
    The arguments are the settings of the same names."""
    options = {"crop_scale": crop_scale, "jitter": jitter, "p_jitter": p_jitter}
    options["aug_backend"] = None if aug_backend == "auto" else aug_backend
    given = {name: value for name, value in options.items() if value is not None}
    if split.kind == "image":
        if "aug_backend" in given:
            given["backend"] = given.pop("aug_backend")
        return ImageAugment(min(split.input_shape[1:]), aug_types, **given)
    for name in given:
        raise ValueError(f"{name} applies to image datasets, not to {split.name!r}")
    return Augment(split.kind, aug_types)


def views(split: Split, config: TrainConfig) -> Augment | ImageAugment:
    """The run's view generator: a regression set's fixed label-keeping types, else
    :func:`build_augment` with the config's view settings."""
    fixed = LABEL_KEEPING_TYPES.get(config.dataset)
    if fixed:
        return Augment(split.kind, types=fixed)
    cfg = config
    return build_augment(
        split, cfg.aug_types, cfg.crop_scale, cfg.jitter, cfg.p_jitter, cfg.aug_backend
    )


def check_image_size(split: Split, backbone: str, data_root: str | None) -> None:
    """``ValueError`` naming the dataset and ``data_root`` when ``split``'s images are
    smaller than the smallest side ``backbone`` takes
    (:data:`~contrastkit.models.backbones.MIN_SIDE`), before any model is built."""
    if split.kind not in ("image", "2d") or backbone not in MIN_SIDE:
        return
    sides = tuple(split.input_shape[1:])
    if min(sides) < MIN_SIDE[backbone]:
        where = f" in {str(data_root)!r}" if data_root is not None else ""
        need = MIN_SIDE[backbone]
        raise ValueError(
            f"dataset {split.name!r}: the images{where} are {'x'.join(map(str, sides))} px, "
            f"smaller than the {need}x{need} px backbone {backbone!r} needs; resize them "
            "(image_size) or choose a resnet backbone"
        )


def encoder(split: Split, config: TrainConfig) -> nn.Module:
    """The backbone registry's encoder of ``split`` (:func:`contrastkit.models.build_encoder`)."""
    cfg, d = config, split
    check_image_size(d, cfg.backbone, cfg.data_root)
    return build_encoder(
        d.kind, d.input_shape, cfg.feature_dim, cfg.width, cfg.backbone, cfg.stem, d.mean, d.std
    )


def image_trainer(config: TrainConfig, label_aware: bool = False) -> type[Trainer]:
    """:class:`~.trainer.ImageTrainer` for uint8 ``"image"`` data, unless the run is
    label-aware; else the shared rule."""
    shared = shared_trainer(config, label_aware)
    kind = dataset_info(config.dataset).kind
    return ImageTrainer if shared is Trainer and kind == "image" else shared


def check(config: TrainConfig) -> None:
    """The view and linear-evaluation settings (``ValueError`` naming the first bad one)."""
    cfg = config
    if cfg.crop_scale is not None and not (
        isinstance(cfg.crop_scale, int | float) and 0 < cfg.crop_scale <= 1
    ):
        raise ValueError(f"crop_scale must be in (0, 1] or null, got {cfg.crop_scale!r}")
    if cfg.jitter is not None:
        check_jitter(cfg.jitter)
    if cfg.p_jitter is not None and not (
        isinstance(cfg.p_jitter, int | float) and 0 <= cfg.p_jitter <= 1
    ):
        raise ValueError(f"p_jitter must be in [0, 1] or null, got {cfg.p_jitter!r}")
    if cfg.aug_recipe not in AUG_RECIPES:
        raise ValueError(
            f"aug_recipe must be one of {', '.join(AUG_RECIPES)}, got {cfg.aug_recipe!r}"
        )
    keys = ("linear_epochs", "linear_lr", "linear_optimizer")
    given = [k for k in keys if getattr(cfg, k) is not None]
    if not given:
        return
    if dataset_info(cfg.dataset).kind != "image":
        raise ValueError(
            f"{given[0]} applies to image datasets (the linear evaluation protocol), "
            f"not {cfg.dataset!r}"
        )
    lr, opt = cfg.linear_lr, cfg.linear_optimizer
    if lr is not None and (
        not isinstance(lr, int | float) or isinstance(lr, bool) or not 0 < lr < math.inf
    ):
        raise ValueError(f"linear_lr must be a finite number > 0 or null, got {lr!r}")
    if opt is not None and opt not in LINEAR_OPTIMIZERS:
        raise ValueError(
            f"linear_optimizer must be one of {', '.join(LINEAR_OPTIMIZERS)} or null, got {opt!r}"
        )


# what ImageTrainer adds to final.json: MACL App. B.3's linear evaluation, AMCL Table 4's
# label-fraction probe, CACR Fig. 3/5's repulsion entropy and the similarity panels
IMAGE_METRICS = (
    Metric("linear_top1"),
    Metric("linear_top5"),
    Metric(r"probe_(\d+)_per_class", pattern=True),
    Metric("repulsion_entropy"),
    Metric("repulsion_entropy_max"),
    *(
        Metric(f"{name}_{part}")
        for part in ("head", "backbone")
        for name in ("positive_cosine_mean", "negative_cosine_mean", "similarity_overlap")
    ),
)
# what the image modality adds to the --help of the config settings it reads
IMAGE_NOTES = (
    ("cache_dir", CACHE_HELP),
    ("aug_recipe", f"{listed(AUG_RECIPES)}; byol: BYOL's asymmetric pair"),
    ("crop_scale", f"default {CROP_SCALE}, {CROP_SCALE_LARGE} from {LARGE_IMAGE} px"),
    (
        "jitter",
        f"default {','.join(f'{v:g}' for v in JITTER)}, "
        f"{','.join(f'{v:g}' for v in JITTER_LARGE)} from {LARGE_IMAGE} px",
    ),
    ("p_jitter", f"default {P_JITTER}"),
    ("linear_epochs", f"default {LINEAR_EPOCHS}"),
    ("linear_lr", f"default {LINEAR_LR}"),
    ("linear_optimizer", f"{listed(LINEAR_OPTIMIZERS)}, default {LINEAR_OPTIMIZERS[0]}"),
)
IMAGE = Modality(
    "image",
    kinds=("2d", "image"),  # float images [N, 1, H, W] (digits); uint8 images [N, C, H, W]
    encoder=encoder,
    augment=views,
    trainer=image_trainer,
    check=check,
    metrics=IMAGE_METRICS,
    notes=IMAGE_NOTES,
    description="images: the conv encoder or a ResNet, SimCLR-style views",
)
SIGNAL = Modality(
    "signal",
    kinds=("1d",),  # 1-D signals [N, 1, L] (mnist1d)
    encoder=encoder,
    augment=views,
    description="1-D signals: the conv encoder, signal views",
)
