"""The dataset registry: every loader registers here under a name; callers ask by name.

A loader is any callable ``loader(num_samples=..., data_root=..., **options) -> Split``;
a *prefix* loader (``prefix=True``) serves a family of names ``"prefix:REST"`` (e.g.
``tu:PROTEINS``) and is called as ``loader(REST, num_samples=..., data_root=..., **options)``.
The registry records what each dataset is (``kind``: ``"2d"``, ``"1d"``, ``"image"``,
``"tabular"``, ``"graph"``...; ``regression``: continuous labels; ``modality``: which
encoder and augmentation family it takes) so trainers ask it instead of keeping name lists.
Data kinds are not listed here: each modality package declares its kinds
(:func:`register_kind`, called by :func:`contrastkit.training.register_modality`) and then
registers its datasets, so this module names no modality and imports none.
Every loader call runs inside :func:`~.reading.dataset_boundary`: a damaged data file
gives one ``ValueError`` naming it (or the dataset's ``data_root``), whatever the loader.

>>> import contrastkit.modalities  # the built-in modalities and their datasets
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

from .imbalance import imbalance_split
from .reading import dataset_boundary
from .split import Split

Loader = Callable[..., Split]

# the modality of each registered data kind: what ``--modality`` / the config key names
_KIND_MODALITY: dict[str, str] = {}


def register_kind(kind: str, modality: str) -> None:
    """Declare data kind ``kind`` (what a :class:`Split` names in ``kind``) as data of
    ``modality``; a kind declared for another modality raises ``ValueError``."""
    if not kind or not modality:
        raise ValueError(f"kind and modality must be non-empty, got {kind!r}, {modality!r}")
    old = _KIND_MODALITY.setdefault(kind, modality)
    if old != modality:
        raise ValueError(f"data kind {kind!r} belongs to modality {old!r} already")


def modalities() -> tuple[str, ...]:
    """The modalities of the registered data kinds, sorted."""
    return tuple(sorted(set(_KIND_MODALITY.values())))


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
        """The modality of the dataset's kind (:func:`register_kind`): the built-ins are
        ``image``, ``signal``, ``tabular``, ``graph`` and ``text``."""
        return _KIND_MODALITY[self.kind]

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

    Re-registering a name with a different loader, or a ``kind`` that no modality declared
    (:func:`register_kind`), raises ``ValueError``."""
    if not name or ":" in name:
        raise ValueError(f"dataset name must be non-empty without ':', got {name!r}")
    if kind not in _KIND_MODALITY:
        known = ", ".join(_KIND_MODALITY)
        raise ValueError(f"dataset kind must be one of {known}, got {kind!r}")
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
    (or is not one of :func:`modalities`)."""
    actual = dataset_info(name).modality
    if modality is None or modality == actual:
        return actual
    if modality not in modalities():
        raise ValueError(f"modality must be one of {', '.join(modalities())}, got {modality!r}")
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
    return load_dataset(
        cfg.dataset,  # type: ignore[attr-defined]
        cfg.num_samples,  # type: ignore[attr-defined]
        cfg.data_root,  # type: ignore[attr-defined]
        imbalance=cfg.imbalance,  # type: ignore[attr-defined]
        imbalance_ratio=cfg.imbalance_ratio,  # type: ignore[attr-defined]
        cache_dir=cfg.cache_dir,  # type: ignore[attr-defined]
        image_size=cfg.image_size,  # type: ignore[attr-defined]
        stream=cfg.stream,  # type: ignore[attr-defined]
    )
