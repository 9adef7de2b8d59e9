"""Device selection and moving arbitrary objects to a device.

``select_device`` turns a user's spec into a :class:`torch.device`:

* ``"auto"``: the first available of CUDA, Apple MPS, CPU;
* ``"cpu"``, ``"mps"``;
* ``"cuda"``: under ``torchrun`` (``WORLD_SIZE`` > 1) the GPU named by ``LOCAL_RANK``
  (one process per GPU), otherwise GPU 0; ``"cuda:N"``: GPU ``N``.

An unavailable device is an error naming what was asked for and why it cannot be had,
never a silent fallback to the CPU.

Also what else depends on the device's type: the default memory format
(:func:`channels_last_default`), fp16's loss scaler (:func:`grad_scaler`), random-number
states and the hardware a run records.
"""

from __future__ import annotations

import os
import resource
import sys
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import torch
from torch import nn

DEVICES = ("auto", "cpu", "cuda", "cuda:N", "mps")


def _mps_available() -> bool:
    mps = getattr(torch.backends, "mps", None)
    return bool(mps is not None and mps.is_available())


def select_device(spec: str | torch.device = "auto") -> torch.device:
    """The :class:`torch.device` for ``spec`` (one of :data:`DEVICES`); ``ValueError`` if it
    is malformed or not available on this machine."""
    text = str(spec).strip().lower()
    if text == "auto":
        if torch.cuda.is_available():
            return select_device("cuda")
        return torch.device("mps") if _mps_available() else torch.device("cpu")
    try:
        device = torch.device(text)
    except RuntimeError:
        device = None
    if device is None or device.type not in ("cpu", "cuda", "mps"):
        raise ValueError(f"device must be one of {', '.join(DEVICES)}, got {spec!r}")
    if device.type == "cpu":
        return torch.device("cpu")
    if device.type == "mps":
        if not _mps_available():
            raise ValueError(
                "device 'mps' requested but torch.backends.mps.is_available() is False"
            )
        return torch.device("mps")
    if not torch.cuda.is_available():
        build = f"CUDA {torch.version.cuda}" if torch.version.cuda else "a CPU-only build"
        raise ValueError(
            f"device {spec!r} requested but torch.cuda.is_available() is False "
            f"(torch {torch.__version__}, {build}); use --device cpu or auto"
        )
    index = device.index
    if index is None:
        index = int(os.environ.get("LOCAL_RANK", "0")) if _world() > 1 else 0
    count = torch.cuda.device_count()
    if not 0 <= index < count:
        raise ValueError(
            f"device {spec!r} asks for GPU {index} but only {count} GPU(s) are visible"
        )
    return torch.device("cuda", index)


def _world() -> int:
    return int(os.environ.get("WORLD_SIZE", "1"))


def to_device(obj: Any, device: torch.device, non_blocking: bool = False) -> Any:
    """``obj`` on ``device``: tensors and modules (``.to``), any object with a ``.to(device)``
    method (a graph batch, say), and lists / tuples / dicts of these, recursively.
    Anything else (ints, strings, ``None``) is returned unchanged."""
    if isinstance(obj, torch.Tensor):
        return obj.to(device, non_blocking=non_blocking)
    if isinstance(obj, torch.nn.Module):
        return obj.to(device)
    if isinstance(obj, Mapping):
        return type(obj)({k: to_device(v, device, non_blocking) for k, v in obj.items()})
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):  # namedtuple
        return type(obj)(*(to_device(v, device, non_blocking) for v in obj))
    if isinstance(obj, list | tuple):
        return type(obj)(to_device(v, device, non_blocking) for v in obj)
    to = getattr(obj, "to", None)
    return to(device) if callable(to) else obj


def host_floats(values: Sequence[torch.Tensor | float]) -> list[float]:
    """``values`` as floats, the tensors among them (0-d, one dtype and device) read in one
    copy: per-step values a loop kept on the device, read once instead of once a step."""
    tensors = [v for v in values if isinstance(v, torch.Tensor)]
    read = iter(torch.stack(tensors).tolist() if tensors else ())
    return [next(read) if isinstance(v, torch.Tensor) else float(v) for v in values]


