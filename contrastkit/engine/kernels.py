"""What a piece of code asks of the device, counted on any device (issue #38).

On a GPU, small batches are bound by launches and by the host waiting for the device, not
by arithmetic. Both show without a GPU:

* :class:`KernelCounter` counts the aten operators dispatched inside a ``with`` block
  (a :class:`~torch.utils._python_dispatch.TorchDispatchMode`), by overload name, and
  splits off the views (:data:`VIEWS`: operators that only re-describe memory and launch
  nothing). The count is the same on every device, so a CPU run pins a GPU's launches.
* :class:`BlockingTransfers` records the host-to-device copies that block (a
  :class:`~torch.overrides.TorchFunctionMode`): ``torch.tensor``/``as_tensor``/
  ``new_tensor`` with a device other than the CPU, and ``Tensor.to``/``copy_``/``cuda`` of
  a CPU tensor without ``non_blocking=True``. On CUDA each of these synchronises the
  stream: the host waits for all the queued work. Run the code on the ``meta`` device to
  see them without a GPU.

Usage::

    with KernelCounter() as counter:
        loss(z1, z2).backward()
    kernels, views = counter.split()
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

# aten operators that return a view of their input or metadata only: nothing is launched
VIEWS = frozenset(
    {
        "alias",
        "as_strided",
        "detach",
        "diagonal",
        "expand",
        "permute",
        "select",
        "slice",
        "split",
        "squeeze",
        "t",
        "transpose",
        "unbind",
        "unsqueeze",
        "view",
        "_unsafe_view",
        "_reshape_alias",
    }
)


def is_view(op: str) -> bool:
    """Whether the aten overload name ``op`` (``"aten.slice.Tensor"``) is a view."""
    return op.split(".")[1] in VIEWS


def on_device(device: torch.device | None, wanted: torch.device) -> bool:
    """Whether ``device`` is ``wanted``, where a ``wanted`` without an index (``"cuda"``)
    stands for every device of its type: tensors report ``cuda:0``, and
    ``torch.device("cuda") == torch.device("cuda:0")`` is false."""
    if device is None or device.type != wanted.type:
        return False
    return wanted.index is None or device.index == wanted.index


class KernelCounter(TorchDispatchMode):
    """Counts the aten operators dispatched inside the ``with`` by overload name
    (:attr:`counts`); :attr:`kernels` leaves out the views. With ``device``, only the
    operators whose (first) result is on that device are counted: ``"meta"`` for code
    that runs there and draws its parameters on the CPU; ``"cuda"`` (no index) means every
    CUDA device, as :func:`on_device` reads it."""

    def __init__(self, device: str | torch.device | None = None) -> None:
        super().__init__()
        self.counts: Counter[str] = Counter()
        self.device = None if device is None else torch.device(device)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[override]
        out = func(*args, **(kwargs or {}))
        first = out[0] if isinstance(out, tuple | list) and out else out
        if self.device is None or on_device(getattr(first, "device", None), self.device):
            self.counts[str(func)] += 1
        return out

    @property
    def kernels(self) -> int:
        """The operators that launch work (not views)."""
        return self.split()[0]

    def split(self) -> tuple[int, int]:
        """``(kernels, views)``."""
        views = sum(c for op, c in self.counts.items() if is_view(op))
        return sum(self.counts.values()) - views, views


_MADE_FROM_HOST = ("tensor", "as_tensor", "new_tensor")
_COPIES = ("to", "copy_", "cuda")


def _device_of(args: tuple[Any, ...], kwargs: dict[str, Any]) -> torch.device | None:
    """The target device of a ``Tensor.to``-like call (``None`` when it names none)."""
    for a in (kwargs.get("device"), *args):
        if isinstance(a, torch.device | str) and not isinstance(a, bool):
            try:
                return torch.device(a)
            except RuntimeError:
                continue
        if isinstance(a, torch.Tensor):
            return a.device
    return None


class BlockingTransfers(TorchFunctionMode):
    """Records (:attr:`found`, one line each) the blocking host-to-device transfers made
    inside the ``with`` (see the module docstring)."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[str] = []

    def __torch_function__(self, func, types, args=(), kwargs=None):  # type: ignore[override]
        kwargs = kwargs or {}
        name = getattr(func, "__name__", "")
        if name in _MADE_FROM_HOST:
            device = kwargs.get("device")
            if name == "new_tensor" and device is None and args:
                device = args[0].device
            if device is not None and torch.device(device).type != "cpu":
                self.found.append(f"{name} on {device}")
        elif name in _COPIES and args and isinstance(args[0], torch.Tensor):
            if name == "copy_":
                source, target = args[1], args[0].device
            else:
                target = torch.device("cuda") if name == "cuda" else _device_of(args[1:], kwargs)
                source = args[0]
            moves = source.device.type == "cpu" and target is not None and target.type != "cpu"
            if moves and not kwargs.get("non_blocking", False):
                self.found.append(f"{name} from cpu to {target} without non_blocking")
        return func(*args, **kwargs)
