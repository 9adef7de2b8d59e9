"""Forward + backward time of contrastkit's losses against the GEMM floor and peer libraries.

The floor is the three ``(2N×d)·(d×2N)``-sized matrix products any exact implementation of
a 2N-view contrastive loss needs (the similarity matrix forward, two products backward).
Every case runs in its own subprocess under an address-space cap, so a peer that asks for
more memory than the cap fails cleanly ("OOM") instead of taking the machine down; the
extra peak resident memory of each case is reported too.

Peers, when importable: pytorch-metric-learning's ``NTXentLoss`` and lightly's
``NTXentLoss``/``DCLLoss``/``MACLLoss``. Install them without dependencies
(``pip install --no-deps pytorch-metric-learning lightly``): lightly's loss package imports
torchvision at import time although these losses never call it, and torchvision has no
working CPU wheel here, so the child process answers that import with an empty stand-in.

Usage: ``python benchmarks/loss_speed.py [--sizes 256,1024,2048] [--dim 128] [--threads 2]``
"""

from __future__ import annotations

import argparse
import importlib.machinery
import json
import resource
import subprocess
import sys
import time
import types
from collections.abc import Callable

import torch

MIN_SECONDS = 1.0  # small cases repeat until this much timed work: best-of-5 of 1 ms is noise
OURS = ("ntxent", "macl", "dcl", "supcon", "lascon", "cacr", "paradigm")
PEERS = ("pml_ntxent", "lightly_ntxent", "lightly_dcl", "lightly_macl")


def _stub_torchvision() -> None:
    """Answer ``import torchvision`` with inert modules (see the module docstring)."""

    class Stub(types.ModuleType):
        def __getattr__(self, name: str) -> object:
            if name.startswith("__"):
                raise AttributeError(name)
            if name[:1].isupper():
                value: object = type(name, (), {"__init__": lambda self, *a, **k: None})
            else:
                value = Stub(f"{self.__name__}.{name}")
                sys.modules[value.__name__] = value
            setattr(self, name, value)
            return value

    class Finder:
        def find_spec(self, name: str, path: object = None, target: object = None) -> object:
            if name == "torchvision" or name.startswith("torchvision."):
                return importlib.machinery.ModuleSpec(name, self, is_package=True)
            return None

        def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
            return Stub(spec.name)

        def exec_module(self, module: types.ModuleType) -> None:
            module.__path__ = []

    sys.meta_path.insert(0, Finder())


def make_case(name: str, n: int) -> Callable[[torch.Tensor, torch.Tensor], torch.Tensor]:
    g = torch.Generator().manual_seed(1)
    labels = {
        "supcon": torch.randint(0, 100, (n,), generator=g),
        "lascon": torch.rand(n, generator=g),
    }
    if not name.startswith(("pml_", "lightly_")):
        from contrastkit import losses

        module = losses.get(name)
        kind = losses.info(name).inputs
        if kind == "labeled":
            return lambda a, b: module(a, b, labels[name])
        if kind == "views":
            return lambda a, b: module(torch.stack([a, b]))
        return module
    if name == "pml_ntxent":
        from pytorch_metric_learning.losses import NTXentLoss as PmlNTXent

        pml = PmlNTXent(temperature=0.1)
        idx = torch.arange(n)
        return lambda a, b: pml(torch.cat([a, b]), torch.cat([idx, idx]))
    _stub_torchvision()
    from lightly import loss as lightly_loss

    cls = {"lightly_ntxent": "NTXentLoss", "lightly_dcl": "DCLLoss", "lightly_macl": "MACLLoss"}[
        name
    ]
    return getattr(lightly_loss, cls)(temperature=0.1)


COUNTERPART = {
    "pml_ntxent": "ntxent",
    "lightly_ntxent": "ntxent",
    "lightly_dcl": "dcl",
    "lightly_macl": "macl",
}


def agreement(name: str) -> dict[str, float]:
    """|ours - peer| on one float64 batch of 64 pairs: the peers as independent references."""
    torch.set_default_dtype(torch.float64)
    g = torch.Generator().manual_seed(0)
    z1, z2 = torch.randn(64, 32, generator=g), torch.randn(64, 32, generator=g)
    ours = make_case(COUNTERPART[name], 64)(z1, z2).item()
    return {"abs_diff": abs(make_case(name, 64)(z1, z2).item() - ours)}


