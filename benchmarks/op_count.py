"""Aten operators dispatched by one forward + backward of each InfoNCE-family loss (issue #38).

On a GPU at common batch sizes a loss call is launch-bound: its time is roughly the number
of kernels it launches. This counts, on the CPU, the aten operators of the second
forward + backward of each loss (``backend="torch"``, float32, value checks off as on a
GPU by default) with a :class:`~torch.utils._python_dispatch.TorchDispatchMode`, split
into kernels and views (:mod:`contrastkit.engine.kernels`: views only re-describe memory),
next to the plain ten-line NT-Xent of :file:`gpu_loss_bench.py`; then times both on the
CPU (median of ``--repeats`` steps, the loss and the plain version alternated so they
share the machine's load).

Usage::

    OMP_NUM_THREADS=1 python benchmarks/op_count.py                 # counts, N = 256
    OMP_NUM_THREADS=1 python benchmarks/op_count.py --time 256,1024 --verbose
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import gpu_loss_bench
import torch
from gpu_loss_bench import LOSSES

from contrastkit import losses
from contrastkit.engine.kernels import KernelCounter, is_view


def make_step(
    case: str, n: int, d: int, compiled: bool = False, dtype: torch.dtype = torch.float32
) -> Callable[[], None]:
    """One forward + backward of ``case`` (a loss name or ``plain_ntxent``) at ``n`` pairs
    on the CPU, embeddings in ``dtype`` (float32 unless given), labels from ``n // 4``
    classes; ``compiled``: through ``torch.compile`` (one graph, backward included)."""
    backend = "compiled" if compiled else "torch"
    return gpu_loss_bench.make_step(case, backend, n, d, dtype, classes=max(1, n // 4))


def count(step: Callable[[], None]) -> KernelCounter:
    step()  # a first call may build cached index tensors
    with KernelCounter() as counter:
        step()
    return counter


def timed(step: Callable[[], None]) -> float:
    t0 = time.perf_counter()
    step()
    return 1000 * (time.perf_counter() - t0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--losses", default=",".join(LOSSES))
    parser.add_argument("--n", type=int, default=256, help="pairs for the counts")
    parser.add_argument("--dim", type=int, default=128)
    parser.add_argument("--time", default="", help="pairs to time at, e.g. 256,1024")
    parser.add_argument("--repeats", type=int, default=200)
    parser.add_argument("--verbose", action="store_true", help="list each loss's operators")
    args = parser.parse_args()
    losses.set_check_finite(False)
    torch.manual_seed(0)
    cases = ["plain_ntxent", *args.losses.split(",")]
    print(f"N = {args.n} pairs, d = {args.dim}, forward + backward, second call")
    print("| case | aten ops | kernels | views |")
    print("|---|---:|---:|---:|")
    for case in cases:
        counter = count(make_step(case, args.n, args.dim))
        kernels, views = counter.split()
        print(f"| {case} | {kernels + views} | {kernels} | {views} |", flush=True)
        if args.verbose:
            for op, c in sorted(counter.counts.items()):
                print(f"    {c:3d} {op}{'  (view)' if is_view(op) else ''}")
    for n in (int(s) for s in args.time.split(",") if s):
        print(f"\nCPU ms at N = {n} pairs (median of {args.repeats}, alternated with plain)")
        print("| case | ms | plain ms | ratio |")
        print("|---|---:|---:|---:|")
        plain = make_step("plain_ntxent", n, args.dim)
        for case in cases[1:]:
            step = make_step(case, n, args.dim)
            for _ in range(5):
                step(), plain()
            ours, base = [], []
            for _ in range(args.repeats):
                ours.append(timed(step))
                base.append(timed(plain))
            a, b = statistics.median(ours), statistics.median(base)
            print(f"| {case} | {a:.3f} | {b:.3f} | {a / b:.2f} |", flush=True)


if __name__ == "__main__":
    main()
