"""Optimisers, LARS against a hand computation, schedules and learning-rate scaling."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from contrastkit.engine import (
    LARS,
    LENGTH_DEPENDENT,
    SCHEDULES,
    build_optimizer,
    build_schedule,
    multiplier,
    scale_lr,
)
from contrastkit.engine.kernels import KernelCounter


def one_step(opt: torch.optim.Optimizer, params: list[torch.Tensor], grads: list[list]) -> None:
    for p, g in zip(params, grads, strict=True):
        p.grad = torch.tensor(g, dtype=torch.float64)
    opt.step()


def test_lars_matches_a_hand_computed_step() -> None:
    w = torch.tensor([[3.0, 4.0]], dtype=torch.float64, requires_grad=True)  # ‖w‖ = 5
    b = torch.tensor([1.0, -2.0], dtype=torch.float64, requires_grad=True)
    opt = build_optimizer("lars", [w, b], lr=0.5, weight_decay=0.1, momentum=0.9)
    one_step(opt, [w, b], [[[0.6, 0.8]], [0.5, 0.5]])
    # weight: d = g + 0.1·w = [0.9, 1.2], ‖d‖ = 1.5, trust = 0.001·5/1.5, v = 0.5·trust·d
    trust = 0.001 * 5 / 1.5
    v_w = [0.5 * trust * 0.9, 0.5 * trust * 1.2]
    assert w.detach()[0].tolist() == pytest.approx([3.0 - v_w[0], 4.0 - v_w[1]], abs=1e-15)
    # bias (1-D): no decay, no trust ratio: v = 0.5·g
    assert b.detach().tolist() == pytest.approx([0.75, -2.25], abs=1e-15)
    one_step(opt, [w, b], [[[0.0, 0.0]], [0.5, 0.5]])  # momentum: v = 0.9·0.25 + 0.25
    assert b.detach().tolist() == pytest.approx([0.75 - 0.475, -2.25 - 0.475], abs=1e-15)
    # weight, zero gradient: d = 0.1·w (decay only), trust = 0.001·‖w‖/‖0.1·w‖ = 0.01
    w1 = torch.tensor([[3.0 - v_w[0], 4.0 - v_w[1]]], dtype=torch.float64)
    expected = w1 - (0.9 * torch.tensor([v_w], dtype=torch.float64) + 0.5 * 0.01 * 0.1 * w1)
    assert torch.allclose(w.detach(), expected, atol=1e-15)


def test_lars_nesterov_step() -> None:
    b = torch.tensor([1.0], dtype=torch.float64, requires_grad=True)
    opt = LARS([{"params": [b], "lars_exclude": True}], lr=0.5, momentum=0.9, nesterov=True)
    one_step(opt, [b], [[0.5]])  # buf = 0.25, update = 0.9·0.25 + 0.25
    assert b.item() == pytest.approx(1.0 - 0.475, abs=1e-15)


def test_lars_excludes_biases_and_norm_parameters_from_decay_and_trust() -> None:
    model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4))
    opt = build_optimizer("lars", model, lr=1.0, weight_decay=0.5, momentum=0.0)
    groups = {g["lars_exclude"]: g for g in opt.param_groups}
    assert [p.shape for p in groups[False]["params"]] == [torch.Size([4, 3])]
    assert len(groups[True]["params"]) == 3 and groups[True]["weight_decay"] == 0.0
    before = [p.detach().clone() for p in model.parameters()]
    for p in model.parameters():
        p.grad = torch.zeros_like(p)
    opt.step()
    after = list(model.parameters())
    assert not torch.equal(after[0], before[0])  # the weight decays ...
    for old, new in zip(before[1:], after[1:], strict=True):
        assert torch.equal(old, new)  # ... bias, BN weight and BN bias do not
    # with a gradient, a 1-D parameter moves by lr·g exactly (no trust ratio)
    for p in model.parameters():
        p.grad = torch.full_like(p, 0.25)
    bias = after[1].detach().clone()
    opt.step()
    assert torch.allclose(after[1], bias - 0.25)


def _lars_reference(
    params: list[torch.Tensor],
    grads: list[torch.Tensor | None],
    bufs: list[torch.Tensor | None],
    exclude: list[bool],
    lr: float,
    mu: float,
    decay: float,
    eta: float,
    nesterov: bool,
) -> None:
    """One LARS step, tensor by tensor, in float64 (the module docstring of lars.py)."""
    for i, (w, g) in enumerate(zip(params, grads, strict=True)):
        if g is None:
            continue
        d, trust = g.clone(), 1.0
        if not exclude[i]:
            d = g + decay * w
            w_norm, d_norm = float(w.norm()), float(d.norm())
            trust = eta * w_norm / d_norm if w_norm > 0 and d_norm > 0 else 1.0
        v = mu * (bufs[i] if bufs[i] is not None else torch.zeros_like(w)) + lr * trust * d
        bufs[i] = v
        w -= mu * v + lr * trust * d if nesterov else v


@pytest.mark.parametrize("channels_last", [False, True])
@pytest.mark.parametrize("nesterov", [False, True])
def test_lars_steps_match_a_tensor_by_tensor_float64_reference(
    nesterov: bool, channels_last: bool
) -> None:
    """Several steps on a conv net (weights adapted, biases and batch-norm parameters
    excluded), one weight starting at zero (trust 1), one parameter without a gradient
    (left alone, no momentum buffer), against a loop over the tensors; with the conv
    weight in channels_last too (its stretch of LARS's buffer is in memory order)."""
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.Flatten(), nn.Linear(16, 5), nn.Linear(5, 2)
    ).double()
    if channels_last:
        model = model.to(memory_format=torch.channels_last)
    with torch.no_grad():
        model[3].weight.zero_()
    opt = build_optimizer("lars", model, lr=0.7, weight_decay=0.05, momentum=0.9, nesterov=nesterov)
    params = list(model.parameters())
    exclude = [p.ndim <= 1 for p in params]
    expected = [p.detach().clone() for p in params]
    bufs: list[torch.Tensor | None] = [None] * len(params)
    g = torch.Generator().manual_seed(1)
    for _ in range(4):
        grads = [torch.randn(p.shape, generator=g, dtype=torch.float64) for p in params]
        grads[-1] = None  # the last bias: no gradient
        for p, grad in zip(params, grads, strict=True):
            p.grad = grad
        opt.step()
        _lars_reference(expected, grads, bufs, exclude, 0.7, 0.9, 0.05, 0.001, nesterov)
    for p, e in zip(params, expected, strict=True):
        assert torch.allclose(p.detach(), e, rtol=0, atol=1e-14)
    assert "momentum_buffer" not in opt.state[params[-1]]


