"""The views of tabular rows: :class:`TabularAugment`."""

from __future__ import annotations

import torch
from torch import Tensor


class TabularAugment:
    """Views of standardised tabular rows ``[B, F]``: Gaussian noise of standard deviation
    ``noise`` (0.1, in units of the feature's standard deviation), then each feature
    replaced by the training mean (0 after standardisation) with probability ``mask``
    (0.1). Both magnitudes are this project's choices; the paper has no tabular task."""

    kind = "tabular"

    def __init__(self, noise: float = 0.1, mask: float = 0.1) -> None:
        if not (isinstance(noise, int | float) and noise >= 0):
            raise ValueError(f"noise must be a number >= 0, got {noise!r}")
        if not (isinstance(mask, int | float) and 0 <= mask < 1):
            raise ValueError(f"mask must be a number in [0, 1), got {mask!r}")
        self.noise, self.mask = float(noise), float(mask)

    def __repr__(self) -> str:
        return f"TabularAugment(noise={self.noise}, mask={self.mask})"

    def __call__(self, x: Tensor, generator: torch.Generator) -> Tensor:
        if not isinstance(x, Tensor) or x.dim() != 2:
            got = tuple(x.shape) if isinstance(x, Tensor) else type(x).__name__
            raise ValueError(f"x must have shape [B, F] for tabular augmentations, got {got}")
        noisy = x + self.noise * torch.randn(x.shape, generator=generator).to(x.device, x.dtype)
        keep = torch.rand(x.shape, generator=generator) >= self.mask
        return noisy * keep.to(x.device, x.dtype)
