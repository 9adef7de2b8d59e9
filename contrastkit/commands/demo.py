"""``contrastkit demo``: every registered loss on one real batch, with its paper identity.

The batch is 64 scikit-learn digits (bundled, offline), each shown in three views (random
one-pixel shifts plus noise) and embedded by a fixed random linear map, i.e. an untrained
encoder. For every loss the command prints the value, the norm of its gradient with respect
to the embeddings and, where the paper states one, whether an identity holds on this batch.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor

from contrastkit import losses
from contrastkit._optional import require
from contrastkit.losses import functional as F
from contrastkit.losses import views as V

NAME = "demo"
HELP = "Evaluate every registered loss on a real digits batch and check its paper identities."


@dataclass
class Batch:
    views: Tensor  # [V, N, d] embeddings
    labels: Tensor  # [N] digit classes


DIGITS = 1797  # scikit-learn's digits, the demo's data


def make_batch(n: int = 64, num_views: int = 3, dim: int = 32, seed: int = 0) -> Batch:
    require("sklearn", "train", "the demo")
    from sklearn.datasets import load_digits

    g = torch.Generator().manual_seed(seed)
    digits = load_digits()
    idx = torch.randperm(len(digits.target), generator=g)[:n]
    images = torch.tensor(digits.images, dtype=torch.float64)[idx] / 16.0  # [N, 8, 8]
    projection = torch.randn(64, dim, generator=g, dtype=torch.float64) / 8.0
    out = []
    for _ in range(num_views):
        shift = torch.randint(-1, 2, (2,), generator=g).tolist()
        view = torch.roll(images, shifts=shift, dims=(1, 2))
        view = view + 0.1 * torch.randn(view.shape, generator=g, dtype=torch.float64)
        out.append(view.reshape(n, 64) @ projection)
    return Batch(torch.stack(out), torch.tensor(digits.target, dtype=torch.long)[idx])


def _close(a: Tensor, b: Tensor) -> bool:
    return bool(torch.allclose(a, b, rtol=1e-9, atol=1e-9))


def _grad(fn: Callable[[Tensor], Tensor], z: Tensor) -> Tensor:
    z = z.detach().requires_grad_(True)
    return torch.autograd.grad(fn(z), z)[0]


# Each identity: (statement, check(batch) -> bool). Stated in the docstrings of the losses.
def _flatnce(b: Batch) -> bool:
    z1, z2 = b.views[0], b.views[1]
    same_value = _close(losses.FlatNCE()(z1, z2), losses.NTXent()(z1, z2))
    return same_value and _close(
        _grad(lambda z: losses.FlatNCE()(z, z2), z1), _grad(lambda z: losses.DCL()(z, z2), z1)
    )


def _macl(b: Batch) -> bool:
    z1, z2 = b.views[0], b.views[1]
    plain = losses.MACL(0.1, alpha=0.7, reweight=False, adaptive=False)(z1, z2)
    module = losses.MACL(0.1, alpha=0.5, a0=0.0)
    module(z1, z2)
    a = torch.nn.functional.cosine_similarity(z1, z2).mean().item()
    return (
        _close(plain, losses.NTXent(0.1)(z1, z2))
        and abs(module.last_temperature - 0.1 * (1 + 0.5 * a)) < 1e-12
    )


def _cacr(b: Batch) -> bool:
    pos_cost, neg_cost = V.multiview_sq_distances(b.views)
    _, attraction, _ = F.cacr(pos_cost, neg_cost, t_pos=1e-12, return_parts=True)
    return bool(torch.allclose(attraction, pos_cost.mean(), rtol=1e-6))


def _paradigm(b: Batch) -> bool:
    z2, tau = b.views[1], 0.05
    paradigm = losses.get("paradigm", gd="fraction", weight="softmax", symmetric=False)
    g_paradigm = _grad(lambda z: paradigm(z, z2), b.views[0])
    g_info = _grad(lambda z: losses.InfoNCE(tau)(z, z2), b.views[0])
    return _close(g_paradigm, tau * g_info)


IDENTITIES: dict[str, tuple[str, Callable[[Batch], bool]]] = {
    "ntxent": (
        "= SupCon with all-distinct labels (LASCon §3.4.3)",
        lambda b: _close(
            losses.NTXent()(b.views[0], b.views[1]),
            losses.SupCon()(b.views[0], b.views[1], torch.arange(b.labels.numel())),
        ),
    ),
    "flatnce": ("value = InfoNCE's, gradient = DCL's (MACL §5.2)", _flatnce),
    "macl": ("α-free, unweighted = NT-Xent; τ_a = Eq. (7)", _macl),
    "hcl": (
        "τ⁺ = 0, β = 0 gives NT-Xent (Robinson et al. Eq. 5)",
        lambda b: _close(
            losses.HCL(0.5, 0.0, 0.0)(b.views[0], b.views[1]),
            losses.NTXent(0.5)(b.views[0], b.views[1]),
        ),
    ),
    "dual_temperature": (
        "τ_inter = τ gives NT-Xent",
        lambda b: _close(
            losses.DualTemperature(0.1, 0.1)(b.views[0], b.views[1]),
            losses.NTXent(0.1)(b.views[0], b.views[1]),
        ),
    ),
    "lascon": (
        "indicator similarity = SupCon (LASCon §3.4.3)",
        lambda b: _close(
            losses.LASCon(similarity="indicator")(b.views[0], b.views[1], b.labels),
            losses.SupCon()(b.views[0], b.views[1], b.labels),
        ),
    ),
    "cacr": ("t⁺ → 0: attraction = alignment loss (CACR Lemma 1)", _cacr),
    "paradigm": ("fraction GD, softmax W, r = 1: gradient = τ·InfoNCE's (Eq. 4)", _paradigm),
}


def call_loss(name: str, batch: Batch) -> tuple[Tensor, Tensor]:
    """The loss on ``batch`` and the gradient with respect to the embedding views."""
    info = losses.info(name)
    z = batch.views.detach().clone().requires_grad_(True)
    kwargs = {"in_dim": z.shape[-1]} if info.inputs == "features" else {}
    module = losses.get(name, **kwargs).to(z.dtype)
    args: dict[str, Callable[[], tuple]] = {
        "pair": lambda: (z[0], z[1]),
        "features": lambda: (z[0], z[1]),
        "query_key": lambda: (z[0], z[1]),
        "labeled": lambda: (z[0], z[1], batch.labels),
        "views": lambda: (z,),
        "predictor": lambda: (z[0], z[1], z[0], z[1]),
    }
    loss = module(*args[info.inputs]())
    (grad,) = torch.autograd.grad(loss, z)
    return loss.detach(), grad


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--batch-size", type=int, default=64, help="digits per batch (default 64)")
    parser.add_argument("--seed", type=int, default=0)


def run(args: argparse.Namespace) -> int:
    if not 2 <= args.batch_size <= DIGITS:
        raise ValueError(
            f"--batch-size must be in [2, {DIGITS}] (the digits), got {args.batch_size}"
        )
    if args.seed < 0:
        raise ValueError(f"--seed must be >= 0, got {args.seed}")
    batch = make_batch(args.batch_size, seed=args.seed)
    print(
        f"One batch of {args.batch_size} sklearn digits, 3 augmented views, "
        "random 32-d embedding (float64)\n"
    )
    print("| loss | inputs | value | ‖∇z‖ | paper identity | holds |")
    print("|---|---|---:|---:|---|---|")
    failures = 0
    for name in losses.available():
        value, grad = call_loss(name, batch)
        statement, check = IDENTITIES.get(name, ("", None))
        holds = "" if check is None else ("yes" if check(batch) else "NO")
        failures += holds == "NO"
        print(
            f"| {name} | {losses.info(name).inputs} | {value.item():.4f} "
            f"| {grad.norm().item():.4f} "
            f"| {statement} | {holds} |"
        )
    print(f"\n{len(IDENTITIES) - failures}/{len(IDENTITIES)} identities hold.")
    return 1 if failures else 0
