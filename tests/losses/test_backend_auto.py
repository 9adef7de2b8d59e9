"""``backend="auto"``, the default: Triton only where the GPU measurements of issue #38 say
it wins (large batches of CUDA embeddings on compute capability >= 8.0 with an H100's
shared memory per block, triton installed, embeddings the kernels take), the torch path
everywhere else."""

from __future__ import annotations

import pytest
import torch

from contrastkit import _optional
from contrastkit.losses.functional import _backend


class _SaysCuda(torch.Tensor):
    """A CPU tensor that reports ``is_cuda``: the policy reads only that, the shape and the
    dtype (the device's capability and shared memory are asked through
    ``cuda_capability`` and ``cuda_shared_memory``)."""

    @property
    def is_cuda(self) -> bool:  # type: ignore[override]
        return True


def _rows(n: int, d: int = 8, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.empty(n, d, dtype=dtype).as_subclass(_SaysCuda)


@pytest.fixture
def gpu(monkeypatch: pytest.MonkeyPatch) -> dict[str, bool]:
    """Triton installed on an H100 (sm_90, 232,448 bytes of shared memory per block),
    unless a test says otherwise."""
    state = {"installed": True, "capability": (9, 0), "shared": 232_448}
    monkeypatch.setattr(_optional, "installed", lambda package: state["installed"])
    monkeypatch.setattr(_backend, "cuda_capability", lambda device: state["capability"])
    monkeypatch.setattr(_backend, "cuda_shared_memory", lambda device: state["shared"])
    return state


def test_auto_is_the_default_and_picks_triton_from_the_threshold(gpu: dict) -> None:
    assert _backend.DEFAULT_BACKEND == "auto"
    big = _backend.AUTO_MIN_ROWS
    assert _backend.resolve("auto", _rows(big - 1)) == "torch"
    assert _backend.resolve("auto", _rows(big)) == "triton"
    assert _backend.resolve("auto", _rows(big, dtype=torch.bfloat16)) == "triton"
    assert _backend.resolve("auto", torch.empty(big, 8)) == "torch"  # a CPU tensor


@pytest.mark.parametrize(
    "why", ["not installed", "older GPU", "A100's shared memory", "float64", "d > 256"]
)
def test_auto_keeps_the_torch_path_where_triton_cannot_or_was_not_measured(
    gpu: dict, why: str
) -> None:
    rows = _rows(_backend.AUTO_MIN_ROWS)
    if why == "not installed":
        gpu["installed"] = False
    elif why == "older GPU":
        gpu["capability"] = (7, 5)
    elif why == "A100's shared memory":  # the float32 tiles at d = 256 need ~213 KiB
        gpu["capability"], gpu["shared"] = (8, 0), 166_912
    elif why == "float64":
        rows = _rows(_backend.AUTO_MIN_ROWS, dtype=torch.float64)
    else:
        rows = _rows(_backend.AUTO_MIN_ROWS, d=_backend.MAX_DIM + 1)
    assert _backend.resolve("auto", rows) == "torch"
    assert _backend.resolve("torch", rows) == "torch"


def test_hcl_auto_keeps_the_torch_path() -> None:
    """HCL's ``"auto"`` is the torch path at every size (one product for both of its
    log-sum-exps; the kernels, a pass each, measured slower on an H200); ``"triton"``
    stays available."""
    from contrastkit.losses.infonce import HCL

    assert HCL().backend == "torch" and HCL(backend="triton").backend == "triton"
