"""The encoder of tabular rows: :class:`MLPEncoder`."""

from __future__ import annotations

from typing import Any

from torch import Tensor, nn


class MLPEncoder(nn.Module):
    """Encoder of tabular rows ``[B, F]``: (Linear-BN-ReLU) ×2 at ``width``, then
    Linear-BN-ReLU to ``feature_dim``, the same output block as the conv encoders."""

    def __init__(self, in_dim: int, feature_dim: int = 128, width: int = 64) -> None:
        super().__init__()
        self.feature_dim = feature_dim
        self.in_dim = in_dim
        layers: list[nn.Module] = []
        for a, b in ((in_dim, width), (width, width), (width, feature_dim)):
            layers += [nn.Linear(a, b, bias=False), nn.BatchNorm1d(b), nn.ReLU(inplace=True)]
        self.net = nn.Sequential(*layers)

    def forward(self, x: Tensor) -> Tensor:
        if x.dim() != 2 or x.shape[1] != self.in_dim:
            raise ValueError(f"x must have shape [B, {self.in_dim}], got {tuple(x.shape)}")
        return self.net(x)


def mlp_args(module: nn.Module) -> dict[str, Any]:
    """The constructor arguments that rebuild an :class:`MLPEncoder` (its export spec)."""
    return {
        "in_dim": module.in_dim,
        "feature_dim": module.feature_dim,
        "width": module.net[0].out_features,
    }