def child(name: str, n: int, d: int, threads: int, repeats: int, mem_gb: float) -> dict[str, float]:
    cap = int(mem_gb * 2**30)
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    torch.set_num_threads(threads)
    g = torch.Generator().manual_seed(0)
    z1 = torch.randn(n, d, generator=g).requires_grad_(True)
    z2 = torch.randn(n, d, generator=g).requires_grad_(True)
    if name == "floor":
        z = torch.randn(2 * n, d, generator=g)
        grad_s = torch.randn(2 * n, 2 * n, generator=g)

        def step() -> None:
            s = z @ z.T
            grad_s @ z
            grad_s.T @ z
            del s

    else:
        fn = make_case(name, n)

        def step() -> None:
            z1.grad = z2.grad = None
            fn(z1, z2).backward()

    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    times: list[float] = []
    while len(times) < repeats + 1 or (sum(times[1:]) < MIN_SECONDS and len(times) < 100):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base
    return {"ms": 1000 * min(times[1:]), "extra_mb": peak / 1024}


def measure(name: str, n: int, args: argparse.Namespace) -> dict[str, float] | str:
    cmd = [sys.executable, __file__, "--child", name, "--sizes", str(n), "--dim", str(args.dim)]
    cmd += [
        "--threads",
        str(args.threads),
        "--repeats",
        str(args.repeats),
        "--mem-gb",
        str(args.mem_gb),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode == 0:
        return json.loads(proc.stdout.strip().splitlines()[-1])
    err = proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else f"exit {proc.returncode}"
    if "MemoryError" in err or "not enough memory" in err or "alloc" in err.lower():
        return f"OOM (> {args.mem_gb:g} GiB)"
    if "ModuleNotFoundError" in err or "ImportError" in err:
        return "not installed"
    return f"failed: {err[:60]}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1024,2048,4096", help="pairs N per batch (2N views)")
    parser.add_argument("--losses", default=",".join(OURS), help="contrastkit losses to time")
    parser.add_argument("--dim", type=int, default=128)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument(
        "--repeats",
        type=int,
        default=5,
        help=f"timed repeats, more until {MIN_SECONDS:g} s are timed (at most 99); best kept",
    )
    parser.add_argument("--mem-gb", type=float, default=12.0, help="address-space cap per case")
    parser.add_argument("--no-peers", action="store_true")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    if args.child == "agree":
        print(json.dumps(agreement(args.losses)))
        return
    if args.child:
        print(
            json.dumps(
                child(args.child, sizes[0], args.dim, args.threads, args.repeats, args.mem_gb)
            )
        )
        return
    names = ("floor", *args.losses.split(","), *(() if args.no_peers else PEERS))
    print(
        f"forward+backward, d = {args.dim}, {args.threads} threads, "
        f"best of >= {args.repeats} runs (>= {MIN_SECONDS:g} s timed), torch {torch.__version__}"
    )
    print("cells: ms (× floor) [extra peak MB]\n")
    print("| N pairs | " + " | ".join(names) + " |")
    print("|---:|" + "---:|" * len(names))
    for n in sizes:
        results = {name: measure(name, n, args) for name in names}
        floor = results["floor"]["ms"] if isinstance(results["floor"], dict) else float("nan")
        cells = []
        for name in names:
            r = results[name]
            if isinstance(r, str):
                cells.append(r)
            elif name == "floor":
                cells.append(f"{r['ms']:.1f} [{r['extra_mb']:.0f}]")
            else:
                cells.append(f"{r['ms']:.1f} ({r['ms'] / floor:.2f}×) [{r['extra_mb']:.0f}]")
        print(f"| {n} | " + " | ".join(cells) + " |", flush=True)
    if not args.no_peers:
        print("\nvalue agreement with peers (float64, 64 pairs, τ = 0.1):")
        for peer, ours in COUNTERPART.items():
            cmd = [sys.executable, __file__, "--child", "agree", "--losses", peer]
            proc = subprocess.run(cmd, capture_output=True, text=True)
            ok = proc.returncode == 0
            diff = json.loads(proc.stdout.splitlines()[-1])["abs_diff"] if ok else None
            print(
                f"  {peer} vs {ours}: " + ("not available" if diff is None else f"|Δ| = {diff:.1e}")
            )


if __name__ == "__main__":
    main()
