"""The views of a training step: kernels, blocking transfers and time (issue #38).

For each recipe, the ``--views`` views of a uint8 batch as the engine makes them
(``ImageAugment.batched_views``; older code without it: ``views`` or one call per view):

* kernels launched on the batch's device and host-to-device copies that block, counted on
  the ``meta`` device (:mod:`contrastkit.engine.kernels`; the same on every device);
* on ``--device``: the host time of one call (until it returns) and its wall time until
  the device is done (median of ``--repeats``, after warm-up calls). On a GPU, host ≈ wall
  means the call is bound by launching, not by the device's arithmetic.

``--modes eager,compiled,triton`` times the ways of making them: eager ops; the augments
compiled (``ImageAugment.compile``, what a run with ``compile`` does; its kernels are those
Inductor generated, counted at its first call); and ``backend="triton"`` (the colour ops
in one Triton kernel; its torch kernels counted on a CUDA device, plus that one; CUDA
only, or the CPU under ``TRITON_INTERPRET=1`` without a count). Blocking copies are counted
for eager mode only.

To compare with older code, run it again with ``PYTHONPATH`` pointing at that checkout.

    python benchmarks/view_speed.py --device cuda --batch 512
    OMP_NUM_THREADS=1 python benchmarks/view_speed.py --device cpu --batch 64 --repeats 5
    OMP_NUM_THREADS=1 python benchmarks/view_speed.py --device cpu --modes eager
"""

from __future__ import annotations

import argparse
import importlib.util
import inspect
import itertools
import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import torch
from torch._inductor import metrics

from contrastkit.images.image_augment import ImageAugment, view_augments

try:
    from contrastkit.engine.kernels import BlockingTransfers, KernelCounter
except ImportError:  # an older checkout on PYTHONPATH: this checkout's counters (torch only)
    _spec = importlib.util.spec_from_file_location(
        "kernels", Path(__file__).resolve().parents[1] / "contrastkit" / "engine" / "kernels.py"
    )
    _kernels = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(_kernels)
    BlockingTransfers, KernelCounter = _kernels.BlockingTransfers, _kernels.KernelCounter


def views_of(augs: list, n: int) -> Callable[[torch.Tensor, torch.Generator], list]:
    """How this checkout makes ``n`` views with ``augs``."""
    joint = getattr(ImageAugment, "batched_views", None)
    if joint is not None:
        return lambda x, g: joint(augs, x, g, n)
    if len(augs) == 1 and hasattr(augs[0], "views"):
        return lambda x, g: augs[0].views(x, g, n)
    return lambda x, g: [augs[v % len(augs)](x, g) for v in range(n)]


def triton_usable(device: torch.device) -> bool:
    """Whether ``backend="triton"`` can run on ``device`` here (and this checkout has it)."""
    has = "backend" in inspect.signature(view_augments).parameters
    if not has or importlib.util.find_spec("triton") is None:
        return False
    return device.type == "cuda" or os.environ.get("TRITON_INTERPRET") == "1"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--recipes", default="simclr:32,byol:64", help="recipe:side,...")
    parser.add_argument("--batch", type=int, default=512)
    parser.add_argument("--views", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument(
        "--modes", default="eager,compiled,triton", help="among eager, compiled, triton"
    )
    args = parser.parse_args()
    device = torch.device(args.device)
    cuda = device.type == "cuda"
    print(f"views of a uint8 batch of {args.batch}, {args.views} views, on {device}"
          + (f" ({torch.cuda.get_device_name(device)})" if cuda else "")
          + f", torch {torch.__version__}")  # fmt: skip
    print("| recipe | side | mode | kernels | blocking copies | host ms | wall ms |")
    print("|---|---:|---|---:|---:|---:|---:|")
    for spec, mode in itertools.product(args.recipes.split(","), args.modes.split(",")):
        recipe, side = spec.split(":")
        if mode == "triton" and not triton_usable(device):
            print(f"| {recipe} | {side} | triton | n/a: needs it, triton and CUDA | | | |")
            continue
        backend = {"backend": "triton"} if mode == "triton" else {}
        augs = view_augments(recipe, int(side), **backend)
        make = views_of(augs, args.views)
        meta = torch.empty(args.batch, 3, int(side), int(side), dtype=torch.uint8, device="meta")
        x = torch.randint(0, 256, meta.shape, dtype=torch.uint8).to(device)
        if mode == "compiled":
            if not hasattr(ImageAugment, "compile"):
                print(f"| {recipe} | {side} | compiled | n/a in this checkout | | | |")
                continue
            for aug in augs:
                aug.compile()
            metrics.reset()
            make(x, torch.Generator().manual_seed(0))  # compiles
            kernels, copies = metrics.generated_kernel_count, "–"
        elif mode == "triton":
            make(x, torch.Generator().manual_seed(0))  # compiles the kernel
            if cuda:
                with KernelCounter(device) as counter:
                    make(x, torch.Generator().manual_seed(1))
                kernels = f"{counter.kernels} + 1 Triton"
            else:
                kernels = "–"
            copies = "–"
        else:
            make(meta, torch.Generator().manual_seed(0))  # per-device constants
            with KernelCounter("meta") as counter, BlockingTransfers() as blocking:
                make(meta, torch.Generator().manual_seed(1))
            kernels, copies = counter.kernels, len(blocking.found)
        g = torch.Generator().manual_seed(2)
        host, wall = [], []
        for i in range(args.repeats + 3):
            if cuda:
                torch.cuda.synchronize(device)
            start = time.perf_counter()
            make(x, g)
            returned = time.perf_counter()
            if cuda:
                torch.cuda.synchronize(device)
            if i >= 3:
                host.append(1e3 * (returned - start))
                wall.append(1e3 * (time.perf_counter() - start))
        cells = (recipe, side, mode, kernels, copies)
        times = f"{statistics.median(host):.2f} | {statistics.median(wall):.2f}"
        print("| " + " | ".join(map(str, cells)) + f" | {times} |", flush=True)


if __name__ == "__main__":
    main()
