"""gather_distributed: two gloo processes on CPU against one process on the whole batch.

Each rank encodes its half of a fixed batch with a DDP-wrapped linear encoder and calls the
loss with ``gather_distributed=True``. After DDP's averaging the parameter gradients must
equal those of one process on the concatenated batch (float64, within 1e-6), for every
loss that takes the option; a loss's own parameters (AMCL) must get the single-process
gradient on every rank. The gather and the all-reduce must also give exact second
derivatives (a gradient differentiated again, ``create_graph=True``).
"""

from __future__ import annotations

from pathlib import Path

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from contrastkit import losses
from contrastkit.distributed import (
    _all_reduce_sum,
    accepts_gather,
    convert_sync_batchnorm,
    gather,
    gather_with_grad,
    shutdown,
)
from contrastkit.frameworks import two_view_loss
from contrastkit.losses.views import cross_view_similarities

WORLD, LOCAL, IN_DIM, OUT_DIM = 2, 4, 6, 5
CASES = {
    "ntxent": {},
    "dcl": {},
    "dclw": {},
    "flatnce": {},
    "hcl": {},
    "dual_temperature": {},
    "macl": {"alpha": 0.8, "a0": 0.1},
    "infonce": {},
    "supcon": {},
    "lascon": {"similarity": "tanh", "c": 2.0},
    "cacr": {},
    "barlow_twins": {},
    "vicreg": {},
    # every rank computes the global-batch loss
    "cmc": {},
    "align_uniform": {},
    "paradigm": {},
    "arccon": {},
    "mpt": {},
    "met": {},
    "mhe": {},
    "mhs": {},
    "barlow_l2": {},
    "vicreg_l2": {},
    "mmhe": {},
    "mmhs": {},
    "mbarlow": {},
    "mvicreg": {},
    "amcl": {"in_dim": OUT_DIM, "heads": 2, "out_dim": 4, "hidden": 6},
    "amcl_bt": {"in_dim": OUT_DIM, "heads": 2, "out_dim": 4, "base": "barlow_twins"},
    "tau_uncertainty": {"in_dim": OUT_DIM, "heads": 2, "out_dim": 4, "hidden": 6},
    "cosine_temperature": {"in_dim": OUT_DIM, "heads": 2, "out_dim": 4, "period": 7},
    # SimCSE's cross-view layout (frameworks.simcse.two_view_loss): every rank's keys
    "macl_simcse": {"alpha": 0.8, "a0": 0.1},
    "infonce_simcse": {},
    # NNCLR's layout (frameworks.nnclr): constant neighbours against every rank's predictions
    "ntxent_nnclr": {},
    "macl_nnclr": {"alpha": 0.8, "a0": 0.1},
}


def batch() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(3, WORLD * LOCAL, IN_DIM, generator=g, dtype=torch.float64)  # 3 views
    class_labels = torch.tensor([0, 1, 0, 2, 1, 1, 3, 0])
    real_labels = torch.randn(WORLD * LOCAL, generator=g, dtype=torch.float64) * 3
    return x, class_labels, real_labels


def encoder() -> torch.nn.Module:
    torch.manual_seed(1)
    return torch.nn.Linear(IN_DIM, OUT_DIM).double()


def bn_encoder() -> torch.nn.Module:
    """Linear → BatchNorm1d (momentum None: the running stats are the batch's) → ReLU →
    Linear, with a 3-d batch norm input to cover the spatial dimensions."""
    torch.manual_seed(2)
    return torch.nn.Sequential(
        torch.nn.Linear(IN_DIM, 2 * OUT_DIM),
        torch.nn.Unflatten(1, (OUT_DIM, 2)),
        torch.nn.BatchNorm1d(OUT_DIM, momentum=None),
        torch.nn.Flatten(),
        torch.nn.ReLU(),
        torch.nn.Linear(2 * OUT_DIM, OUT_DIM),
    ).double()


def bn_state(model: torch.nn.Module) -> list[torch.Tensor]:
    """Parameter gradients, then the batch norm's running mean and variance."""
    bn = next(m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm))
    return [*(p.grad.clone() for p in model.parameters()), bn.running_mean, bn.running_var]


