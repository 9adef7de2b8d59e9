"""Host time of one loss call where the arithmetic is negligible (issue #38).

On a GPU at small batches (256-4,096 pairs) a loss call is bound by per-call overhead: the
host time of its Python layers (module wrappers, argument checks, dispatch) plus that of
launching its operators. On the CPU at N = 16 pairs, d = 16, the arithmetic is nothing, so
a forward + backward's time is that overhead. This times each loss (``backend="torch"``,
float32 embeddings unless ``--dtype bf16``, value checks off as on a GPU by default; the
steps of :file:`op_count.py`) against the plain ten-line NT-Xent of
:file:`gpu_loss_bench.py` in the same process: each
round times ``--inner`` calls of the loss, then as many of the plain version, so both share
the machine's load; a cell is the median over ``--rounds`` rounds of the per-call time
(``perf_counter``; ``--clock thread`` uses the thread's CPU time, steadier on a loaded
machine).

``--compare DIR ...`` runs this script once per source tree (``PYTHONPATH=DIR``, e.g. the
main checkout and a branch's worktree), alternating the trees ``--runs`` times, and prints
each tree's median per-call time and ratio to plain side by side.

Usage::

    OMP_NUM_THREADS=1 python benchmarks/call_overhead.py
    OMP_NUM_THREADS=1 python benchmarks/call_overhead.py --profile ntxent   # cProfile
    OMP_NUM_THREADS=1 python benchmarks/call_overhead.py --compare ../main . --runs 3
    OMP_NUM_THREADS=1 python benchmarks/call_overhead.py --compile   # both through torch.compile
    OMP_NUM_THREADS=1 python benchmarks/call_overhead.py --dtype bf16   # bf16 embeddings
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import statistics
import subprocess
import sys
import time
from collections.abc import Callable

import torch
from op_count import make_step

from contrastkit import losses

CASES = ("ntxent", "infonce_queue", "dcl", "macl", "supcon", "lascon", "cacr")
CLOCKS = {"wall": time.perf_counter, "thread": time.thread_time}
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}


def per_call_us(step: Callable[[], None], calls: int, clock: Callable[[], float]) -> float:
    """Mean microseconds of one of ``calls`` back-to-back calls of ``step``."""
    t0 = clock()
    for _ in range(calls):
        step()
    return 1e6 * (clock() - t0) / calls


def measure(args: argparse.Namespace) -> dict[str, tuple[float, float]]:
    """``{case: (loss µs, plain µs)}``, each the median over the rounds."""
    clock = CLOCKS[args.clock]
    out = {}
    for case in args.losses.split(","):
        dtype = DTYPES[args.dtype]
        step = make_step(case, args.n, args.dim, args.compile, dtype)
        plain = make_step("plain_ntxent", args.n, args.dim, args.compile, dtype)
        for _ in range(args.warmup):
            step(), plain()
        ours, base = [], []
        for _ in range(args.rounds):
            ours.append(per_call_us(step, args.inner, clock))
            base.append(per_call_us(plain, args.inner, clock))
        out[case] = (statistics.median(ours), statistics.median(base))
    return out


def profile(case: str, args: argparse.Namespace) -> None:
    """cProfile of ``--rounds × --inner`` calls of ``case``, by own time."""
    step = make_step(case, args.n, args.dim, dtype=DTYPES[args.dtype])
    for _ in range(args.warmup):
        step()
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(args.rounds * args.inner):
        step()
    profiler.disable()
    pstats.Stats(profiler).sort_stats("tottime").print_stats(30)


def compare(args: argparse.Namespace, trees: list[str]) -> None:
    """Alternate one child run per tree, ``--runs`` times; median per tree and case."""
    argv = [sys.executable, os.path.abspath(__file__), "--json"]
    for key in ("losses", "n", "dim", "rounds", "inner", "warmup", "clock", "dtype"):
        argv += [f"--{key}", str(getattr(args, key))]
    argv += ["--compile"] if args.compile else []
    results: dict[str, list[dict[str, list[float]]]] = {tree: [] for tree in trees}
    for _ in range(args.runs):
        for tree in trees:
            env = {**os.environ, "PYTHONPATH": os.path.abspath(tree), "OMP_NUM_THREADS": "1"}
            run = subprocess.run(argv, env=env, capture_output=True, text=True, check=True)
            results[tree].append(json.loads(run.stdout))
    print(
        f"N = {args.n} pairs, d = {args.dim}, {args.dtype}, forward + backward, µs per call "
        f"(median of {args.runs} alternated runs × {args.rounds} rounds, {args.clock} clock"
        + (", both compiled)" if args.compile else ")")
    )
    header = " | ".join(f"{os.path.basename(os.path.abspath(t))} µs / ×plain" for t in trees)
    print(f"| case | {header} |")
    print("|---|" + "---:|" * len(trees))
    plain_cells = []
    for tree in trees:
        plain_cells.append(statistics.median(r[c][1] for r in results[tree] for c in r))
    print("| plain_ntxent | " + " | ".join(f"{p:.0f}" for p in plain_cells) + " |")
    for case in args.losses.split(","):
        cells = []
        for tree in trees:
            ours = statistics.median(r[case][0] for r in results[tree])
            ratio = statistics.median(r[case][0] / r[case][1] for r in results[tree])
            cells.append(f"{ours:.0f} / {ratio:.2f}")
        print(f"| {case} | " + " | ".join(cells) + " |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--losses", default=",".join(CASES))
    parser.add_argument("--n", type=int, default=16, help="pairs")
    parser.add_argument("--dim", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--inner", type=int, default=20, help="calls timed together")
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="wall")
    parser.add_argument(
        "--dtype", choices=sorted(DTYPES), default="fp32", help="the embeddings' dtype (both cases)"
    )
    parser.add_argument("--profile", default="", help="cProfile this case instead")
    parser.add_argument(
        "--compile",
        action="store_true",
        help="each loss and the plain NT-Xent through torch.compile (inductor, default mode)",
    )
    parser.add_argument("--compare", nargs="+", default=[], metavar="DIR")
    parser.add_argument("--runs", type=int, default=3, help="child runs per tree")
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.compare:
        compare(args, args.compare)
        return
    losses.set_check_finite(False)
    torch.manual_seed(0)
    if args.profile:
        profile(args.profile, args)
        return
    results = measure(args)
    if args.json:
        print(json.dumps(results))
        return
    print(
        f"N = {args.n} pairs, d = {args.dim}, {args.dtype}, forward + backward, µs per call "
        f"(median of {args.rounds} rounds of {args.inner} calls, {args.clock} clock"
        + (", both compiled)" if args.compile else ")")
    )
    print("| case | µs | plain µs | ratio |")
    print("|---|---:|---:|---:|")
    for case, (ours, base) in results.items():
        print(f"| {case} | {ours:.0f} | {base:.0f} | {ours / base:.2f} |", flush=True)


if __name__ == "__main__":
    main()
