"""Example inputs for any registered loss, by its input kind: for tests, property-based
checks and :file:`benchmarks/fuzz.py`.

Example:
    >>> import torch
    >>> from contrastkit.losses.examples import build, example_inputs
    >>> loss = build("supcon")
    >>> loss(*example_inputs("supcon", n=8, d=4, generator=torch.Generator().manual_seed(0))).ndim
    0
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from .registry import get, info

VIEWS = 3  # views given to "views" losses (CACR, CMC)
QUEUE = 5  # rows of the queue given to "query_key" losses


def build(name: str, d: int = 16, **kwargs: object) -> nn.Module:
    """The registered loss ``name``; "features" losses (AMCL) get ``in_dim=d`` and small
    heads so examples stay cheap."""
    if info(name).inputs == "features":
        kwargs = {"in_dim": d, "heads": 2, "out_dim": 8, **kwargs}
    return get(name, **kwargs)


def example_inputs(
    name: str,
    n: int = 8,
    d: int = 16,
    *,
    dtype: torch.dtype = torch.float32,
    scale: float = 1.0,
    duplicates: int = 0,
    generator: torch.Generator | None = None,
    requires_grad: bool = False,
) -> tuple[Tensor, ...]:
    """Positional inputs of loss ``name`` for a batch of ``n`` samples of width ``d``.

    Embeddings are Gaussian times ``scale`` in ``dtype``; the first ``duplicates`` rows
    repeat row 0 in every view (identical samples); labels are ``n // 2`` classes for
    SupCon-style losses, as floats in ``[0, 5)`` for LASCon. With ``requires_grad`` the
    embedding tensors are leaves that collect gradients.
    """

    def emb(*shape: int) -> Tensor:
        x = torch.randn(*shape, generator=generator) * scale
        if duplicates:
            x[..., 1 : 1 + duplicates, :] = x[..., :1, :]
        return x.to(dtype).requires_grad_(requires_grad)

    kind = info(name).inputs
    if kind == "labeled":
        labels = (
            torch.rand(n, generator=generator) * 5.0
            if name == "lascon"
            else torch.arange(n) % max(1, n // 2)
        )
        return emb(n, d), emb(n, d), labels
    if kind == "views":
        return (emb(VIEWS, n, d),)
    if kind == "query_key":
        query, key = emb(n, d), emb(n, d)
        queue = torch.randn(QUEUE, d, generator=generator).to(dtype)
        return query, key, queue
    if kind == "predictor":
        return emb(n, d), emb(n, d), emb(n, d), emb(n, d)
    return emb(n, d), emb(n, d)  # "pair" and "features"
