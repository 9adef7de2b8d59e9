"""C independent projection heads evaluated in one batched pass (AMCL §4.1, Fig. 2).

Example:
    >>> import torch
    >>> heads = MultiHeadProjector(in_dim=64, out_dim=32, heads=3)
    >>> heads(torch.randn(8, 64)).shape
    torch.Size([3, 8, 32])
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn


def _check_size(value: object, name: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{name} must be an int >= 1, got {value!r}")
    return value


class MultiHeadProjector(nn.Module):
    """``C`` independent two-layer MLPs ``g^c(h) = W2^c·relu(W1^c·h + b1^c) + b2^c``.

    The heads share no parameters; their weights are stacked (``[C, in, hidden]`` and
    ``[C, hidden, out]``) so all heads run as one batched matmul instead of a loop.
    Each head is initialised like ``nn.Linear`` (uniform in ``±1/sqrt(fan_in)``), with
    independent draws, so heads start different.

    Args:
        in_dim: ``d``, the encoder feature width.
        out_dim: ``d'``; 128 is SimCLR's projection size, which AMCL keeps ("architecture
            of the projection head remains consistent with the original", §5.1).
        heads: ``C``; 3 is the paper's choice (Fig. 4, left: 3–5 best, 3 for cost).
        hidden: hidden width; ``None`` means ``in_dim`` (SimCLR's head).

    Call: ``h: [N, in_dim]`` (every head sees the same input) returns ``[C, N, out_dim]``;
    ``h: [C, N, in_dim]`` feeds slice ``c`` to head ``c`` (AMCL's per-head predictors).
    """

    def __init__(
        self, in_dim: int, out_dim: int = 128, heads: int = 3, hidden: int | None = None
    ) -> None:
        super().__init__()
        self.in_dim = _check_size(in_dim, "in_dim")
        self.out_dim = _check_size(out_dim, "out_dim")
        self.heads = _check_size(heads, "heads")
        self.hidden = in_dim if hidden is None else _check_size(hidden, "hidden")
        self.w1 = nn.Parameter(torch.empty(heads, in_dim, self.hidden))
        self.b1 = nn.Parameter(torch.empty(heads, 1, self.hidden))
        self.w2 = nn.Parameter(torch.empty(heads, self.hidden, out_dim))
        self.b2 = nn.Parameter(torch.empty(heads, 1, out_dim))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        layers = ((self.w1, self.b1, self.in_dim), (self.w2, self.b2, self.hidden))
        for weight, bias, fan_in in layers:
            bound = 1.0 / math.sqrt(fan_in)
            nn.init.uniform_(weight, -bound, bound)
            nn.init.uniform_(bias, -bound, bound)

    def forward(self, h: Tensor) -> Tensor:
        shapes = f"[N, {self.in_dim}] or [{self.heads}, N, {self.in_dim}]"
        if not isinstance(h, Tensor) or not h.is_floating_point():
            got = h.dtype if isinstance(h, Tensor) else type(h).__name__
            raise TypeError(f"h must be a floating-point tensor of shape {shapes}, got {got}")
        shared = h.dim() == 2
        per_head = h.dim() == 3 and h.shape[0] == self.heads
        if h.shape[-1] != self.in_dim or not (shared or per_head):
            raise ValueError(f"h must have shape {shapes}, got {tuple(h.shape)}")
        x = h.unsqueeze(0).expand(self.heads, -1, -1) if shared else h
        x = x.to(self.w1.dtype)  # half-precision features (an autocast encoder) meet fp32 heads
        x = torch.relu(torch.baddbmm(self.b1, x, self.w1))
        return torch.baddbmm(self.b2, x, self.w2)

    def extra_repr(self) -> str:
        sizes = f"in_dim={self.in_dim}, out_dim={self.out_dim}"
        return f"{sizes}, heads={self.heads}, hidden={self.hidden}"
