"""Memory-tiled mode: peak loss memory and time of ``block_size=...`` against dense.

For each batch size N (pairs, 2N views, d = 128), each loss and each block size, forward +
backward runs in a fresh subprocess (repeated until 2 s are timed, best kept); the extra
peak resident memory over the inputs is reported, and the time. Dense runs only where its
[2N, 2N] matrices fit under ``--dense-limit-gb``.

Usage: ``python benchmarks/tiled_memory.py [--sizes 4096,16384,65536] [--block 128,1024]``
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time

import torch

MIN_SECONDS = 2.0  # short cases repeat (best kept) until this much has been timed
LOSSES = ("ntxent", "macl", "dcl", "supcon", "infonce_queue")


def child(
    name: str, n: int, d: int, block: int | None, threads: int, repeats: int
) -> dict[str, float]:
    from contrastkit import losses

    torch.set_num_threads(threads)
    g = torch.Generator().manual_seed(0)
    z1 = torch.randn(n, d, generator=g).requires_grad_(True)
    z2 = torch.randn(n, d, generator=g).requires_grad_(True)
    if name == "supcon":
        labels = torch.randint(0, 1000, (n,), generator=g)
        module = losses.SupCon(block_size=block)

        def fn() -> torch.Tensor:
            return module(z1, z2, labels)

    elif name == "infonce_queue":  # MoCo: n queries against a queue of 2n keys
        queue = torch.randn(2 * n, d, generator=g)
        module = losses.InfoNCE(block_size=block)

        def fn() -> torch.Tensor:
            return module(z1, z2.detach(), queue)

    else:
        module = losses.get(name, block_size=block)

        def fn() -> torch.Tensor:
            return module(z1, z2)

    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    times: list[float] = []
    while len(times) < repeats or (sum(times) < MIN_SECONDS and len(times) < 20):
        z1.grad = z2.grad = None
        t0 = time.perf_counter()
        fn().backward()
        times.append(time.perf_counter() - t0)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base
    return {"s": min(times), "extra_mib": peak / 1024}


def run(name: str, n: int, block: int | None, args: argparse.Namespace) -> dict | str:
    cmd = [sys.executable, __file__, "--child", name, "--sizes", str(n), "--dim", str(args.dim)]
    cmd += ["--threads", str(args.threads), "--repeats", str(args.repeats)]
    cmd += ["--block", str(block)] if block else ["--dense"]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        return "failed: " + (proc.stderr.strip().splitlines() or ["?"])[-1][:60]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def cell(result: dict | str) -> str:
    return (
        result if isinstance(result, str) else f"{result['s']:.2f} s, {result['extra_mib']:.0f} MiB"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="4096,16384,65536")
    parser.add_argument("--losses", default=",".join(LOSSES))
    parser.add_argument("--dim", type=int, default=128)
    # 128 was the fastest of 32…1024 at N = 4096 and 8192 on our 2-core machine (README)
    parser.add_argument("--block", default="128", help="anchors per block; a list compares")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--dense-limit-gb", type=float, default=8.0, help="skip dense above this")
    parser.add_argument("--dense", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    if args.child:
        block = None if args.dense else int(args.block)
        print(json.dumps(child(args.child, sizes[0], args.dim, block, args.threads, args.repeats)))
        return
    blocks = [int(b) for b in args.block.split(",")]
    print(f"forward+backward, d = {args.dim}, {args.threads} threads, block = {args.block} anchors")
    tiled_cols = [f"tiled ({b}) | tiled / dense" for b in blocks]
    print("| loss | N pairs | dense | " + " | ".join(tiled_cols) + " |")
    print("|---|---:|---|" + "---|---:|" * len(blocks))
    for name in args.losses.split(","):
        for n in sizes:
            dense_gb = 2 * (2 * n) ** 2 * 4 / 2**30  # two [2N, 2N] float32 buffers
            dense = run(name, n, None, args) if dense_gb <= args.dense_limit_gb else "does not fit"
            cells = [cell(dense)]
            for block in blocks:
                tiled = run(name, n, block, args)
                both = isinstance(dense, dict) and isinstance(tiled, dict)
                ratio = f"{tiled['s'] / dense['s']:.2f}×" if both else "–"  # type: ignore[index]
                cells += [cell(tiled), ratio]
            print(f"| {name} | {n} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
