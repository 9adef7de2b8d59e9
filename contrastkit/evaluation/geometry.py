"""Alignment and uniformity (Wang & Isola, ICML 2020) on held-out positive pairs.

Two independent augmentations of each test sample are encoded, L2-normalised, and
measured with :func:`contrastkit.losses.functional.alignment` (α = 2, lower is better
aligned) and :func:`~contrastkit.losses.functional.uniformity` (t = 2, lower is more
uniform; averaged over both views).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from ..losses import functional as F
from ..losses.views import normalize


def alignment_uniformity(
    encode: Callable[[Tensor], Tensor],
    x: Tensor,
    augment: Callable[[Tensor, torch.Generator], Tensor],
    generator: torch.Generator,
    max_samples: int = 2048,
) -> dict[str, float]:
    """``{"alignment", "uniformity"}`` of ``encode`` on two views of ``x[:max_samples]``.

    Uniformity is quadratic in the sample count, hence the cap (the first ``max_samples``
    of the fixed test split).
    """
    x = x[:max_samples]
    with torch.no_grad():
        a = normalize(encode(augment(x, generator)).double())
        b = normalize(encode(augment(x, generator)).double())
        return {
            "alignment": float(F.alignment(a, b)),
            "uniformity": float((F.uniformity(a) + F.uniformity(b)) / 2.0),
        }
