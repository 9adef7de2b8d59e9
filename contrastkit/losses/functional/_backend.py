"""Which implementation computes the fused Gram primitives: plain torch or Triton kernels.

``backend`` is ``"torch"`` (the matrix products of :mod:`._negatives`), ``"triton"`` (the
fused kernels of :mod:`._gram_triton`) or ``"auto"``, the default: Triton where it was
measured to win, torch otherwise. ``"auto"`` picks Triton for CUDA tensors of at least
:data:`AUTO_MIN_ROWS` rows (anchors) on a GPU with compute capability 8.0 or more (the
kernels' ``tf32x3`` products need its tensor cores) and :data:`AUTO_MIN_SHARED_MEMORY`
bytes of shared memory per block (the float32 backward kernel's tiles need 131,584 bytes
at d <= 128 and about 213 KiB at d = 256, compiled for sm_90: H100/H200 class; smaller
GPUs can run ``"triton"`` when asked for where the tiles fit) when the ``triton`` package
is installed and the kernels take the embeddings (:data:`DTYPES`, ``d <= MAX_DIM``). On an
H200 (docs/results/performance-log.md, third GPU run) Triton was faster than the torch path for
all seven losses measured at 16,384 pairs (32,768 rows) and used 64 MiB of extra memory
where the torch path used 4 GiB; at 4,096 pairs it was faster for five and slower for
SupCon and LASCon; below that both are bound by launches. The threshold sits between the
two measured sizes. Triton is optional (the ``gpu`` extra) and imported only when a call
resolves to it, so ``import contrastkit`` never needs it. ``"triton"`` on CPU tensors runs
only under Triton's interpreter (``TRITON_INTERPRET=1``, set before triton is imported; the
tests do so) and otherwise raises ``ValueError``.

Example:
    >>> import torch
    >>> resolve("auto", torch.zeros(2, 3))
    'torch'
"""

from __future__ import annotations

import torch
from torch import Tensor

from ... import _optional
from ..._optional import KERNEL_BACKENDS, triton_interpreted
from ...engine.device import cuda_capability, cuda_shared_memory

DEFAULT_BACKEND = "auto"
AUTO_MIN_ROWS = 16_384  # anchors' rows from which "auto" picks Triton (see above)
AUTO_MIN_SHARED_MEMORY = 232_448  # bytes per block "auto" asks of the GPU (H100/H200)
# What the kernels take: one [block, d] tile holds a whole embedding (d <= MAX_DIM).
DTYPES = (torch.float32, torch.bfloat16, torch.float16)
MAX_DIM = 256


def resolve(backend: str, anchors: Tensor, rows: int | None = None) -> str:
    """``"torch"`` or ``"triton"``: the implementation ``backend`` means for ``anchors``
    (``rows`` anchors if given, e.g. the 2N rows that two ``[N, d]`` views make)."""
    if backend == "auto":  # the default: two attribute reads for CPU tensors
        rows = anchors.shape[0] if rows is None else rows
        large = anchors.is_cuda and rows >= AUTO_MIN_ROWS and torch.version.hip is None
        usable = large and _optional.installed("triton") and _fits(anchors.device)
        return "triton" if usable and not _unfit(anchors) else "torch"
    if backend == "torch":
        return backend
    if backend not in KERNEL_BACKENDS:
        choices = ", ".join(map(repr, KERNEL_BACKENDS))
        raise ValueError(f"backend must be one of {choices}, got {backend!r}")
    unfit = _unfit(anchors)
    if backend == "triton" and unfit:
        raise ValueError(f"backend='triton' {unfit}")
    return backend


def _fits(device: torch.device) -> bool:
    """Whether the CUDA ``device`` has compute capability >= 8.0 and
    :data:`AUTO_MIN_SHARED_MEMORY` bytes of shared memory per block."""
    return cuda_capability(device) >= (8, 0) and cuda_shared_memory(device) >= (
        AUTO_MIN_SHARED_MEMORY
    )


def _unfit(anchors: Tensor) -> str:
    """Why the kernels cannot take ``anchors`` ("" when they can)."""
    if not (anchors.is_cuda or (anchors.is_cpu and triton_interpreted())):
        return (
            f"needs CUDA tensors, got {anchors.device.type} tensors "
            "(on CPU only under Triton's interpreter, TRITON_INTERPRET=1)"
        )
    if torch.version.hip is not None:  # ROCm: its Triton has no tf32x3 products
        return "needs an NVIDIA GPU (the kernels' float32 products are tf32x3; this is ROCm)"
    if anchors.dtype not in DTYPES:
        return f"takes float32, bfloat16 or float16 embeddings, got {anchors.dtype}"
    if anchors.shape[-1] > MAX_DIM:
        return f"takes embeddings of d <= {MAX_DIM} features, got d = {anchors.shape[-1]}"
    return ""
