"""One optimiser step over a ResNet-18's parameters: operators and time (issue #38).

Each optimiser as :func:`contrastkit.engine.build_optimizer` builds it for the device
(``sgd``, ``adam``, ``adamw``: torch's fused kernels on CUDA; ``lars``: multi-tensor
operations per parameter group; ``lars+skip``: with ``found_inf`` set, the step the engine
takes, which a non-finite gradient skips on the device), against torch's SGD with momentum
in its multi-tensor
(``foreach``) form, measured in the same run. A step's time on a GPU at this size is
mostly its launches, so the aten operators it dispatches are counted too
(:class:`contrastkit.engine.kernels.KernelCounter`, the same count on any device), and on
CUDA the kernels one step runs on the device (``torch.profiler``): a multi-tensor
operation that falls back to one kernel per tensor (as ``_foreach_mul`` by a list of
0-dim tensors may, in LARS's trust ratios) shows there and not in the operator count.

The model is the CIFAR-stem ResNet-18 of ``gpu_bench.sh`` with a 128-d linear head
(62 parameter tensors at width 64), gradients fixed random values; time is the wall
clock of ``--steps`` steps, the device synchronised before and after, median of
``--rounds`` rounds with the optimisers alternated. To compare with another checkout, run
it with that checkout first on ``PYTHONPATH``.

Usage::

    python benchmarks/optimizer_step.py --device cuda
    OMP_NUM_THREADS=1 python benchmarks/optimizer_step.py --width 8 --steps 20
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import torch
from torch import nn

from contrastkit.engine import build_optimizer
from contrastkit.engine.kernels import KernelCounter
from contrastkit.models.backbones import build_encoder

OPTIMIZERS = ("sgd", "lars", "lars+skip", "adam", "adamw")  # +skip: found_inf set


def model(width: int, device: str) -> nn.Module:
    encoder = build_encoder(
        "image", (3, 32, 32), width=width, backbone="resnet18", mean=[0.5] * 3, std=[0.25] * 3
    )
    return nn.Sequential(encoder, nn.Linear(8 * width, 128)).to(device)


def stepper(name: str, width: int, device: str) -> tuple[Callable[[], None], int]:
    """A step of optimiser ``name`` (``baseline``: torch's foreach SGD) on its own model
    copy with fixed gradients, and the aten operators of one step after the first."""
    net = model(width, device)
    g = torch.Generator(device=device).manual_seed(0)
    for p in net.parameters():
        p.grad = torch.randn(p.shape, generator=g, device=device)
    if name == "baseline":
        opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9, foreach=True)
    else:
        opt = build_optimizer(name.removesuffix("+skip"), net, lr=1e-3, weight_decay=1e-6)
    if name.endswith("+skip"):  # as the engine steps it: skippable on the device, no read
        opt.found_inf = torch.zeros((), device=device)
    opt.step()  # the first step creates the optimiser's state
    with KernelCounter() as counter:
        opt.step()
    return opt.step, sum(counter.split())


def cuda_kernels(step: Callable[[], None]) -> str:
    """The kernels one ``step`` runs on the GPU (memory copies and sets aside), counted by
    ``torch.profiler``; "n/a" off CUDA or where the profiler reports none."""
    if not torch.cuda.is_available():
        return "n/a"
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        step()
        torch.cuda.synchronize()
    kernels = [
        e
        for e in prof.events()
        if e.device_type == torch.autograd.DeviceType.CUDA
        and not e.name.lower().startswith(("memcpy", "memset"))
    ]
    return str(len(kernels)) if kernels else "n/a"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--width", type=int, default=64, help="ResNet-18 first-stage width")
    parser.add_argument("--optimizers", default=",".join(OPTIMIZERS))
    parser.add_argument("--steps", type=int, default=50, help="steps per round")
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    names = ["baseline", *args.optimizers.split(",")]
    steps = {name: stepper(name, args.width, args.device) for name in names}
    sync = torch.cuda.synchronize if args.device.startswith("cuda") else lambda: None
    times: dict[str, list[float]] = {name: [] for name in names}
    for _ in range(args.rounds):
        for name, (step, _ops) in steps.items():
            sync()
            start = time.perf_counter()
            for _ in range(args.steps):
                step()
            sync()
            times[name].append(1000 * (time.perf_counter() - start) / args.steps)
    tensors = len(list(model(args.width, "meta").parameters()))
    print(f"{args.device}, ResNet-18 width {args.width} + head ({tensors} parameter tensors)")
    on_cuda = args.device.startswith("cuda")
    launched = {name: cuda_kernels(step) if on_cuda else "n/a" for name, (step, _) in steps.items()}
    print("| optimiser | aten ops per step | CUDA kernels per step | ms per step | × foreach SGD |")
    print("|---|---:|---:|---:|---:|")
    base = statistics.median(times["baseline"])
    for name in names:
        ms = statistics.median(times[name])
        label = "foreach SGD (baseline)" if name == "baseline" else name
        print(f"| {label} | {steps[name][1]} | {launched[name]} | {ms:.3f} | {ms / base:.2f} |")


if __name__ == "__main__":
    main()
