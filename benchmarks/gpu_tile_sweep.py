"""Check the Triton backend on a GPU and sweep its tile shapes (issue #38).

Two parts, both on one device:

1. **Agreement.** Every loss of ``--losses`` on ``backend="triton"`` against
   ``backend="torch"`` and against the torch path in float64: the relative error
   ``‖x - ref‖ / ‖ref‖`` of the loss value and of the gradients of both views, on fresh
   random embeddings of ``--check-n`` pairs (no multiple of any tile), float32 and
   bfloat16 inputs.
2. **Tiles.** The fused log-sum-exp of the NT-Xent layout (``2N`` anchors, keys = anchors,
   each row's self and positive excluded) for each ``(BLOCK_M, BLOCK_N, warps, stages)``
   of ``--configs``: forward and forward + backward time, against the torch
   implementation of the same statistic and the three-GEMM floor, and the relative error
   of its value and gradient against float64, with float32 operands at each of
   ``--precisions`` (``tl.dot``'s ``ieee``: exact, no tensor cores; ``tf32x3``: three TF32
   products; ``tf32``) and bfloat16 operands. A configuration that does not compile
   (shared memory) prints its error.

    python benchmarks/gpu_tile_sweep.py                       # cuda
    TRITON_INTERPRET=1 python benchmarks/gpu_tile_sweep.py --device cpu --check-n 40 \\
        --sizes 64 --configs 16x16x4x2                        # the script itself, on a CPU
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

import torch
from gpu_loss_bench import measure  # beside this script: the loss table's timing

from contrastkit import losses
from contrastkit.losses.functional import _gram_triton
from contrastkit.losses.functional._negatives import gram_logsumexp

CHECKED = ("ntxent", "infonce_queue", "dcl", "macl", "supcon", "lascon", "cacr")
CONFIGS = (  # the H200 sweep of 2026-11-27: small tiles won at every size
    "32x64x4x2,32x32x4x2,64x32x4x2,32x128x4x2,64x64x4x2,64x64x8x2,32x64x4x3,64x128x8x2"
)


def _rel(x: torch.Tensor, ref: torch.Tensor) -> float:
    x, ref = x.detach().double(), ref.detach().double()
    return float((x - ref).norm() / ref.norm().clamp(min=1e-300))


def _loss_and_grads(case: str, backend: str, z1, z2, extra, dtype: torch.dtype):
    name = "infonce" if case == "infonce_queue" else case
    module = losses.get(name, backend=backend)
    a, b = (z.detach().to(dtype).clone().requires_grad_() for z in (z1, z2))
    if case == "infonce_queue":
        loss = module(a, b, extra.to(dtype))
    elif losses.info(case).inputs == "labeled":
        loss = module(a, b, extra)
    elif losses.info(case).inputs == "views":
        loss = module(torch.stack([a, b]))
    else:
        loss = module(a, b)
    loss.backward()
    return loss.detach(), a.grad, b.grad


def check(args: argparse.Namespace) -> None:
    print("| loss | dtype | value vs torch | value vs fp64 | grads vs torch | grads vs fp64 |")
    print("|---|---|---:|---:|---:|---:|")
    g = torch.Generator(device=args.device).manual_seed(1)
    n, d = args.check_n, args.dim
    for case in args.losses.split(","):
        z1, z2 = (torch.randn(n, d, generator=g, device=args.device) for _ in range(2))
        if case == "infonce_queue":
            extra = torch.randn(3 * n, d, generator=g, device=args.device)
        elif case == "lascon":
            extra = torch.rand(n, generator=g, device=args.device)
        else:
            extra = torch.randint(0, max(2, n // 8), (n,), generator=g, device=args.device)
        for dtype_name, dtype in (("fp32", torch.float32), ("bf16", torch.bfloat16)):
            x64 = [z.to(dtype).double() for z in (z1, z2)]  # the same inputs, exactly
            ext64 = extra.to(dtype).double() if case == "infonce_queue" else extra
            ref = _loss_and_grads(case, "torch", *x64, ext64, torch.float64)
            try:
                tri = _loss_and_grads(case, "triton", z1, z2, extra, dtype)
                tor = _loss_and_grads(case, "torch", z1, z2, extra, dtype)
            except Exception as err:  # report and go on
                print(f"| {case} | {dtype_name} | error: {type(err).__name__}: {err} |")
                continue
            gt = torch.cat([tri[1].flatten(), tri[2].flatten()])
            go = torch.cat([tor[1].flatten(), tor[2].flatten()])
            gr = torch.cat([ref[1].flatten(), ref[2].flatten()])
            finite = bool(torch.isfinite(gt).all() and torch.isfinite(tri[0]))
            print(
                f"| {case} | {dtype_name} | {_rel(tri[0], tor[0]):.1e} | {_rel(tri[0], ref[0]):.1e}"
                f" | {_rel(gt, go):.1e} | {_rel(gt, gr):.1e}{'' if finite else ' NON-FINITE'} |",
                flush=True,
            )


def _time(step: Callable[[], None], device: str, repeats: int) -> float:
    """Median milliseconds of ``step`` after two untimed calls, timed as the loss table
    times its cells (:func:`gpu_loss_bench.measure`)."""
    result = measure(step, device, 2, repeats)
    if isinstance(result, str):
        raise RuntimeError(f"{result}: out of device memory")
    return result["ms"]


def _pair_exclude(n: int, device: str) -> torch.Tensor:
    idx = torch.arange(n, device=device)
    first = torch.stack([idx, idx + n], dim=1)
    return torch.cat([first, first.flip(1)])


def _floor_step(a: torch.Tensor, grad_s: torch.Tensor) -> Callable[[], None]:
    """The three ``(2N×d)·(d×2N)``-sized products of an exact loss, in ``a``'s dtype."""
    a = a.detach()

    def floor() -> None:
        a @ a.T
        grad_s @ a
        grad_s.T @ a

    return floor


