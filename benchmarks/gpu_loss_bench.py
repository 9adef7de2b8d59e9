"""Forward + backward time and memory of the InfoNCE-family losses on both backends (issue #38).

For every loss, every ``N`` (pairs; 2N anchors) and every input dtype, on one device:

* ``floor``: the three ``(2N×d)·(d×2N)``-sized matrix products any exact 2N-view loss
  needs (similarities forward, two products backward), in the input dtype;
* ``plain_ntxent``: the ten-line plain-torch NT-Xent (``F.normalize``, ``z·zᵀ/τ``, diagonal
  masked, ``F.cross_entropy``), measured in the same run as the reference point;
* each loss with ``backend="torch"`` and ``backend="triton"`` (CUDA only).

A cell is the median of ``--repeats`` timed steps (CUDA events on a GPU, ``perf_counter`` on
a CPU) after ``--warmup`` untimed ones (Triton compiles then), its ratio to the floor of the
same N and dtype, and the extra memory of one step (``torch.cuda.max_memory_allocated``
minus the memory allocated before it; not measured on a CPU). Then the tiled row: NT-Xent at
``--tiled`` pairs (65,536 by default), fused Triton vs torch's tiled mode
(``block_size=--tiled-block``) vs dense torch, in float32; a case that runs out of device
memory prints ``OOM``.

The losses upcast half-precision embeddings to float32 before their Gram statistics
(``views.ntxent_negatives``). On the torch backend bf16 rows time the float32 products plus
the casts; on the Triton backend the layouts without a queue multiply the bf16 values on
tensor cores (the unit path, ``docs/results/performance-log.md``), so ``infonce_queue`` keeps
the float32 kernels.

Usage (``benchmarks/gpu_bench.sh`` wraps it)::

    python benchmarks/gpu_loss_bench.py                      # cuda, N = 1024,4096,16384
    python benchmarks/gpu_loss_bench.py --device cpu --sizes 64 --tiled 128   # tiny, torch only
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import time
from collections.abc import Callable

import torch
import torch.nn.functional as F

from contrastkit import losses

LOSSES = (
    "ntxent",
    "infonce",
    "infonce_queue",  # MoCo: N queries against a constant queue of 2N keys
    "dcl",
    "dclw",
    "flatnce",
    "dual_temperature",
    "hcl",
    "macl",
    "supcon",
    "lascon",
    "cacr",
    "cmc",  # two views: the symmetric (CLIP-style) InfoNCE; the torch path alone
)
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}
Step = Callable[[], None]


def plain_ntxent(z1: torch.Tensor, z2: torch.Tensor, temperature: float = 0.1) -> torch.Tensor:
    """The plain-torch NT-Xent of SimCLR, in float32: the reference point of issue #38."""
    n = z1.shape[0]
    z = F.normalize(torch.cat([z1, z2]).float(), dim=1)
    logits = (z @ z.T / temperature).fill_diagonal_(float("-inf"))
    # made on the device: a host tensor's copy would block the stream inside the timing
    target = torch.cat([torch.arange(n, 2 * n, device=z.device), torch.arange(n, device=z.device)])
    return F.cross_entropy(logits, target)


