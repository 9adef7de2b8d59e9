"""Random cases through both backends of the fused losses: the Triton kernels (on a GPU, or
in Triton's CPU interpreter) against the torch path (issue #38).

Each case draws a loss among those with ``fused_backends``, a batch ``n`` in [2, 40], a
width ``d`` in [1, 70], an embedding scale log-uniform in [1e-3, 1e3] and an input dtype
(float32, or bfloat16: the unit path of ``_gram_triton``), then runs one forward and
backward on each backend from the same inputs. It prints, per loss, the cases, the
non-finite results and the largest differences between the backends: of the value
(relative to max(1, |value|)) and of the input gradients (relative to the largest torch
gradient). It exits 1 if a result is not finite or a difference exceeds ``--tolerance``.

    python benchmarks/triton_fuzz.py --device cuda --cases 500
    TRITON_INTERPRET=1 python benchmarks/triton_fuzz.py --cases 40     # on a CPU
"""

from __future__ import annotations

import argparse
import math
import random
import sys

import torch

from contrastkit import losses
from contrastkit.losses.functional._precision import upcast_tensor

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}


def inputs(name: str, n: int, d: int, scale: float, dtype: torch.dtype, seed: int, device: str):
    """The call's arguments and the leaves whose gradients are compared: embeddings of
    ``dtype`` cast as the precision rule casts them (bfloat16 ones stay known as such)."""
    g = torch.Generator().manual_seed(seed)
    views = [scale * torch.randn(n, d, generator=g) for _ in range(2)]
    kind = losses.info(name).inputs
    if kind == "views":
        views = [torch.stack(views)]
    leaves = [upcast_tensor(v.to(device=device, dtype=dtype)).requires_grad_() for v in views]
    if kind != "labeled":
        return leaves, leaves
    labels = (
        torch.rand(n, generator=g) if name == "lascon" else torch.randint(0, 3, (n,), generator=g)
    )
    return [*leaves, labels.to(device)], leaves


def run_case(name: str, rng: random.Random, seed: int, device: str, dtypes: list[str]):
    """``(non-finite results, value difference, gradient difference)`` of one random case."""
    n, d = rng.randint(2, 40), rng.randint(1, 70)
    scale = math.exp(rng.uniform(math.log(1e-3), math.log(1e3)))
    dtype = DTYPES[rng.choice(dtypes)]
    results, bad = [], 0
    for backend in ("torch", "triton"):
        args, leaves = inputs(name, n, d, scale, dtype, seed, device)
        value = losses.get(name, backend=backend)(*args)
        value.backward()
        grads = [t.grad for t in leaves]
        bad += not (torch.isfinite(value) and all(torch.isfinite(g).all() for g in grads))
        results.append((value.detach(), grads))
    (v0, g0), (v1, g1) = results
    value_diff = abs(float(v1 - v0)) / max(1.0, abs(float(v0)))
    largest = max(float(g.abs().max()) for g in g0)
    grad_diff = max(float((a - b).abs().max()) for a, b in zip(g1, g0, strict=True))
    return bad, value_diff, grad_diff / largest if largest > 1e-6 else 0.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--cases", type=int, default=200)
    parser.add_argument("--dtypes", default="fp32,bf16", help=f"of {', '.join(DTYPES)}")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tolerance", type=float, default=1e-4)
    args = parser.parse_args()
    names = [n for n in losses.available() if losses.info(n).fused_backends]
    dtypes = args.dtypes.split(",")
    rng = random.Random(args.seed)
    worst: dict[str, list[float]] = {name: [0, 0, 0.0, 0.0] for name in names}
    for case in range(args.cases):
        name = rng.choice(names)
        bad, value_diff, grad_diff = run_case(
            name, rng, args.seed * 100_003 + case, args.device, dtypes
        )
        row = worst[name]
        row[0], row[1] = row[0] + 1, row[1] + bad
        row[2], row[3] = max(row[2], value_diff), max(row[3], grad_diff)
    print(f"{args.cases} cases on {args.device}, dtypes {args.dtypes}, torch {torch.__version__}")
    print("| loss | cases | non-finite | value diff | gradient diff |")
    print("|---|---:|---:|---:|---:|")
    for name, (cases, bad, value_diff, grad_diff) in worst.items():
        print(f"| {name} | {cases} | {bad} | {value_diff:.1e} | {grad_diff:.1e} |")
    failed = any(r[1] or r[2] > args.tolerance or r[3] > args.tolerance for r in worst.values())
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
