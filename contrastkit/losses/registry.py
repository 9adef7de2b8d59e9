"""Name → loss registry, with what each loss expects as input.

Every registered loss is an ``nn.Module`` class whose ``forward`` follows one of these
signatures (its ``inputs`` kind), so frameworks can check compatibility up front:

* ``"pair"``: ``loss(z1, z2)``, two views of the same ``N`` samples, ``[N, d]`` each;
* ``"labeled"``: ``loss(z1, z2, labels)``, two views plus ``[N]`` or ``[N, D]`` labels;
* ``"views"``: ``loss(views)``, ``[V, N, d]`` with ``V >= 2`` views;
* ``"query_key"``: ``loss(query, key, queue=None)``;
* ``"predictor"``: ``loss(p1, p2, z1, z2)``, SimSiam's predictor outputs and targets;
* ``"features"``: ``loss(h1, h2)`` on encoder features: the loss owns its projection heads
  (AMCL) and is built with ``in_dim=``; frameworks skip their own projector for it.

Example:
    >>> from contrastkit import losses
    >>> loss = losses.get("macl", temperature=0.2)
    >>> "ntxent" in losses.available(inputs="pair")
    True
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from torch import nn

INPUT_KINDS = ("pair", "labeled", "views", "query_key", "predictor", "features")


@dataclass(frozen=True)
class LossInfo:
    """What the registry knows of one loss."""

    name: str
    cls: type[nn.Module]
    inputs: str
    reference: str
    similarity_level: bool  # True when ``loss.similarity_loss(pos, neg)`` is available


_REGISTRY: dict[str, LossInfo] = {}
T = TypeVar("T", bound=type[nn.Module])


def register(name: str, inputs: str, reference: str) -> Callable[[T], T]:
    """Class decorator adding a loss under ``name``."""
    if inputs not in INPUT_KINDS:
        raise ValueError(f"inputs must be one of {INPUT_KINDS}, got {inputs!r}")

    def decorate(cls: T) -> T:
        if name in _REGISTRY:
            raise ValueError(f"a loss named {name!r} is registered already")
        _REGISTRY[name] = LossInfo(name, cls, inputs, reference, hasattr(cls, "similarity_loss"))
        return cls

    return decorate


def info(name: str) -> LossInfo:
    """The :class:`LossInfo` of ``name``; unknown names raise ``ValueError`` listing all."""
    try:
        return _REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown loss {name!r}; available: {', '.join(available())}") from None


def get(name: str, **kwargs: object) -> nn.Module:
    """A new instance of the loss ``name`` built with ``kwargs``."""
    return info(name).cls(**kwargs)


def available(inputs: str | None = None) -> list[str]:
    """Sorted names of the registered losses, optionally only those of one input kind."""
    if inputs is not None and inputs not in INPUT_KINDS:
        raise ValueError(f"inputs must be one of {INPUT_KINDS}, got {inputs!r}")
    return sorted(n for n, i in _REGISTRY.items() if inputs is None or i.inputs == inputs)
