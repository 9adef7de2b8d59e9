"""AMCL under MoCo: ``AMCL.queue_loss`` against a float64 loop, its reduction to
InfoNCE / DCL, where gradients go, the momentum heads, the per-head queue and the CLI."""

from __future__ import annotations

import copy
import json
import shlex
from pathlib import Path

import pytest
import torch
from amcl_reference import contrast_ref

from contrastkit import losses
from contrastkit.cli import main
from contrastkit.frameworks import MoCo, build_framework, compatible_losses
from contrastkit.images import load_digits
from contrastkit.losses import AMCL
from contrastkit.losses import functional as F
from contrastkit.losses.registry import LossInfo
from contrastkit.losses.views import normalize
from contrastkit.models import build_encoder

HEADS, N, Q, DIM = 2, 3, 5, 4


def encoder() -> torch.nn.Module:
    return build_encoder("2d", (1, 8, 8), feature_dim=32, width=8)


@pytest.fixture(scope="module")
def digits_batch() -> torch.Tensor:
    return load_digits().x_train[:128]


def random_triplet(seed: int, heads: int = HEADS) -> tuple[torch.Tensor, ...]:
    """Raw (unnormalised) float64 ``z_q, z_k [C, N, d']`` and ``queue [C, Q, d']``."""
    g = torch.Generator().manual_seed(seed)
    shapes = ((heads, N, DIM), (heads, N, DIM), (heads, Q, DIM))
    return tuple(torch.randn(*s, generator=g, dtype=torch.float64) for s in shapes)


def loop_reference(module: AMCL, z_q: torch.Tensor, z_k: torch.Tensor, queue: torch.Tensor):
    """Query by query and head by head: similarities, τ from single-pair calls of φ.

    Returns the loss (``contrast_ref``: Σ heads, mean over queries) and the per-head
    mean τ⁺ and τ⁻ the module should record.
    """
    t_fixed = module.fixed_temperature
    pos = torch.empty(HEADS, N, dtype=torch.float64)
    tp = torch.empty_like(pos)
    neg = torch.empty(HEADS, N, Q, dtype=torch.float64)
    tn = torch.empty_like(neg)
    with torch.no_grad():
        for c in range(HEADS):
            for i in range(N):
                q = z_q[c, i] / z_q[c, i].norm()
                k = z_k[c, i] / z_k[c, i].norm()
                pos[c, i] = q @ k
                learned = module.adaptive_temperature(q, k)
                tp[c, i] = t_fixed if module.adapt in ("neg", "none") else learned
                for j in range(Q):
                    key = queue[c, j] / queue[c, j].norm()
                    neg[c, i, j] = q @ key
                    learned = module.adaptive_temperature(q, key)
                    tn[c, i, j] = t_fixed if module.adapt in ("pos", "none") else learned
    value = contrast_ref(
        pos, neg, tp, tn, DIM, module.beta, module.negatives, module.kappa, module.base == "infonce"
    )
    return value, tp.mean(dim=1), tn.mean(dim=(1, 2))


@pytest.mark.parametrize("adapt", ["both", "pos", "neg"])
# κ = 50 > Q is clamped to every queued negative; κ plays no part in the softmax form
@pytest.mark.parametrize(("negatives", "kappa"), [("topk", 2), ("topk", 50), ("softmax", 2)])
@pytest.mark.parametrize("base", ["ntxent", "infonce"])
def test_queue_loss_matches_loop_reference(
    base: str, negatives: str, kappa: int, adapt: str
) -> None:
    torch.manual_seed(0)
    module = AMCL(
        in_dim=6,
        base=base,
        heads=HEADS,
        out_dim=DIM,
        beta=0.7,
        negatives=negatives,
        kappa=kappa,
        adapt=adapt,
        temperature=0.3,
        upper=1.5,
    ).double()
    for seed in range(2):
        z_q, z_k, queue = random_triplet(seed)
        expected, tau_pos, tau_neg = loop_reference(module, z_q, z_k, queue)
        got = module.queue_loss(z_q, z_k, queue)
        assert got.item() == pytest.approx(expected, rel=1e-10, abs=1e-10)
        stats = module.temperature_stats()
        for c in range(HEADS):
            assert stats[f"tau_pos/head{c}"] == pytest.approx(tau_pos[c].item(), rel=1e-10)
            assert stats[f"tau_neg/head{c}"] == pytest.approx(tau_neg[c].item(), rel=1e-10)