def test_lars_takes_a_group_of_mixed_dtypes_and_devices() -> None:
    """A group holding float32 and float64 tensors and one on a second device ("meta"
    stands in for it) steps each tensor as if it were alone (the multi-tensor operations
    run per device and dtype)."""
    a = torch.ones(3, 2, dtype=torch.float32, requires_grad=True)
    b = torch.ones(2, 3, dtype=torch.float64, requires_grad=True)
    elsewhere = torch.ones(2, 2, device="meta", requires_grad=True)
    alone = [t.detach().clone().requires_grad_() for t in (a, b)]
    for t in (a, b, elsewhere, *alone):
        t.grad = torch.full_like(t, 0.5)
    LARS([a, elsewhere, b], lr=0.5, weight_decay=0.1).step()
    for t in alone:
        LARS([t], lr=0.5, weight_decay=0.1).step()
    assert torch.equal(a, alone[0]) and torch.equal(b, alone[1])
    assert not torch.equal(a, torch.ones_like(a)) and b.dtype == torch.float64


def test_a_lars_step_is_a_fixed_number_of_operations() -> None:
    """The step runs multi-tensor operations over each group: its aten operators do not
    grow with the number of parameter tensors (a loop over ResNet-18's 62 tensors
    dispatched 440; on a GPU each launches a kernel)."""
    counts = []
    for depth in (2, 20):
        model = nn.Sequential(*[nn.Linear(4, 4) for _ in range(depth)])
        opt = build_optimizer("lars", model, lr=0.1, weight_decay=1e-6, nesterov=True)
        for p in model.parameters():
            p.grad = torch.ones_like(p)
        opt.step()  # the first step creates the momentum buffers
        with KernelCounter() as counter:
            opt.step()
        opt.found_inf = torch.tensor(0.0)  # skippable on the device: a few more
        opt.step()  # the first such step makes the buffer and its views
        with KernelCounter() as skippable:
            opt.step()
        counts.append((sum(counter.split()), sum(skippable.split())))
    assert counts[0] == counts[1] and counts[0][0] < 40 and counts[0][1] < 50


