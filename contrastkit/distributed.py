"""Cross-process gathering for batch-contrastive losses (``torch.distributed``).

The rule every loss with ``gather_distributed=True`` follows: embeddings are all-gathered
*with* gradients; each rank computes its loss for its own anchors against the global keys
(the InfoNCE family, SupCon, LASCon, CACR) or the loss of the whole global batch (Barlow
Twins, VICReg, alignment/uniformity, CMC, AMCL and the gradient-paradigm losses); the gather's
backward sums every rank's gradient and keeps this rank's slice. The gradient reaching a
rank's local embeddings is therefore ``world_size ×`` the single-process gradient of the
concatenated batch, and DDP's division by ``world_size`` makes parameter gradients equal to
single-process training on the concatenated batch. Labels and positive indices are offset
by ``rank × local batch``; local batch sizes must be equal on every rank (for CPU
tensors this is checked: a ``ValueError`` on every rank).

Without an initialised process group every function here is the identity.

Hangs are bounded: the process group gets a timeout (:data:`DEFAULT_TIMEOUT_S`, or
``CONTRASTKIT_DDP_TIMEOUT`` seconds, or ``contrastkit --ddp-timeout``) instead of
torch's 30 minutes, so a frozen or lost rank makes the others fail with an error after
that long; a separate gloo group with a long timeout serves the final barrier of
:func:`shutdown`, where the other ranks wait for rank 0's evaluation.

:class:`SyncBatchNorm` is batch normalisation over every rank's samples on any device
(``torch.nn.SyncBatchNorm`` runs on GPUs only); :func:`convert_sync_batchnorm` swaps it in.
"""

from __future__ import annotations

import datetime
import gc
import inspect
import os

import torch
import torch.distributed as dist
from torch import Tensor, nn

DEFAULT_TIMEOUT_S = 600.0  # a collective waiting longer than this fails (torch: 30 min)
TIMEOUT_ENV = "CONTRASTKIT_DDP_TIMEOUT"
_FINISH_TIMEOUT = datetime.timedelta(hours=12)  # the final barrier waits for evaluation
_finish_group: list[dist.ProcessGroup] = []