def loss_of(
    name: str, model: torch.nn.Module, x: torch.Tensor, labels: tuple, gather: bool
) -> tuple[torch.Tensor, torch.nn.Module]:
    """The loss value and the loss module (AMCL's heads and φ have parameters too)."""
    v, n, _ = x.shape
    z = model(x.reshape(v * n, IN_DIM)).reshape(v, n, OUT_DIM)
    registered = name.removesuffix("_bt").removesuffix("_simcse").removesuffix("_nnclr")
    torch.manual_seed(3)
    loss = losses.get(registered, gather_distributed=gather, **CASES[name]).double()
    kind = losses.info(registered).inputs
    if name.endswith("_simcse"):
        return two_view_loss(loss, z[0], z[1], gather), loss
    if name.endswith("_nnclr"):  # both directions, the neighbours a constant (view 3)
        one = cross_view_similarities(z[2].detach(), z[1], None, gather)
        two = cross_view_similarities((z[2] + z[0]).detach(), z[0], None, gather)
        return loss.similarity_loss(*(torch.cat(t) for t in zip(one, two, strict=True))), loss
    if kind == "views":
        return loss(z), loss
    if kind == "labeled":
        return loss(z[0], z[1], labels[0] if name == "supcon" else labels[1]), loss
    return loss(z[0], z[1]), loss


def all_grads(*modules: torch.nn.Module) -> list[torch.Tensor]:
    return [p.grad.clone() for m in modules for p in m.parameters()]


def _distributed_grads(rank: int) -> dict[str, list[torch.Tensor]]:
    """Every case on this rank's rows; the DDP wrappers die with this frame."""
    x, class_labels, real_labels = batch()
    rows = slice(rank * LOCAL, (rank + 1) * LOCAL)
    grads = {}
    for name in CASES:
        model = torch.nn.parallel.DistributedDataParallel(encoder())
        loss, module = loss_of(
            name, model, x[:, rows], (class_labels[rows], real_labels[rows]), gather=True
        )
        loss.backward()
        grads[name] = all_grads(model, module)
        if name == "cacr":  # its logged parts: the global batch's too
            grads["cacr_parts"] = torch.tensor(module.last_parts, dtype=torch.float64)
    model = torch.nn.parallel.DistributedDataParallel(convert_sync_batchnorm(bn_encoder()))
    loss_of("ntxent", model, x[:, rows], (), gather=True)[0].backward()
    grads["sync_batchnorm"] = bn_state(model.module)
    return grads


def _worker(rank: int, init_file: str, out_dir: str) -> None:
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=WORLD)
    torch.save(_distributed_grads(rank), Path(out_dir) / f"rank{rank}.pt")
    shutdown()


def test_ddp_parameter_gradients_equal_single_process(tmp_path: Path) -> None:
    mp.spawn(_worker, args=(str(tmp_path / "init"), str(tmp_path)), nprocs=WORLD, join=True)
    x, class_labels, real_labels = batch()
    per_rank = [torch.load(tmp_path / f"rank{r}.pt", weights_only=True) for r in range(WORLD)]
    for name in CASES:
        model = encoder()
        loss, module = loss_of(name, model, x, (class_labels, real_labels), gather=False)
        loss.backward()
        expected = all_grads(model, module)
        for rank_grads in per_rank:
            for got, want in zip(rank_grads[name], expected, strict=True):
                torch.testing.assert_close(got, want, rtol=1e-6, atol=1e-9, msg=f"{name}")
            if name == "cacr":
                parts = torch.tensor(module.last_parts, dtype=torch.float64)
                torch.testing.assert_close(rank_grads["cacr_parts"], parts, msg="cacr parts")

    model = bn_encoder()
    loss_of("ntxent", model, x, (), gather=False)[0].backward()
    for rank_state in per_rank:
        for got, want in zip(rank_state["sync_batchnorm"], bn_state(model), strict=True):
            torch.testing.assert_close(got, want, rtol=1e-6, atol=1e-9, msg="sync_batchnorm")