def _conv_net() -> nn.Module:
    """Conv weights in channels_last (the engine's CUDA default), a linear head, biases and
    batch norm (excluded from the adaptation)."""
    torch.manual_seed(0)
    net = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.Flatten(), nn.Linear(16, 5))
    return net.to(memory_format=torch.channels_last)


def _grads(net: nn.Module, seed: int, poison: bool = False, drop: bool = False) -> None:
    g = torch.Generator().manual_seed(seed)
    for p in net.parameters():
        grad = torch.randn(p.shape, generator=g)
        p.grad = torch.empty_like(p).copy_(grad)  # the parameter's layout, as autograd gives
    if drop:  # the head's weight gets no gradient: another list of tensors
        net[3].weight.grad = None
    if poison:
        next(net.parameters()).grad[0, 0, 0, 0] = float("nan")
        list(net.parameters())[-1].grad[1] = float("inf")


@pytest.mark.parametrize("nesterov", [False, True])
def test_lars_skips_a_non_finite_step_on_the_device_and_takes_the_others_bit_for_bit(
    nesterov: bool,
) -> None:
    """With ``found_inf`` set (the engine's and GradScaler's protocol) a finite step is the
    plain step bit for bit and a non-finite one leaves parameters and momentum exactly as
    they were; channels_last weights keep their layout; a step in which a parameter has no
    gradient (another list of tensors) is right too."""
    nets = [_conv_net(), _conv_net()]
    opts = [build_optimizer("lars", n, lr=0.7, weight_decay=0.05, nesterov=nesterov) for n in nets]
    assert opts[1].skips_on_device and opts[1]._step_supports_amp_scaling
    for step, (poison, drop) in enumerate([(0, 0), (0, 0), (1, 0), (0, 1), (0, 0)]):
        if not poison:  # the plain optimiser never sees the skipped step
            _grads(nets[0], step, drop=bool(drop))
            opts[0].step()
        _grads(nets[1], step, bool(poison), bool(drop))
        before = [p.detach().clone() for p in nets[1].parameters()]
        momenta = [s["momentum_buffer"].clone() for s in opts[1].state.values()]
        opts[1].found_inf = torch.tensor(float(poison))
        opts[1].step()
        del opts[1].found_inf
        if poison:
            assert all(torch.equal(a, b) for a, b in zip(before, nets[1].parameters(), strict=True))
            kept = [s["momentum_buffer"] for s in opts[1].state.values()]
            assert all(torch.equal(a, b) for a, b in zip(momenta, kept, strict=True))
        for a, b in zip(nets[0].parameters(), nets[1].parameters(), strict=True):
            assert torch.equal(a, b)
    for p in nets[1].parameters():
        buf = opts[1].state[p]["momentum_buffer"]
        assert buf.stride() == p.stride() and torch.isfinite(p).all()


def test_lars_divides_by_the_grad_scale_it_is_given() -> None:
    """``grad_scale`` (a GradScaler whose gradients were not unscaled) divides the
    gradients before the step."""
    nets = [_conv_net(), _conv_net()]
    opts = [build_optimizer("lars", n, lr=0.7, weight_decay=0.05) for n in nets]
    _grads(nets[0], 0)
    opts[0].step()
    _grads(nets[1], 0)
    for p in nets[1].parameters():
        p.grad.mul_(1024.0)  # a power of two: the division is exact
    opts[1].grad_scale, opts[1].found_inf = torch.tensor(1024.0), torch.tensor(0.0)
    opts[1].step()
    pairs = zip(nets[0].parameters(), nets[1].parameters(), strict=True)
    assert all(torch.equal(a, b) for a, b in pairs)


