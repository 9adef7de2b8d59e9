"""The dataset registry: every loader registers here under a name; callers ask by name.

A loader is any callable ``loader(num_samples=..., data_root=..., **options) -> Split``;
a *prefix* loader (``prefix=True``) serves a family of names ``"prefix:REST"`` (e.g.
``tu:PROTEINS``) and is called as ``loader(REST, num_samples=..., data_root=..., **options)``.
The registry records what each dataset is (``kind``: ``"2d"``, ``"1d"``, ``"image"``,
``"tabular"``, ``"graph"``...; ``regression``: continuous labels; ``modality``: which
encoder and augmentation family it takes, one of :data:`MODALITIES`, declared for each
kind by :data:`KIND_MODALITY`) so trainers ask it instead of keeping name lists.
Every loader call runs inside :func:`~.reading.dataset_boundary`: a damaged data file
gives one ``ValueError`` naming it (or the dataset's ``data_root``), whatever the loader.
``datasets.py``, ``regression.py`` and ``images.py`` only import this module, which imports
none of them: the former datasets ↔ regression import cycle is gone.

>>> from contrastkit.data import registry
>>> registry.dataset_info("digits").kind
'2d'
>>> registry.is_regression("diabetes")
True
>>> registry.dataset_info("tu:MUTAG").modality
'graph'
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass

from torch import Tensor

from .reading import dataset_boundary


@dataclass(frozen=True)
class Split:
    """A labelled dataset with a fixed train/test partition.

    ``x_train [N, C, *spatial]`` (or ``[N, F]`` for tabular data), ``y_train [N]`` (int64
    classes or float32 regression targets), likewise for test. ``kind`` names the data
    kind (``"2d"`` float images, ``"1d"`` signals, ``"image"`` uint8 images ``[N, C, H, W]``
    that stay uint8 until the augmentation or the encoder's input layer converts them,
    ``"tabular"``). Image datasets also carry the training split's per-channel ``mean`` and
    ``std`` (of pixel values scaled to [0, 1]) and may carry ``x_unlabeled`` (STL-10's
    100,000 unlabelled images, memory-mapped, an extra pre-training set). Image sets too
    large to hold (streamed image folders) are :class:`~contrastkit.data.sources.LazyImages`
    instead of tensors: same ``len``, ``shape``, ``x[idx]`` and ``x[a:b]``.
    """

    name: str
    kind: str
    x_train: Tensor
    y_train: Tensor
    x_test: Tensor
    y_test: Tensor
    mean: tuple[float, ...] | None = None
    std: tuple[float, ...] | None = None
    x_unlabeled: Tensor | None = None

    @property
    def num_classes(self) -> int:
        return int(max(self.y_train.max(), self.y_test.max())) + 1

    @property
    def input_shape(self) -> tuple[int, ...]:
        return tuple(self.x_train.shape[1:])


Loader = Callable[..., Split]

# the modality of each data kind: what ``--modality`` / the config key ``modality`` names
KIND_MODALITY = {
    "2d": "image",  # float images [N, 1, H, W] (digits)
    "image": "image",  # uint8 images [N, C, H, W]
    "1d": "signal",  # 1-D signals [N, 1, L] (mnist1d)
    "tabular": "tabular",  # feature vectors [N, F]
    "graph": "graph",  # TU graph sets (GraphSet)
    "dta": "graph",  # drug graph + protein sequence pairs (Davis)
    "text": "text",  # sentences (data.sentences.Sentences), a pretrained transformer
}
MODALITIES = tuple(sorted(set(KIND_MODALITY.values())))


@dataclass(frozen=True)
class DatasetInfo:
    """What the registry knows about one dataset name."""

    name: str
    loader: Loader
    kind: str
    regression: bool = False
    prefix: bool = False
    description: str = ""

    @property
    def modality(self) -> str:
        """``image``, ``signal``, ``tabular``, ``graph`` or ``text`` (:data:`KIND_MODALITY`)."""
        return KIND_MODALITY[self.kind]

    def accepts(self, option: str) -> bool:
        """Whether the loader takes keyword ``option``."""
        params = inspect.signature(self.loader).parameters
        return option in params or any(p.kind is p.VAR_KEYWORD for p in params.values())


_REGISTRY: dict[str, DatasetInfo] = {}


def register_dataset(
    name: str,
    loader: Loader,
    kind: str,
    regression: bool = False,
    prefix: bool = False,
    description: str = "",
) -> None:
    """Register ``loader`` as dataset ``name`` (or as the prefix ``name:`` if ``prefix``).

    Re-registering a name with a different loader, or a ``kind`` without a modality in
    :data:`KIND_MODALITY`, raises ``ValueError``."""
    if not name or ":" in name:
        raise ValueError(f"dataset name must be non-empty without ':', got {name!r}")
    if kind not in KIND_MODALITY:
        raise ValueError(f"dataset kind must be one of {', '.join(KIND_MODALITY)}, got {kind!r}")
    old = _REGISTRY.get(name)
    if old is not None and old.loader is not loader:
        raise ValueError(f"dataset {name!r} is already registered")
    _REGISTRY[name] = DatasetInfo(name, loader, kind, regression, prefix, description)


def available_datasets() -> list[str]:
    """Registered names, prefixes shown as ``"prefix:NAME"``, sorted."""
    return sorted(f"{n}:NAME" if i.prefix else n for n, i in _REGISTRY.items())


def dataset_info(name: str) -> DatasetInfo:
    """The registry entry serving ``name`` (``ValueError`` listing the known names)."""
    if not isinstance(name, str):
        raise ValueError(f"dataset must be a string, got {name!r}")
    head, sep, rest = name.partition(":")
    info = _REGISTRY.get(head)
    if info is None or info.prefix != bool(sep) or (sep and not rest):
        raise ValueError(f"unknown dataset {name!r}; available: {', '.join(available_datasets())}")
    return info


def check_modality(name: str, modality: str | None) -> str:
    """The modality of dataset ``name``; ``ValueError`` if ``modality`` is given and differs
    (or is not one of :data:`MODALITIES`)."""
    actual = dataset_info(name).modality
    if modality is None or modality == actual:
        return actual
    if modality not in MODALITIES:
        raise ValueError(f"modality must be one of {', '.join(MODALITIES)}, got {modality!r}")
    raise ValueError(
        f"modality {modality!r} does not match dataset {name!r}, which is {actual!r} data"
    )


def is_regression(name: str) -> bool:
    """Whether dataset ``name`` has continuous labels (``False`` for unknown names)."""
    try:
        return dataset_info(name).regression
    except ValueError:
        return False


def load_dataset(
    name: str,
    num_samples: int | None = None,
    data_root: str | None = None,
    imbalance: str | None = None,
    imbalance_ratio: float | None = None,
    imbalance_seed: int = 0,
    **options: object,
) -> Split:
    """Load dataset ``name`` through its registered loader.

    ``num_samples``, ``data_root`` and each of ``options`` are passed only when set; a
    loader that does not take one that is set is refused with a ``ValueError`` naming it.
    ``imbalance`` (``"linear"`` / ``"exponential"``, ratio ``imbalance_ratio``) makes a
    class-imbalanced training subset of any class-labelled dataset, seeded by
    ``imbalance_seed`` (:mod:`contrastkit.data.imbalance`); the test split stays as is.
    """
    info = dataset_info(name)
    if imbalance is None and imbalance_ratio is not None:
        raise ValueError("imbalance_ratio needs imbalance (linear or exponential)")
    if imbalance is not None:
        if info.regression:
            raise ValueError(f"imbalance needs class labels; {name!r} is a regression dataset")
        from .imbalance import imbalance_split

        base = load_dataset(name, num_samples, data_root, **options)
        return imbalance_split(base, imbalance, imbalance_ratio, imbalance_seed)
    given = {"num_samples": num_samples, "data_root": data_root, **options}
    kwargs = {k: v for k, v in given.items() if v is not None}
    refused = [k for k in kwargs if not info.accepts(k)]
    if refused:
        raise ValueError(
            f"dataset {name!r} does not take {', '.join(refused)}; leave "
            f"{'it' if len(refused) == 1 else 'them'} unset"
        )
    with dataset_boundary(name, data_root):  # damaged files: one error naming them
        if info.prefix:
            return info.loader(name.partition(":")[2], **kwargs)
        return info.loader(**kwargs)


def dataset_from_config(config: object) -> Split:
    """The dataset a run configuration names: reads ``dataset``, ``num_samples``,
    ``data_root``, ``cache_dir``, ``image_size``, ``stream``, ``imbalance`` and
    ``imbalance_ratio`` attributes (options left unset are not passed)."""
    cfg = config
    split = load_dataset(
        cfg.dataset,  # type: ignore[attr-defined]
        cfg.num_samples,  # type: ignore[attr-defined]
        cfg.data_root,  # type: ignore[attr-defined]
        imbalance=cfg.imbalance,  # type: ignore[attr-defined]
        imbalance_ratio=cfg.imbalance_ratio,  # type: ignore[attr-defined]
        cache_dir=cfg.cache_dir,  # type: ignore[attr-defined]
        image_size=cfg.image_size,  # type: ignore[attr-defined]
        stream=cfg.stream,  # type: ignore[attr-defined]
    )
    check_image_size(split, cfg.backbone, cfg.data_root)  # type: ignore[attr-defined]
    return split


def check_image_size(split: Split, backbone: str, data_root: str | None) -> None:
    """``ValueError`` naming the dataset and ``data_root`` when ``split``'s images are
    smaller than the smallest side ``backbone`` takes
    (:data:`~contrastkit.models.backbones.MIN_SIDE`), before any model is built."""
    from ..models.backbones import MIN_SIDE

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