def _cubic() -> tuple[torch.Tensor, ...]:
    """The whole batch ``x``, the direction ``v`` and each rank's weights ``w [WORLD, ...]``
    of :func:`_second_derivatives` (float64, fixed)."""
    g = torch.Generator().manual_seed(11)
    x, v = (torch.randn(WORLD * LOCAL, 3, generator=g, dtype=torch.float64) for _ in range(2))
    w = torch.randn(WORLD, WORLD * LOCAL, 3, generator=g, dtype=torch.float64)
    s = torch.randn(WORLD, LOCAL, 3, generator=g, dtype=torch.float64)
    return x, v, w, s


def _second_derivatives(rank: int, init_file: str, out_dir: str) -> None:
    """Rank ``r``'s loss is ``Σ w_r·gather(x)³ + Σ s_r·allreduce(x)³`` on its rows of ``x``;
    the Hessian of the ranks' total along ``v`` restricted to its rows, by differentiating
    the gradient (``create_graph=True``)."""
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=WORLD)
    x, v, w, s = _cubic()
    rows = slice(rank * LOCAL, (rank + 1) * LOCAL)
    local = x[rows].clone().requires_grad_()
    loss = (w[rank] * gather_with_grad(local).pow(3)).sum()
    loss = loss + (s[rank] * _all_reduce_sum(local).pow(3)).sum()
    (grad,) = torch.autograd.grad(loss, local, create_graph=True)
    (hessian_v,) = torch.autograd.grad((grad * v[rows]).sum(), local)
    torch.save({"grad": grad.detach(), "hessian_v": hessian_v}, Path(out_dir) / f"hv{rank}.pt")
    shutdown()


def test_second_derivatives_through_the_gather_and_the_all_reduce_are_exact(
    tmp_path: Path,
) -> None:
    """Against one process on the whole batch: the gradient of the ranks' summed losses and
    its derivative along ``v`` (float64; the previous backwards treated the reduction over
    ranks as a constant in a recorded backward, so the second derivative missed the other
    ranks' terms)."""
    mp.spawn(_second_derivatives, args=(str(tmp_path / "init"), str(tmp_path)), nprocs=WORLD)
    x, v, w, s = _cubic()
    x = x.clone().requires_grad_()
    parts = x.view(WORLD, LOCAL, 3)
    total = sum((w[r] * x.pow(3)).sum() + (s[r] * parts.sum(0).pow(3)).sum() for r in range(WORLD))
    (grad,) = torch.autograd.grad(total, x, create_graph=True)
    (hessian_v,) = torch.autograd.grad((grad * v).sum(), x)
    for rank in range(WORLD):
        got = torch.load(tmp_path / f"hv{rank}.pt", weights_only=True)
        rows = slice(rank * LOCAL, (rank + 1) * LOCAL)
        torch.testing.assert_close(got["grad"], grad.detach()[rows], rtol=1e-12, atol=1e-12)
        torch.testing.assert_close(got["hessian_v"], hessian_v[rows], rtol=1e-12, atol=1e-12)


def _uneven(rank: int, init_file: str, out_dir: str) -> None:
    """Rank r gathers 4 - r rows, with and without gradient, and records each error."""
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=WORLD)
    errors = []
    for fn in (gather_with_grad, gather):
        try:
            fn(torch.randn(LOCAL - rank, 3, requires_grad=fn is gather_with_grad))
        except ValueError as error:
            errors.append(str(error))
    gather_with_grad(torch.randn(LOCAL, 3))  # the group still works afterwards
    Path(out_dir, f"uneven{rank}.txt").write_text("\n".join(errors))
    shutdown()


def test_unequal_batches_are_one_error_on_every_rank(tmp_path: Path) -> None:
    """gloo aborted the processes (SIGABRT) on unequal row counts."""
    mp.spawn(_uneven, args=(str(tmp_path / "init"), str(tmp_path)), nprocs=WORLD)
    expected = "gathering across ranks needs equal batches, got rows 4, 3 by rank"
    for rank in range(WORLD):
        assert (tmp_path / f"uneven{rank}.txt").read_text().splitlines() == [expected] * 2


def test_every_loss_but_simsiam_takes_the_option_and_is_checked_above() -> None:
    takes = {n for n in losses.available() if accepts_gather(losses.info(n).cls)}
    # SimSiam's loss is per sample
    assert takes == set(losses.available()) - {"simsiam"}
    assert takes <= {name.removesuffix("_bt").removesuffix("_simcse") for name in CASES}
