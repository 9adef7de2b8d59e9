"""Cross-process gathering for batch-contrastive losses (``torch.distributed``).

The rule every loss with ``gather_distributed=True`` follows: embeddings are all-gathered
*with* gradients; each rank computes its loss for its own anchors against the global keys
(or, for batch-statistic losses such as Barlow Twins, the global loss); the gather's
backward sums every rank's gradient and keeps this rank's slice. The gradient reaching a
rank's local embeddings is therefore ``world_size ×`` the single-process gradient of the
concatenated batch, and DDP's division by ``world_size`` makes parameter gradients equal to
single-process training on the concatenated batch. Labels and positive indices are offset
by ``rank × local batch``; local batch sizes must be equal on every rank.

Without an initialised process group every function here is the identity.
"""

from __future__ import annotations

import inspect
import os

import torch
import torch.distributed as dist
from torch import Tensor


def init_from_env(backend: str = "gloo") -> bool:
    """Join the process group ``torchrun`` describes (``WORLD_SIZE`` > 1 in the
    environment), once; return whether training is distributed."""
    if int(os.environ.get("WORLD_SIZE", "1")) > 1 and not dist.is_initialized():
        dist.init_process_group(backend)
    return is_distributed()


def accepts_gather(loss_cls: type) -> bool:
    """Whether a loss class takes ``gather_distributed=``."""
    return "gather_distributed" in inspect.signature(loss_cls).parameters


def is_distributed() -> bool:
    return dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1


def world_size() -> int:
    return dist.get_world_size() if is_distributed() else 1


def rank() -> int:
    return dist.get_rank() if is_distributed() else 0


class _GatherWithGrad(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: Tensor) -> Tensor:  # type: ignore[override]
        parts = [torch.empty_like(x) for _ in range(dist.get_world_size())]
        dist.all_gather(parts, x.contiguous())
        ctx.rows = x.shape[0]
        return torch.cat(parts)

    @staticmethod
    def backward(ctx, grad: Tensor) -> Tensor:  # type: ignore[override]
        grad = grad.contiguous().clone()
        dist.all_reduce(grad, op=dist.ReduceOp.SUM)
        start = dist.get_rank() * ctx.rows
        return grad[start : start + ctx.rows]


def gather_with_grad(x: Tensor) -> Tensor:
    """``cat`` of ``x`` over ranks (rank order); the backward sums over ranks, keeps ours."""
    return _GatherWithGrad.apply(x) if is_distributed() else x


@torch.no_grad()
def gather(x: Tensor) -> Tensor:
    """``cat`` of ``x`` over ranks without gradient (labels, MoCo keys for the queue)."""
    if not is_distributed():
        return x
    parts = [torch.empty_like(x) for _ in range(dist.get_world_size())]
    dist.all_gather(parts, x.contiguous())
    return torch.cat(parts)


@torch.no_grad()
def global_mean(x: Tensor) -> Tensor:
    """Mean of ``x`` over all ranks' elements (equal sizes), detached."""
    mean = x.detach().mean()
    if is_distributed():
        mean = mean.clone()
        dist.all_reduce(mean, op=dist.ReduceOp.SUM)
        mean /= dist.get_world_size()
    return mean