def test_lars_under_a_grad_scaler_skips_on_the_device_and_unscales_itself() -> None:
    """``torch.amp.GradScaler`` hands LARS ``found_inf`` and, when its gradients were not
    unscaled, ``grad_scale``: a finite step equals plain LARS on the true gradients (the
    scale is a power of two, so exactly), a non-finite one is skipped and the scale
    lowered."""
    nets = [_conv_net(), _conv_net()]
    opts = [build_optimizer("lars", n, lr=0.7, weight_decay=0.05) for n in nets]
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0**10)
    scaler.scale(torch.ones(()))  # the scaler makes its scale at the first loss it scales
    _grads(nets[0], 0)
    opts[0].step()
    _grads(nets[1], 0)
    for p in nets[1].parameters():
        p.grad.mul_(2.0**10)  # as backward of the scaled loss gives them
    scaler.step(opts[1])
    scaler.update()
    pairs = zip(nets[0].parameters(), nets[1].parameters(), strict=True)
    assert all(torch.equal(a, b) for a, b in pairs)
    before = [p.detach().clone() for p in nets[1].parameters()]
    _grads(nets[1], 1, poison=True)
    scaler.step(opts[1])
    scaler.update()
    assert all(torch.equal(a, b) for a, b in zip(before, nets[1].parameters(), strict=True))
    assert scaler.get_scale() == 2.0**9


def test_sgd_adam_adamw_builders() -> None:
    model = nn.Linear(2, 2)
    sgd = build_optimizer("sgd", model, lr=0.1, weight_decay=1e-4, momentum=0.8, nesterov=True)
    assert isinstance(sgd, torch.optim.SGD)
    assert sgd.defaults["momentum"] == 0.8 and sgd.defaults["nesterov"] is True
    assert sgd.defaults["weight_decay"] == 1e-4
    assert type(build_optimizer("adam", model, lr=1e-3)) is torch.optim.Adam
    assert type(build_optimizer("adamw", model, lr=1e-3, weight_decay=0.01)) is torch.optim.AdamW
    with pytest.raises(ValueError, match="unknown optimizer 'rmsprop'; available: sgd, adam"):
        build_optimizer("rmsprop", model, lr=1e-3)
    # fused (a step the device can skip, engine.skips_on_device) for CUDA parameters only:
    # CPU runs keep torch's default implementation and their numbers
    for name in ("sgd", "adam", "adamw"):
        assert not build_optimizer(name, model, lr=1e-3).defaults.get("fused")
    assert build_optimizer("adam", model, lr=1e-3, fused=True).defaults["fused"] is True


@pytest.mark.parametrize("nesterov", [False, True])
def test_fused_sgd_survives_a_skipped_first_step(nesterov: bool) -> None:
    """fp16's first steps often overflow, so the scaler skips them (``found_inf`` on a
    fused optimiser, what CUDA parameters get). Fused SGD then read momentum buffers it
    had made with ``empty_like`` and never written; with the buffers made as zeros, a
    skipped first step leaves everything as it was and the next is plain SGD's first."""
    model = nn.Linear(4, 3)
    frozen = nn.Parameter(torch.ones(5), requires_grad=False)  # a momentum encoder's: no buffer
    params = [*model.parameters(), frozen]
    start = [p.detach().clone() for p in params]
    fused = build_optimizer("sgd", params, lr=0.1, momentum=0.9, nesterov=nesterov, fused=True)
    assert fused.defaults["fused"] and frozen not in fused.state
    for p in model.parameters():
        p.grad = torch.full_like(p, float("inf"))
    fused.found_inf, fused.grad_scale = torch.ones(()), None
    fused.step()  # skipped on the device
    del fused.found_inf, fused.grad_scale
    plain_model = nn.Linear(4, 3)
    plain_model.load_state_dict(model.state_dict())
    plain = build_optimizer("sgd", plain_model, lr=0.1, momentum=0.9, nesterov=nesterov)
    for _ in range(2):
        for a, b in zip(model.parameters(), plain_model.parameters(), strict=True):
            a.grad = torch.arange(a.numel(), dtype=a.dtype).reshape(a.shape) / 7
            b.grad = a.grad.clone()
        fused.step()
        plain.step()
        for a, b in zip(model.parameters(), plain_model.parameters(), strict=True):
            torch.testing.assert_close(a, b, rtol=1e-6, atol=1e-7)
    assert torch.equal(start[-1], frozen)


