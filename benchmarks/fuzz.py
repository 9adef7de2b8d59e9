"""Fuzz every registered loss: random valid inputs, count non-finite values and gradients.

Each case draws a batch size ``n`` in [2, 64], a width ``d`` in [1, 128], an embedding
scale log-uniform in [1e-3, 1e3], up to ``n - 1`` duplicated rows (identical samples),
and, for losses with a ``temperature``, a temperature log-uniform in [0.02, 2]; inputs
are cast to the dtype under test (the modules stay float32). A case fails if the loss or
any input gradient holds NaN/inf, or if the call raises. Valid input must never give
NaN/Inf (BRIEF), so the expected count is 0 for float32 and bfloat16; float16 is reported
as measured (its range, 6.5e4, is exceeded by design at scale 1e3 for some losses).

Usage: ``python benchmarks/fuzz.py [--cases 10000] [--dtypes fp32,bf16,fp16]
[--losses ntxent,macl] [--seed 0] [--out results.json]``; prints one line per loss and
dtype and a total, and exits 1 if any fp32/bf16 case failed. ``--overhead`` instead times
NT-Xent forward + backward (N = 256, d = 128) with the finite check on and off
(:func:`contrastkit.losses.set_check_finite`), interleaved, and prints the ratio.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
import time

import torch

from contrastkit import losses
from contrastkit.losses.examples import build, example_inputs

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
STRICT = ("fp32", "bf16")  # must have zero failures


def one_case(name: str, dtype: torch.dtype, rng: random.Random) -> str | None:
    """Run one random case; ``None`` if finite, else a short description of the failure."""
    n, d = rng.randint(2, 64), rng.randint(1, 128)
    scale = 10 ** rng.uniform(-3, 3)
    duplicates = rng.randint(0, n - 1) if rng.random() < 0.2 else 0
    kwargs = {}
    if "temperature" in losses.info(name).params and name != "amcl":
        kwargs["temperature"] = 10 ** rng.uniform(math.log10(0.02), math.log10(2.0))
    gen = torch.Generator().manual_seed(rng.getrandbits(31))
    inputs = example_inputs(
        name, n, d, dtype=dtype, scale=scale, duplicates=duplicates, generator=gen,
        requires_grad=True,
    )  # fmt: skip
    where = f"n={n} d={d} scale={scale:.3g} dup={duplicates} {kwargs}"
    try:
        loss = build(name, d, **kwargs)(*inputs)
        loss.float().backward()
    except (ValueError, FloatingPointError) as exc:
        return f"{where}: {exc}"
    if not torch.isfinite(loss):
        return f"{where}: loss {float(loss)}"
    for x in inputs:
        if x.grad is not None and not torch.isfinite(x.grad).all():
            return f"{where}: non-finite gradient"
    return None


def overhead(repeats: int = 15, calls: int = 10) -> float:
    """Median time ratio of NT-Xent forward + backward with / without the finite check."""
    z1, z2 = (torch.randn(256, 128, requires_grad=True) for _ in range(2))
    loss = losses.get("ntxent")
    times: dict[bool, list[float]] = {True: [], False: []}
    for _ in range(repeats):
        for enabled in (True, False):
            previous = losses.set_check_finite(enabled)
            start = time.perf_counter()
            for _ in range(calls):
                loss(z1, z2).backward()
            times[enabled].append(time.perf_counter() - start)
            losses.set_check_finite(previous)
    on, off = (sorted(times[k])[repeats // 2] / calls for k in (True, False))
    print(f"NT-Xent N=256 d=128 fwd+bwd: check on {on * 1e3:.3f} ms, off {off * 1e3:.3f} ms, "
          f"ratio {on / off:.3f}")  # fmt: skip
    return on / off


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=10_000, help="cases per loss and dtype")
    parser.add_argument("--dtypes", default="fp32,bf16,fp16")
    parser.add_argument("--losses", help="comma-separated names (default: every registered)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", help="write the counts as JSON here")
    parser.add_argument("--overhead", action="store_true", help="time the finite check only")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    if args.overhead:
        overhead()
        return 0
    names = args.losses.split(",") if args.losses else losses.available()
    results: dict[str, dict[str, dict[str, object]]] = {}
    strict_failures = 0
    start = time.perf_counter()
    for name in names:
        for key in args.dtypes.split(","):
            rng = random.Random(f"{args.seed}-{name}-{key}")
            cases = (one_case(name, DTYPES[key], rng) for _ in range(args.cases))
            failures = [f for f in cases if f]
            results.setdefault(name, {})[key] = {
                "cases": args.cases,
                "failures": len(failures),
                "examples": failures[:3],
            }
            strict_failures += len(failures) if key in STRICT else 0
            print(f"{name:18s} {key}: {len(failures)} / {args.cases} non-finite or raised"
                  + (f"  e.g. {failures[0]}" if failures else ""), flush=True)  # fmt: skip
    total = sum(r["cases"] for per in results.values() for r in per.values())  # type: ignore[misc]
    seconds = time.perf_counter() - start
    print(f"total {total} cases in {seconds:.0f} s; fp32/bf16 failures: {strict_failures}")
    if args.out:
        with open(args.out, "w", encoding="utf-8") as fh:
            json.dump({"seed": args.seed, "seconds": seconds, "results": results}, fh, indent=2)
    return 1 if strict_failures else 0


if __name__ == "__main__":
    sys.exit(main())