@pytest.mark.parametrize("base", ["ntxent", "infonce"])
def test_constant_temperature_one_head_reduces_to_infonce_and_dcl(base: str) -> None:
    """adapt="none", one head, β = 0, softmax: DCL (ntxent) / InfoNCE (infonce) at t."""
    t = 0.25
    module = AMCL(
        in_dim=6,
        base=base,
        heads=1,
        out_dim=DIM,
        beta=0.0,
        negatives="softmax",
        adapt="none",
        temperature=t,
    ).double()
    plain = F.info_nce if base == "infonce" else F.dcl
    diffs = []
    for seed in range(4):
        z_q, z_k, queue = random_triplet(100 + seed, heads=1)
        q, k, bank = normalize(z_q[0]), normalize(z_k[0]), normalize(queue[0])
        reference = plain((q * k).sum(dim=1), q @ bank.T, t)
        diffs.append(module.queue_loss(z_q, z_k, queue).item() - reference.item())
    assert max(diffs) - min(diffs) < 1e-10
    assert diffs[0] == pytest.approx(0.0, abs=1e-10)


def test_queue_loss_gradients_reach_queries_not_keys_or_queue() -> None:
    module = AMCL(in_dim=6, heads=HEADS, out_dim=DIM, negatives="softmax").double()
    z_q, z_k, queue = (x.requires_grad_(True) for x in random_triplet(7))
    loss = module.queue_loss(z_q, z_k, queue)
    g_q, g_k, g_queue = torch.autograd.grad(loss, (z_q, z_k, queue), allow_unused=True)
    assert g_k is None and g_queue is None
    assert bool((g_q.abs().sum(dim=(1, 2)) > 0).all())  # every head's queries


def test_queue_loss_refuses_bases_without_negatives_and_bad_shapes() -> None:
    z_q, z_k, queue = (x.float() for x in random_triplet(0))
    for base in ("simsiam", "barlow_twins"):
        module = AMCL(in_dim=6, base=base, heads=HEADS, out_dim=DIM)
        with pytest.raises(ValueError, match=f"base 'ntxent' or 'infonce', got '{base}'"):
            module.queue_loss(z_q, z_k, queue)
    module = AMCL(in_dim=6, heads=HEADS, out_dim=DIM)
    with pytest.raises(ValueError, match=r"z_q must have shape \[2, N, 4\], got \(3, 3, 4\)"):
        module.queue_loss(torch.randn(3, N, DIM), z_k, queue)
    with pytest.raises(ValueError, match=r"queue must have shape \[2, Q, 4\], got \(2, 5, 3\)"):
        module.queue_loss(z_q, z_k, queue[..., :3])
    with pytest.raises(ValueError, match=r"queue must have shape \[2, Q, 4\], got \(5, 4\)"):
        module.queue_loss(z_q, z_k, queue[0])
    with pytest.raises(ValueError, match=r"z_k must have z_q's shape \(2, 3, 4\)"):
        module.queue_loss(z_q, z_k[:, :2], queue)
    with pytest.raises(TypeError, match="z_k must be a floating-point tensor"):
        module.queue_loss(z_q, z_k.long(), queue)


def test_moco_accepts_amcl_only_among_features_losses_and_refuses_its_other_bases() -> None:
    assert "amcl" in compatible_losses("moco")
    other = LossInfo("other", torch.nn.Identity, "features", "", False)
    assert not MoCo.accepts(other)
    for base in ("simsiam", "barlow_twins"):
        with pytest.raises(ValueError, match=f"cannot train AMCL with base '{base}'"):
            build_framework("moco", encoder(), "amcl", {"base": base})


