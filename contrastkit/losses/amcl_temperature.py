"""AMCL's learned pair-wise temperature network (Eq. 3): the module
:class:`~contrastkit.losses.AMCL` owns, one ``φ`` shared by all of its heads.

Example:
    >>> import torch
    >>> from contrastkit.losses import AdaptiveTemperature
    >>> tau = AdaptiveTemperature(8).pairwise(torch.randn(3, 5, 8), torch.randn(3, 5, 8))
    >>> tau.shape, bool(((tau >= 1e-5) & (tau <= 2.0)).all())
    (torch.Size([3, 5, 5]), True)
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn


class AdaptiveTemperature(nn.Module):
    """Pair-wise temperature ``τ_ij = σ(⟨φ(z_i), φ(z_j)⟩)`` of AMCL Eq. (3).

    ``φ`` is one linear layer ``R^{d'} → R^{d'}`` (with bias), shared by all heads (the
    paper's footnote 1: separate from the projection heads). The squashing is the paper's
    ``σ(r) = ι/(1 + e^{r}) + η`` with ``η = lower`` and ``ι = upper - lower``, so τ lies in
    ``[lower, upper]``. Note that σ *decreases* in ``r``: pairs whose ``φ``-embeddings
    agree more get a lower temperature (a sharper, more confident similarity). It is
    computed as ``ι·sigmoid(-r) + η``, which never overflows, and clamped to the bounds
    against rounding.

    Args:
        dim: ``d'``, the width of the inputs.
        lower, upper: temperature bounds; the paper's [1e-5, 2] on small datasets
            ([1e-5, 5] on ImageNet and Tiny-ImageNet), §5.1.

    Call: ``za, zb: [..., d']`` (broadcastable) → ``τ: [...]`` for the row-aligned pairs;
    ``za[:, :, None]`` against ``zb[:, None]`` gives all pairs. :meth:`pairwise` gives the
    same matrix with one matmul instead of a ``[..., Na, Nb, d']`` product.
    """

    def __init__(self, dim: int, lower: float = 1e-5, upper: float = 2.0) -> None:
        super().__init__()
        if not isinstance(dim, int) or isinstance(dim, bool) or dim < 1:
            raise ValueError(f"dim must be an int >= 1, got {dim!r}")
        if not (0.0 < lower < upper and math.isfinite(upper)):
            raise ValueError(f"need finite bounds 0 < lower < upper, got {lower}, {upper}")
        self.dim = dim
        self.lower = float(lower)
        self.upper = float(upper)
        self.phi = nn.Linear(dim, dim)

    def _embed(self, z: Tensor, name: str) -> Tensor:
        if not isinstance(z, Tensor) or not z.is_floating_point():
            raise TypeError(f"{name} must be a floating-point tensor of shape [..., {self.dim}]")
        if z.dim() < 1 or z.shape[-1] != self.dim:
            raise ValueError(f"{name} must have shape [..., {self.dim}], got {tuple(z.shape)}")
        return self.phi(z)

    def squash(self, r: Tensor) -> Tensor:
        """``σ(r) = ι/(1 + e^r) + η``, decreasing in ``r``, inside ``[lower, upper]``."""
        tau = (self.upper - self.lower) * torch.sigmoid(-r) + self.lower
        return tau.clamp(self.lower, self.upper)

    def forward(self, za: Tensor, zb: Tensor) -> Tensor:
        a, b = self._embed(za, "za"), self._embed(zb, "zb")
        try:
            torch.broadcast_shapes(a.shape, b.shape)
        except RuntimeError:
            raise ValueError(
                f"za {tuple(za.shape)} and zb {tuple(zb.shape)} must broadcast over [..., d']"
            ) from None
        return self.squash((a * b).sum(dim=-1))

    def pairwise(self, za: Tensor, zb: Tensor) -> Tensor:
        """All pairs: ``za: [..., Na, d']``, ``zb: [..., Nb, d']`` → ``τ: [..., Na, Nb]``."""
        return self.squash(self._embed(za, "za") @ self._embed(zb, "zb").transpose(-1, -2))

    def channelwise(self, za: Tensor, zb: Tensor) -> Tensor:
        """Channel pairs (Eq. 2.3): ``za, zb: [..., N, d']`` → ``τ: [..., d', d']``.

        ``τ_lm = σ(R_lm)`` with ``R = φ(za)ᵀ φ(zb) / N``: ``φ`` acts on every sample's
        ``d'``-vector, as in the other rows, and the inner product of channel ``l`` of
        ``φ(za)`` with channel ``m`` of ``φ(zb)`` runs over the batch, as a mean, so ``R``
        does not grow with ``N``. (The paper applies ``φ: R^{d'} → R^{d'}`` to the
        batch-long channel vectors ``z_{l:} ∈ R^N``, which type-checks only when ``N = d'``.)
        For batch-centred inputs, as AMCL passes, ``φ(z) = Wz + b`` makes this
        ``R = W (zaᵀzb/N) Wᵀ + b bᵀ``: a learned function of the cross-correlation itself.
        """
        a, b = self._embed(za, "za"), self._embed(zb, "zb")
        if a.dim() < 2 or a.shape != b.shape:
            raise ValueError(
                f"za and zb must have the same shape [..., N, {self.dim}], "
                f"got {tuple(za.shape)} and {tuple(zb.shape)}"
            )
        return self.squash(a.transpose(-1, -2) @ b / a.shape[-2])

    def extra_repr(self) -> str:
        return f"dim={self.dim}, lower={self.lower}, upper={self.upper}"
