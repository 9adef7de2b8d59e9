"""The three settings of every loss whose negatives go through the fused statistics of
:mod:`.views` (the InfoNCE family, MACL, SupCon, LASCon, CACR, CMC), declared once:
their ranges, their defaults and their meaning."""

from __future__ import annotations

from typing import ClassVar

from torch import nn

from .functional._backend import DEFAULT_BACKEND
from .hparams import BACKEND, BLOCK_SIZE, FLAG, Param


class FusedSettings(nn.Module):
    """Base of the losses over fused negatives; every subclass takes these settings as
    keyword-only arguments.

    Args:
        block_size: compute the negatives' statistics ``block_size`` anchors at a time,
            recomputing in backward: extra memory O(rows·block_size) instead of O(rows²);
            same gradient. ``None`` (the default): one block.
        gather_distributed: under ``torch.distributed``, contrast this rank's anchors with
            every rank's embeddings (see :mod:`contrastkit.distributed` for the gradient
            rule).
        backend: ``"torch"``, ``"triton"`` (fused kernels: no ``[rows, rows]`` tensor,
            O(rows) extra memory, CUDA tensors) or ``"auto"`` (the default: Triton for CUDA
            batches of at least 16,384 rows where it imports, where an H200 measured it
            faster); see :mod:`contrastkit.losses.functional._backend`. Same loss and
            gradient to float32 rounding.
    """

    param_ranges: ClassVar[dict[str, Param]] = {
        "block_size": BLOCK_SIZE,
        "gather_distributed": FLAG,
        "backend": BACKEND,
    }

    def __init__(
        self,
        block_size: int | None = None,
        gather_distributed: bool = False,
        backend: str = DEFAULT_BACKEND,
    ) -> None:
        super().__init__()
        self.block_size = block_size
        self.gather_distributed = gather_distributed
        self.backend = backend

    @property
    def fused_setting(self) -> tuple[int | None, bool, str]:
        """``(block_size, gather_distributed, backend)``, in the order the functions of
        :mod:`.views` take them."""
        return (self.block_size, self.gather_distributed, self.backend)