def test_warmup_cosine_values() -> None:
    m = multiplier("warmup_cosine", steps_per_epoch=10, epochs=4, warmup_epochs=1)
    assert m(0) == pytest.approx(0.1) and m(4) == pytest.approx(0.5) and m(9) == 1.0
    assert m(10) == 1.0  # the cosine starts at its top
    assert m(25) == pytest.approx(0.5)  # halfway through the 30 cosine steps
    assert m(39) == pytest.approx(0.5 * (1 + math.cos(math.pi * 29 / 30)))
    with pytest.raises(ValueError, match="leaves no steps"):
        multiplier("warmup_cosine", 10, 2, warmup_epochs=2)


def test_step_and_linear_and_constant_values() -> None:
    step = multiplier("step", 10, 4, milestones=[2, 3], gamma=0.1)
    assert [step(s) for s in (0, 19, 20, 29)] == pytest.approx([1, 1, 0.1, 0.1])
    assert step(30) == pytest.approx(0.01)
    linear = multiplier("linear", 10, 4)
    assert [linear(s) for s in (0, 10, 30, 40, 50)] == pytest.approx([1, 0.75, 0.25, 0, 0])
    assert multiplier("constant", 10, 4)(33) == 1.0
    with pytest.raises(ValueError, match="unknown schedule 'cyclic'"):
        multiplier("cyclic", 10, 4)


@pytest.mark.parametrize("name", SCHEDULES)
def test_length_dependence_is_declared_as_it_behaves(name: str) -> None:
    # a schedule may extend a run only if its first E epochs are the same for any total
    kw = {"warmup_epochs": 1} if name == "warmup_cosine" else {"milestones": [2]}
    short, long = multiplier(name, 10, 3, **kw), multiplier(name, 10, 6, **kw)
    same = all(short(s) == long(s) for s in range(30))
    assert same == (name not in LENGTH_DEPENDENT)


def test_schedule_drives_the_optimiser_rate_per_step() -> None:
    p = nn.Parameter(torch.zeros(1))
    opt = torch.optim.SGD([p], lr=2.0)
    sched = build_schedule("step", opt, steps_per_epoch=2, epochs=3, milestones=[1], gamma=0.5)
    rates = []
    for _ in range(5):
        rates.append(opt.param_groups[0]["lr"])
        p.grad = torch.zeros(1)
        opt.step()
        sched.step()
    assert rates == pytest.approx([2.0, 2.0, 1.0, 1.0, 1.0])


def test_lr_scaling_rules() -> None:
    assert scale_lr(0.3, 512, "linear") == pytest.approx(0.6)  # MACL App. B.1
    assert scale_lr(0.3, 128, "linear") == pytest.approx(0.15)
    assert scale_lr(0.3, 1024, "sqrt") == pytest.approx(0.6)
    assert scale_lr(1e-3, 128, "linear_above_256") == 1e-3  # MACL App. B.3: only above 256
    assert scale_lr(1e-3, 512, "linear_above_256") == pytest.approx(2e-3)
    assert scale_lr(1e-3, 512, "none") == 1e-3
    with pytest.raises(ValueError, match="unknown lr_scaling 'cubic'"):
        scale_lr(1e-3, 512, "cubic")
