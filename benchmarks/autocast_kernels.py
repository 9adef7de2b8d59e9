"""Kernels of one ResNet forward + backward in float32 and under bf16 autocast (issue #38).

On a GPU an eager bf16 training step is bound by the host (docs/results/performance-log.md,
fourth GPU session): the device finishes its work before the host has launched the next.
Autocast casts each convolution's float32 weight (and the first input) to bfloat16 in
forward and each weight's gradient back to float32 in backward, so a bf16 step launches
more kernels than a float32 one. This counts them with
:class:`contrastkit.engine.kernels.KernelCounter`, gradients cleared before each pass as a
training step does (``set_to_none``), on ``--device`` (the CPU by default: the counts
follow autocast's rule, not the arithmetic).

Usage::

    OMP_NUM_THREADS=1 python benchmarks/autocast_kernels.py
    python benchmarks/autocast_kernels.py --device cuda --width 64
"""

from __future__ import annotations

import argparse

import torch

from contrastkit.engine.kernels import KernelCounter
from contrastkit.models.resnet import ResNet

CAST = "aten._to_copy.default"


def count(model: torch.nn.Module, x: torch.Tensor, bf16: bool) -> tuple[int, int, int, int]:
    """``(forward kernels, forward casts, backward kernels, backward casts)`` of the second
    pass (the first may allocate caches)."""
    for _ in range(2):
        model.zero_grad(set_to_none=True)
        with KernelCounter() as forward, torch.autocast(x.device.type, torch.bfloat16, bf16):
            y = model(x)
        with KernelCounter() as backward:
            y.float().square().mean().backward()
    return forward.kernels, forward.counts[CAST], backward.kernels, backward.counts[CAST]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--depth", default="resnet18")
    parser.add_argument("--width", type=int, default=8, help="does not change the counts")
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--size", type=int, default=32)
    args = parser.parse_args()
    device = torch.device(args.device)
    model = ResNet(args.depth, width=args.width).to(device).train()
    x = torch.randn(args.batch, 3, args.size, args.size, device=device)
    convs = sum(isinstance(m, torch.nn.Conv2d) for m in model.modules())
    print(f"{args.depth} ({convs} convolutions), forward + backward on {device}")
    print("| precision | forward kernels (casts) | backward kernels (casts) | total |")
    print("|---|---:|---:|---:|")
    totals = {}
    for name, bf16 in (("fp32", False), ("bf16 autocast", True)):
        fk, fc, bk, bc = count(model, x, bf16)
        totals[name] = fk + bk
        print(f"| {name} | {fk} ({fc}) | {bk} ({bc}) | {fk + bk} |")
    ratio = totals["bf16 autocast"] / totals["fp32"]
    print(f"bf16 autocast launches {ratio:.2f}x the float32 step's kernels")


if __name__ == "__main__":
    main()