def cat_rows(outputs: Iterable[torch.Tensor], rows: int) -> torch.Tensor:
    """``torch.cat`` of ``outputs`` (chunks along dim 0, ``rows`` in all), each copied into
    the result as it comes. A module compiled in a mode that replays CUDA graphs
    (``reduce-overhead``) overwrites its last outputs at its next call, and torch raises on
    reading them after that, so a list of a compiled encoder's outputs cannot wait for
    ``torch.cat``; this copies each chunk before the next is made."""
    out: torch.Tensor | None = None
    start = 0
    for part in outputs:
        if out is None:
            out = part.new_empty((rows, *part.shape[1:]))
        out[start : start + len(part)] = part
        start += len(part)
    if out is None or start != rows:
        raise ValueError(f"cat_rows: the outputs hold {start} rows, expected {rows}")
    return out


_CAPABILITY: dict[torch.device, tuple[int, int]] = {}
_SHARED_MEMORY: dict[torch.device, int] = {}


def channels_last_default(device: torch.device, model: nn.Module) -> bool:
    """The engine's ``channels_last`` when none is given: on for a CUDA device and a model
    with a ``Conv2d`` (cuDNN's NHWC kernels; measured on an H200, a bf16 ResNet-18 SimCLR
    step gained 36 %, ``docs/results/performance-log.md``), off elsewhere (CPU and MPS: not
    measured to gain)."""
    return device.type == "cuda" and any(isinstance(m, nn.Conv2d) for m in model.modules())


def grad_scaler(device: torch.device) -> Any:
    """``torch.amp.GradScaler`` for ``device`` (torch ≥ 2.3; CUDA's own class before)."""
    if hasattr(torch.amp, "GradScaler"):
        return torch.amp.GradScaler(device.type)
    if device.type == "cuda":
        return torch.cuda.amp.GradScaler()
    raise ValueError(f"precision fp16 on {device.type} needs torch >= 2.3 (torch.amp.GradScaler)")


def cuda_capability(device: torch.device) -> tuple[int, int]:
    """The compute capability of the CUDA ``device``, asked of the driver once per device
    (what a per-call choice of kernels, such as a backend's ``"auto"``, compares)."""
    capability = _CAPABILITY.get(device)
    if capability is None:
        capability = _CAPABILITY[device] = torch.cuda.get_device_capability(device)
    return capability


def cuda_shared_memory(device: torch.device) -> int:
    """Bytes of shared memory one block of the CUDA ``device`` may opt in to (H100/H200:
    232,448; A100: 166,912; most GeForce and L4/L40 cards: 101,376), asked once per device;
    ``shared_memory_per_block`` where torch does not report the opt-in size."""
    size = _SHARED_MEMORY.get(device)
    if size is None:
        props = torch.cuda.get_device_properties(device)
        optin = getattr(props, "shared_memory_per_block_optin", None)
        size = _SHARED_MEMORY[device] = int(optin or props.shared_memory_per_block)
    return size


def device_info(device: torch.device) -> dict[str, Any]:
    """What a run's ``final.json`` records about the hardware: device, GPU name, torch
    version, peak device memory (CUDA: ``max_memory_allocated``; CPU: the process's peak
    resident set size, which includes everything the process allocated)."""
    info: dict[str, Any] = {"device": str(device), "torch_version": torch.__version__}
    if device.type == "cuda":
        info["gpu_name"] = torch.cuda.get_device_name(device)
        info["peak_device_memory_mb"] = torch.cuda.max_memory_allocated(device) / 2**20
    else:
        info["gpu_name"] = None
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux, B on macOS
        info["peak_device_memory_mb"] = rss / (2**20 if sys.platform == "darwin" else 2**10)
    return info


def rng_state(device: torch.device) -> dict[str, torch.Tensor]:
    """The global RNG states a checkpoint keeps: the CPU's, and the device's on CUDA/MPS."""
    state = {"torch_rng": torch.get_rng_state()}
    if device.type == "cuda":
        state["cuda_rng"] = torch.cuda.get_rng_state(device)
    elif device.type == "mps":
        state["mps_rng"] = torch.mps.get_rng_state()
    return state


def set_rng_state(state: Mapping[str, Any], device: torch.device) -> None:
    """Restore what :func:`rng_state` saved (a device state is restored on its device only)."""
    torch.set_rng_state(state["torch_rng"])
    if device.type == "cuda" and "cuda_rng" in state:
        torch.cuda.set_rng_state(state["cuda_rng"], device)
    elif device.type == "mps" and "mps_rng" in state:
        torch.mps.set_rng_state(state["mps_rng"])