def _statistic_step(
    a: torch.Tensor, excl: torch.Tensor, tiles: tuple[int, int] | None, backward: bool
) -> Callable[[], None]:
    """The NT-Xent log-sum-exp at σ = 10: torch (``tiles`` None) or Triton with ``tiles``."""

    def step() -> None:
        a.grad = None
        if tiles is None:
            lse = gram_logsumexp(a, 10.0, None, None, excl)
        else:
            lse = _gram_triton.logsumexp(a, 10.0, None, None, excl, tiles)
        if backward:
            lse.sum().backward()

    return step


def _error(a: torch.Tensor, excl: torch.Tensor, tiles: tuple[int, int]) -> float:
    """Relative error of the Triton log-sum-exp's value and gradient (of ``Σ lse``) on
    ``a`` against the torch path in float64 on the same (rounded) inputs."""
    x = a.detach().clone().requires_grad_()
    (grad,) = torch.autograd.grad(_gram_triton.logsumexp(x, 10.0, None, None, excl, tiles).sum(), x)
    ref_x = a.detach().double().requires_grad_()
    ref = gram_logsumexp(ref_x, 10.0, None, None, excl)
    (ref_grad,) = torch.autograd.grad(ref.sum(), ref_x)
    lse = _gram_triton.logsumexp(a.detach(), 10.0, None, None, excl, tiles)
    return max(_rel(lse, ref), _rel(grad, ref_grad))


def sweep(args: argparse.Namespace) -> None:
    """Each operand kind (float32 at each of ``--precisions``, bfloat16) × size × tile
    configuration: time, ratio to the floor of the same operands, error against float64."""
    print(
        "\n| operands | N pairs | config (BMxBNxwarpsxstages) | fwd ms | fwd+bwd ms | × floor "
        "| rel. error vs fp64 |"
    )
    print("|---|---:|---|---:|---:|---:|---:|")
    g = torch.Generator(device=args.device).manual_seed(2)
    operands = [(f"fp32 {p}", torch.float32, p) for p in args.precisions.split(",")]
    operands.append(("bf16", torch.bfloat16, None))
    default_precision = _gram_triton._precision
    for n in (int(s) for s in args.sizes.split(",")):
        excl = _pair_exclude(n, args.device)
        z = torch.randn(2 * n, args.dim, generator=g, device=args.device)
        z = torch.nn.functional.normalize(z, dim=1)
        for op_name, dtype, precision in operands:
            a = z.to(dtype).requires_grad_()
            grad_s = torch.randn(2 * n, 2 * n, generator=g, device=args.device).to(dtype)
            floor_ms = _time(_floor_step(a, grad_s), args.device, args.repeats)
            a32 = z.clone().requires_grad_()
            torch_ms = _time(_statistic_step(a32, excl, None, True), args.device, args.repeats)
            print(f"| {op_name} | {n} | floor | | {floor_ms:.3f} | 1.00× | |")
            ratio = torch_ms / floor_ms
            print(f"| {op_name} | {n} | torch (fp32) | | {torch_ms:.3f} | {ratio:.2f}× | |")
            _gram_triton._precision = (  # the benchmark's override of torch's TF32 setting
                default_precision if precision is None else lambda _dtype, p=precision: p
            )
            for config in args.configs.split(","):
                bm, bn, warps, stages = (int(x) for x in config.split("x"))
                _gram_triton.NUM_WARPS, _gram_triton.NUM_STAGES = warps, stages
                try:
                    fwd, both = (
                        _time(_statistic_step(a, excl, (bm, bn), bwd), args.device, args.repeats)
                        for bwd in (False, True)
                    )
                    error = _error(a, excl, (bm, bn)) if n <= args.error_max_n else float("nan")
                except Exception as err:  # a configuration that does not compile
                    print(f"| {op_name} | {n} | {config} | error: {type(err).__name__} | | | |")
                    continue
                ratio = both / floor_ms
                row = f"| {op_name} | {n} | {config} | {fwd:.3f} | {both:.3f} | {ratio:.2f}× "
                print(row + f"| {error:.1e} |", flush=True)
            _gram_triton._precision = default_precision


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--losses", default=",".join(CHECKED))
    parser.add_argument("--check-n", type=int, default=1000)
    parser.add_argument("--dim", type=int, default=128)
    parser.add_argument("--sizes", default="4096,16384", help="pairs N of the tile sweep")
    parser.add_argument("--configs", default=CONFIGS)
    parser.add_argument(
        "--precisions",
        default="ieee,tf32x3",
        help="tl.dot input precisions tried for float32 operands (ieee, tf32x3, tf32)",
    )
    parser.add_argument(
        "--error-max-n", type=int, default=4096, help="float64 error column up to this N"
    )
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--parts", default="check,sweep")
    args = parser.parse_args()
    cuda = args.device.startswith("cuda")
    name = torch.cuda.get_device_name(args.device) if cuda else "cpu"
    print(f"{name}, torch {torch.__version__}, d = {args.dim}\n")
    if "check" in args.parts:
        check(args)
    if "sweep" in args.parts:
        sweep(args)


if __name__ == "__main__":
    main()