def make_step(
    case: str,
    backend: str,
    n: int,
    d: int,
    dtype: torch.dtype = torch.float32,
    device: str = "cpu",
    mode: str = "default",
    classes: int = 100,
) -> Step:
    """One forward + backward of ``case`` (a loss name, ``plain_ntxent``, ``infonce_queue``
    or ``floor``) on fresh random embeddings of ``n`` pairs; supervised losses get labels
    from ``classes`` classes (LASCon: uniform in [0, 1)). Backend ``compiled``: the torch
    path (or the plain NT-Xent) through ``torch.compile`` in ``mode`` (forward and backward
    in one graph each; ``reduce-overhead`` replays them as CUDA graphs). Also the steps of
    :file:`op_count.py` and :file:`call_overhead.py`."""
    g = torch.Generator(device=device).manual_seed(0)
    if case == "floor":
        z = torch.randn(2 * n, d, generator=g, device=device).to(dtype)
        grad_s = torch.randn(2 * n, 2 * n, generator=g, device=device).to(dtype)

        def floor() -> None:
            s = z @ z.T
            grad_s @ z
            grad_s.T @ z
            del s

        return floor
    z1, z2 = (torch.randn(n, d, generator=g, device=device).to(dtype) for _ in range(2))
    z1, z2 = z1.requires_grad_(), z2.requires_grad_()
    inputs, leaves = [z1, z2], (z1, z2)
    path = "torch" if backend == "compiled" else backend
    if case == "plain_ntxent":
        fn: Callable[..., torch.Tensor] = plain_ntxent
    elif case == "infonce_queue":
        key = torch.randn(n, d, generator=g, device=device).to(dtype)
        queue = torch.randn(2 * n, d, generator=g, device=device).to(dtype)
        fn, inputs, leaves = losses.get("infonce", backend=path), [z1, key, queue], (z1,)
    else:
        info = losses.info(case)
        fn = losses.get(case, backend=path) if info.fused_backends else losses.get(case)
        if info.inputs == "labeled":
            labels = torch.randint(0, classes, (n,), generator=g, device=device)
            if case == "lascon":
                labels = torch.rand(n, generator=g, device=device)
            inputs.append(labels)
        elif info.inputs == "views":
            inputs = [torch.stack([z1, z2])]
    if backend == "compiled":  # every registered loss's forward is one wrapper (checked):
        torch._dynamo.reset()  # a fresh cache, or the ninth loss passes dynamo's recompile limit
        fn = torch.compile(fn, mode=mode, fullgraph=True, dynamic=False)
    graphs = backend == "compiled" and mode in ("reduce-overhead", "max-autotune")
    return _backward(lambda: fn(*inputs), leaves, graphs)


def tiled_step(variant: str, n: int, d: int, block: int, device: str) -> Step:
    """NT-Xent at ``n`` pairs: ``fused`` (Triton), ``tiled`` (torch, ``block``) or ``dense``."""
    backend = "triton" if variant == "fused" else "torch"
    module = losses.get("ntxent", backend=backend, block_size=block if variant == "tiled" else None)
    g = torch.Generator(device=device).manual_seed(0)
    z1, z2 = (torch.randn(n, d, generator=g, device=device).requires_grad_() for _ in range(2))
    return _backward(lambda: module(z1, z2), (z1, z2))


def _backward(
    loss: Callable[[], torch.Tensor], leaves: tuple[torch.Tensor, ...], graphs: bool = False
) -> Step:
    """``graphs``: tell torch at each step that the previous step's CUDA-graph outputs are no
    longer read (``reduce-overhead``), as a training loop does."""

    def step() -> None:
        if graphs:
            torch.compiler.cudagraph_mark_step_begin()
        for t in leaves:
            t.grad = None
        loss().backward()

    return step


def measure(step: Step, device: str, warmup: int, repeats: int) -> dict[str, float] | str:
    """``{"ms": median, "extra_mb": peak - before}`` of ``step``, or ``"OOM"``."""
    cuda = device.startswith("cuda")
    try:
        for _ in range(warmup):
            step()
        times = []
        for _ in range(repeats):
            if cuda:
                start = torch.cuda.Event(enable_timing=True)
                end = torch.cuda.Event(enable_timing=True)
                start.record()
                step()
                end.record()
                end.synchronize()
                times.append(start.elapsed_time(end))
            else:
                t0 = time.perf_counter()
                step()
                times.append(1000 * (time.perf_counter() - t0))
        result = {"ms": statistics.median(times), "extra_mb": float("nan")}
        if cuda:
            torch.cuda.synchronize()
            before = torch.cuda.memory_allocated()
            torch.cuda.reset_peak_memory_stats()
            step()
            torch.cuda.synchronize()
            result["extra_mb"] = (torch.cuda.max_memory_allocated() - before) / 2**20
        return result
    except torch.cuda.OutOfMemoryError:
        return "OOM"
    finally:
        if cuda:
            torch.cuda.empty_cache()


def _cell(result: dict[str, float] | str, floor: float | None) -> str:
    if isinstance(result, str):
        return f"| {result} | | |"
    ratio = "" if floor is None else f"{result['ms'] / floor:.2f}×"
    memory = "–" if math.isnan(result["extra_mb"]) else f"{result['extra_mb']:.0f}"
    return f"| {result['ms']:.2f} | {ratio} | {memory} |"


