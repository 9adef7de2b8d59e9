"""A FIFO queue of embeddings kept in a buffer (MoCo's negatives, NNCLR's support set)."""

from __future__ import annotations

import torch
from torch import Tensor


@torch.no_grad()
def fifo_enqueue(queue: Tensor, ptr: Tensor, keys: Tensor) -> None:
    """Write ``keys`` at ``ptr`` into ``queue`` in place, wrapping around, and advance
    ``ptr`` (a 0-d long tensor). The sample axis is the second-to-last of both (``[Q, d]``
    or ``[C, Q, d]``); when more keys than rows arrive, the last ``Q`` are kept. The queue
    keeps its own dtype (float32): keys computed under autocast are cast to it."""
    size, n = queue.shape[-2], keys.shape[-2]
    idx = (ptr + torch.arange(n, device=queue.device)) % size
    queue[..., idx[-size:], :] = keys[..., -size:, :].to(queue.dtype)
    ptr.copy_((ptr + n) % size)