def test_moco_amcl_step_momentum_heads_and_per_head_queue(digits_batch: torch.Tensor) -> None:
    torch.manual_seed(0)
    m, size, n = 0.9, 96, 64
    model = build_framework(
        "moco", encoder(), "amcl", {"heads": 3, "out_dim": 16}, queue_size=size, momentum=m
    )
    assert isinstance(model, MoCo) and model.projector is None
    assert model.queue.shape == (3, size, 16)
    torch.testing.assert_close(model.queue.norm(dim=-1), torch.ones(3, size))
    # the key network copies (encoder, AMCL's heads); φ is not copied
    assert isinstance(model.key_encoder[1], type(model.loss.projector))
    key_ids = {id(p) for p in model.key_encoder.parameters()}
    assert not key_ids & {id(p) for p in model.parameters() if p.requires_grad}
    with torch.no_grad():  # make the key network differ from the query side
        for p in model.key_encoder.parameters():
            p.add_(0.05 * torch.randn_like(p))
    x1, x2 = digits_batch[:n], digits_batch[n : 2 * n]
    queue_before = model.queue.clone()
    query_before = copy.deepcopy(torch.nn.Sequential(model.encoder, model.loss.projector))
    key_before = copy.deepcopy(model.key_encoder)
    expected_keys = copy.deepcopy(key_before)
    for pk, pq in zip(expected_keys.parameters(), query_before.parameters(), strict=True):
        pk.data = m * pk.data + (1 - m) * pq.data
    reference = copy.deepcopy(model.loss)
    k = normalize(expected_keys(x2)).detach()
    expected = reference.queue_loss(query_before(x1), k, queue_before)

    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss = model([x1, x2])
    torch.testing.assert_close(loss, expected, rtol=1e-5, atol=1e-5)
    # momentum: one head weight and one encoder weight, exactly m·θ_k + (1 - m)·θ_q
    w_key, w_query = key_before[1].w1, query_before[1].w1
    torch.testing.assert_close(model.key_encoder[1].w1, m * w_key + (1 - m) * w_query)
    first_key, first_query = next(key_before.parameters()), next(query_before.parameters())
    torch.testing.assert_close(
        next(model.key_encoder.parameters()), m * first_key + (1 - m) * first_query
    )
    # every head's queue: its own newest keys at rows 0..n-1, the rest untouched
    assert int(model.queue_ptr) == n
    torch.testing.assert_close(model.queue[:, :n], k)
    torch.testing.assert_close(model.queue[:, n:], queue_before[:, n:])

    optimizer.zero_grad()
    loss.backward()
    assert all(p.grad is None for p in model.key_encoder.parameters())
    assert not model.queue.requires_grad
    assert all(
        p.grad is not None and p.grad.abs().sum() > 0
        for p in model.encoder.parameters()
        if p.requires_grad
    )
    head_grad = model.loss.projector.w1.grad.abs().sum(dim=(1, 2))
    assert head_grad.shape == (3,) and bool((head_grad > 0).all())
    assert model.loss.adaptive_temperature.phi.weight.grad.abs().sum() > 0
    optimizer.step()
    logs = model.step_logs()
    assert {f"tau_neg/head{c}" for c in range(3)} <= set(logs)
    assert torch.isfinite(torch.tensor(list(logs.values()))).all()

    model([x2, x1])  # n more keys wrap round: rows 64..95, then 0..31
    assert int(model.queue_ptr) == (2 * n) % size


def test_cli_trains_moco_with_amcl(tmp_path: Path) -> None:
    out = tmp_path / "run"
    command = (
        "train --dataset digits --epochs 1 --framework moco --loss amcl --heads 2 "
        "--batch-size 64 --feature-dim 16 --width 4 --queue-size 256 --loss-arg out_dim=8 "
        "--threads 1 --no-progress --knn-k 50 --out"
    )
    argv = [*shlex.split(command), str(out)]
    assert main(argv) == 0
    final = json.loads((out / "final.json").read_text())
    assert final["config"]["framework"] == "moco" and final["config"]["loss"] == "amcl"
    assert 0.0 <= final["knn_accuracy"] <= 1.0
    record = json.loads((out / "metrics.jsonl").read_text().splitlines()[0])
    assert torch.isfinite(torch.tensor(record["loss"])) and "tau_neg_mean" in record
    state = torch.load(out / "checkpoint.pt", weights_only=True)["model"]
    assert state["queue"].shape == (2, 256, 8)
    assert int(state["queue_ptr"]) == (1797 * 4 // 5 // 64 * 64) % 256
    assert losses.info("amcl").inputs == "features"