def _has(case: str, backend: str) -> bool:
    """Whether ``case`` runs on ``backend``: a loss without a ``backend`` argument (CMC)
    has the torch path alone, and compiled."""
    if backend in ("torch", "compiled") or case == "infonce_queue":
        return True
    return bool(losses.info(case).fused_backends)


def run_losses(args: argparse.Namespace, backends: list[str], records: list[dict]) -> None:
    print("| dtype | N pairs | case | backend | ms | × floor | extra MB |")
    print("|---|---:|---|---|---:|---:|---:|")
    for dtype_name in args.dtypes.split(","):
        dtype = DTYPES[dtype_name]
        for n in (int(s) for s in args.sizes.split(",")):
            plain = [("plain_ntxent", b) for b in ("torch", "compiled") if b in backends]
            cases = [("floor", "torch"), *plain]
            cases += [(c, b) for c in args.losses.split(",") for b in backends if _has(c, b)]
            floor = None
            for case, backend in cases:
                step = make_step(case, backend, n, args.dim, dtype, args.device, args.mode)
                result = measure(step, args.device, args.warmup, args.repeats)
                del step
                if case == "floor" and isinstance(result, dict):
                    floor = result["ms"]
                row = f"| {dtype_name} | {n} | {case} | {backend} {_cell(result, floor)}"
                print(row, flush=True)
                record = {"dtype": dtype_name, "n": n, "case": case, "backend": backend}
                records.append({**record, "result": result})


def run_tiled(args: argparse.Namespace, backends: list[str], records: list[dict]) -> None:
    variants = [v for v in ("fused", "tiled", "dense") if v != "fused" or "triton" in backends]
    print(f"\nNT-Xent at N = {args.tiled} pairs, float32, d = {args.dim}:")
    print("| variant | ms | | extra MB |")
    print("|---|---:|---|---:|")
    for variant in variants:
        step = tiled_step(variant, args.tiled, args.dim, args.tiled_block, args.device)
        result = measure(step, args.device, 1, args.tiled_repeats)
        del step
        label = f"{variant} (block {args.tiled_block})" if variant == "tiled" else variant
        print(f"| {label} {_cell(result, None)}", flush=True)
        records.append({"tiled": variant, "n": args.tiled, "result": result})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--sizes", default="1024,4096,16384", help="pairs N (2N anchors)")
    parser.add_argument("--dtypes", default="fp32,bf16", help=f"of {', '.join(DTYPES)}")
    parser.add_argument("--losses", default=",".join(LOSSES))
    parser.add_argument("--dim", type=int, default=128)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--tiled", type=int, default=65536, help="pairs of the tiled row; 0: none")
    parser.add_argument("--tiled-block", type=int, default=1024)
    parser.add_argument("--tiled-repeats", type=int, default=5)
    parser.add_argument("--json", help="also write every measurement to this file")
    parser.add_argument(
        "--backends",
        help="of torch, triton, compiled (the torch path through torch.compile; with the"
        " plain NT-Xent compiled too); default: torch,triton on CUDA, torch on a CPU",
    )
    parser.add_argument(
        "--mode",
        help="torch.compile mode of backend compiled (default: reduce-overhead on CUDA,"
        " default on a CPU)",
    )
    args = parser.parse_args()
    cuda = args.device.startswith("cuda")
    default = "torch,triton" if cuda else "torch"  # Triton runs on CUDA tensors only
    backends = [b for b in (args.backends or default).split(",") if b]
    if not backends or any(b not in ("torch", "triton", "compiled") for b in backends):
        parser.error(f"--backends must name torch, triton or compiled, got {args.backends!r}")
    args.mode = args.mode or ("reduce-overhead" if cuda else "default")
    name = torch.cuda.get_device_name(args.device) if cuda else "cpu"
    print(
        f"forward+backward on {name}, d = {args.dim}, median of {args.repeats} "
        f"(after {args.warmup} warm-up steps), torch {torch.__version__}, backends {backends}"
        + (f", compile mode {args.mode}" if "compiled" in backends else "")
        + "\n"
    )
    records: list[dict] = []
    run_losses(args, backends, records)
    if args.tiled:
        run_tiled(args, backends, records)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": name, "args": vars(args), "records": records}, f, indent=1)


if __name__ == "__main__":
    main()