def timeout_seconds() -> float:
    """The process-group timeout: ``CONTRASTKIT_DDP_TIMEOUT`` seconds or the default."""
    text = os.environ.get(TIMEOUT_ENV, "")
    try:
        value = float(text) if text.strip() else DEFAULT_TIMEOUT_S
    except ValueError:
        raise ValueError(f"{TIMEOUT_ENV} must be a number of seconds, got {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise ValueError(f"{TIMEOUT_ENV} must be a finite number of seconds > 0, got {text!r}")
    return value


def init_from_env(backend: str = "gloo") -> bool:
    """Join the process group ``torchrun`` describes (``WORLD_SIZE`` > 1 in the
    environment), once, with the timeout of :func:`timeout_seconds`; return whether
    training is distributed."""
    if int(os.environ.get("WORLD_SIZE", "1")) > 1 and not dist.is_initialized():
        timeout = datetime.timedelta(seconds=timeout_seconds())
        dist.init_process_group(backend, timeout=timeout)
        _finish_group.append(dist.new_group(backend="gloo", timeout=_FINISH_TIMEOUT))
    return is_distributed()


def join(device: torch.device) -> tuple[int, int]:
    """``(world size, rank)`` of this process: :func:`init_from_env` with NCCL on CUDA and
    gloo elsewhere; ``(1, 0)`` outside ``torchrun``."""
    backend = "nccl" if device.type == "cuda" else "gloo"
    return (world_size(), rank()) if init_from_env(backend) else (1, 0)


def wrap_ddp(
    model: nn.Module, device: torch.device, sync_batchnorm: bool
) -> nn.parallel.DistributedDataParallel:
    """``model`` under DDP (one device per process on CUDA); with ``sync_batchnorm`` its
    batch norm layers first normalise over the global batch (``torch.nn.SyncBatchNorm`` on
    CUDA, :class:`SyncBatchNorm` elsewhere). The returned wrapper shares ``model``'s
    modules, which are converted in place."""
    if sync_batchnorm:
        if device.type == "cuda":
            model = nn.SyncBatchNorm.convert_sync_batchnorm(model)
        else:
            model = convert_sync_batchnorm(model)
    return nn.parallel.DistributedDataParallel(
        model, device_ids=[device.index] if device.type == "cuda" else None
    )


def shutdown() -> None:
    """Leave the process group together: every rank waits for the others (rank 0 may still
    be evaluating) and frees its DDP reducer before the group is destroyed. A rank that
    simply exits while its peers hold the group open can abort in gloo's teardown."""
    if dist.is_available() and dist.is_initialized():
        gc.collect()
        dist.barrier(group=_finish_group[0] if _finish_group else None)
        _finish_group.clear()
        dist.destroy_process_group()


def accepts_gather(loss_cls: type) -> bool:
    """Whether a loss class takes ``gather_distributed=``."""
    return "gather_distributed" in inspect.signature(loss_cls).parameters


def is_distributed() -> bool:
    return dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1


def world_size() -> int:
    return dist.get_world_size() if is_distributed() else 1


def rank() -> int:
    return dist.get_rank() if is_distributed() else 0


def _all_parts(x: Tensor) -> list[Tensor]:
    """Buffers for every rank's ``x``. Ranks must hold equal row counts: gloo aborts the
    process on unequal ones, and NCCL's result is undefined. CPU tensors (gloo) are
    checked first, in one collective of the counts, so that every rank raises a
    ``ValueError`` instead; other devices are not, to keep the host from waiting on them."""
    world = dist.get_world_size()
    if x.is_cpu:
        counts = [torch.zeros((), dtype=torch.long) for _ in range(world)]
        dist.all_gather(counts, torch.tensor(x.shape[0]))
        if len({int(c) for c in counts}) > 1:
            rows = ", ".join(str(int(c)) for c in counts)
            raise ValueError(f"gathering across ranks needs equal batches, got rows {rows} by rank")
    return [torch.empty_like(x) for _ in range(world)]


class _GatherWithGrad(torch.autograd.Function):
    """``cat`` of every rank's ``x`` (rank order). Its backward is :class:`_RankRows`, the
    adjoint map written as a Function of its own, whose backward is this gather again: so
    derivatives of any order (``create_graph=True``, e.g. a gradient penalty) stay exact."""

    @staticmethod
    def forward(ctx, x: Tensor) -> Tensor:  # type: ignore[override]
        parts = _all_parts(x)
        dist.all_gather(parts, x.contiguous())
        ctx.rows = x.shape[0]
        return torch.cat(parts)

    @staticmethod
    def backward(ctx, grad: Tensor) -> Tensor:  # type: ignore[override]
        return _RankRows.apply(grad, ctx.rows)


class _RankRows(torch.autograd.Function):
    """This rank's ``rows`` rows of the sum over ranks of ``y`` (the adjoint of
    :class:`_GatherWithGrad`, whose forward is this map's adjoint in turn)."""

    @staticmethod
    def forward(ctx, y: Tensor, rows: int) -> Tensor:  # type: ignore[override]
        total = y.contiguous().clone()
        dist.all_reduce(total, op=dist.ReduceOp.SUM)
        start = dist.get_rank() * rows
        return total[start : start + rows]

    @staticmethod
    def backward(ctx, grad: Tensor) -> tuple[Tensor, None]:  # type: ignore[override]
        return _GatherWithGrad.apply(grad), None


def gather_with_grad(x: Tensor) -> Tensor:
    """``cat`` of ``x`` over ranks (rank order); the backward sums over ranks, keeps ours."""
    return _GatherWithGrad.apply(x) if is_distributed() else x


def gather_all_with_grad(*xs: Tensor, enabled: bool = True) -> tuple[Tensor, ...]:
    """:func:`gather_with_grad` of each tensor when ``enabled``: the inputs of a loss that
    every rank computes on the global batch (Barlow Twins, VICReg, the paradigm losses)."""
    return tuple(gather_with_grad(x) for x in xs) if enabled else xs


@torch.no_grad()
def gather(x: Tensor) -> Tensor:
    """``cat`` of ``x`` over ranks without gradient (labels, MoCo keys for the queue)."""
    if not is_distributed():
        return x
    parts = _all_parts(x)
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


class _AllReduceSum(torch.autograd.Function):
    """Sum over ranks; the backward sums the incoming gradients over ranks too, by this
    Function (the map is its own adjoint), so higher derivatives stay exact."""

    @staticmethod
    def forward(ctx, x: Tensor) -> Tensor:  # type: ignore[override]
        out = x.contiguous().clone()
        dist.all_reduce(out, op=dist.ReduceOp.SUM)
        return out

    @staticmethod
    def backward(ctx, grad: Tensor) -> Tensor:  # type: ignore[override]
        return _AllReduceSum.apply(grad)


def _all_reduce_sum(x: Tensor) -> Tensor:
    return _AllReduceSum.apply(x)


class SyncBatchNorm(nn.modules.batchnorm._BatchNorm):
    """Batch normalisation whose training statistics cover every rank's samples.

    In training mode under an initialised process group the per-channel mean and biased
    variance are those of the concatenated global batch (two differentiable all-reduces:
    the sums, then the squared deviations from the global mean), so DDP training equals
    single-process training on the global batch; the running statistics are updated as
    ``nn.BatchNorm*`` does (unbiased variance, ``momentum`` or the cumulative average for
    ``momentum=None``). Otherwise it is plain batch normalisation. Input ``[N, C, *]``;
    parameters and buffers are those of ``nn.BatchNorm*``, so state dicts load either way.
    """

    def _check_input_dim(self, x: Tensor) -> None:
        if x.dim() < 2:
            raise ValueError(f"input must have shape [N, C, *], got {tuple(x.shape)}")

    def forward(self, x: Tensor) -> Tensor:
        self._check_input_dim(x)
        if not (self.training and is_distributed()):
            return super().forward(x)
        dims = [0, *range(2, x.dim())]
        shape = [1, -1] + [1] * (x.dim() - 2)
        count = _all_reduce_sum(x.new_tensor(float(x.numel() // x.shape[1])))
        mean = _all_reduce_sum(x.sum(dims)) / count
        centred = x - mean.view(shape)
        var = _all_reduce_sum(centred.pow(2).sum(dims)) / count
        if self.track_running_stats:
            self._update_running_stats(mean.detach(), var.detach(), float(count))
        y = centred * torch.rsqrt(var + self.eps).view(shape)
        if self.affine:
            y = y * self.weight.view(shape) + self.bias.view(shape)
        return y

    @torch.no_grad()
    def _update_running_stats(self, mean: Tensor, var: Tensor, count: float) -> None:
        self.num_batches_tracked.add_(1)  # type: ignore[union-attr]
        momentum = self.momentum
        if momentum is None:
            momentum = 1.0 / float(self.num_batches_tracked)  # type: ignore[arg-type]
        unbiased = var * count / max(count - 1.0, 1.0)
        self.running_mean.lerp_(mean, momentum)  # type: ignore[union-attr]
        self.running_var.lerp_(unbiased, momentum)  # type: ignore[union-attr]


def convert_sync_batchnorm(module: nn.Module) -> nn.Module:
    """``module`` with every ``nn.BatchNorm1d/2d/3d`` replaced by :class:`SyncBatchNorm`
    carrying the same parameters and buffers (returned; children are replaced in place)."""
    if isinstance(module, nn.modules.batchnorm._BatchNorm) and not isinstance(
        module, SyncBatchNorm
    ):
        like = next(iter([*module.parameters(), *module.buffers()]), None)
        sync = SyncBatchNorm(
            module.num_features,
            module.eps,
            module.momentum,
            module.affine,
            module.track_running_stats,
            device=None if like is None else like.device,
            dtype=None if like is None or not like.is_floating_point() else like.dtype,
        )
        sync.load_state_dict(module.state_dict())
        for name, param in sync.named_parameters():
            param.requires_grad_(getattr(module, name).requires_grad)  # e.g. a momentum encoder
        sync.train(module.training)
        return sync
    for name, child in module.named_children():
        setattr(module, name, convert_sync_batchnorm(child))
    return module
