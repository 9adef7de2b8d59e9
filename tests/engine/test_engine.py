"""Engine: accumulation, clipping, the non-finite guard, fp16 loss scaling, autocast,
compile modes."""

from __future__ import annotations

import contextlib
import copy

import pytest
import torch
from torch import nn

from contrastkit import losses
from contrastkit.engine import Engine, NonFiniteError, build_optimizer
from contrastkit.engine.device import channels_last_default


def linear_problem() -> tuple[nn.Linear, torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    model = nn.Linear(3, 1)
    x, y = torch.randn(8, 3, generator=g), torch.randn(8, 1, generator=g)
    return model, x, y


def test_accumulation_equals_one_step_on_the_whole_batch() -> None:
    model, x, y = linear_problem()
    twin = copy.deepcopy(model)
    engine = Engine("cpu", grad_accum=2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    before = model.weight.detach().clone()
    for p in model.parameters():  # stale gradients (another loop's) are cleared first
        p.grad = torch.full_like(p, 1e3)
    assert not engine.backward_step(nn.functional.mse_loss(model(x[:4]), y[:4]), opt)
    assert torch.equal(model.weight, before)  # no step after the first half
    assert engine.backward_step(nn.functional.mse_loss(model(x[4:]), y[4:]), opt)
    ref_opt = torch.optim.SGD(twin.parameters(), lr=0.1)
    Engine("cpu").backward_step(nn.functional.mse_loss(twin(x), y), ref_opt)
    assert torch.allclose(model.weight, twin.weight, atol=1e-7)
    assert torch.allclose(model.bias, twin.bias, atol=1e-7)


def test_clipping_bounds_the_update() -> None:
    model, x, y = linear_problem()
    params = list(model.parameters())
    loss = 100.0 * nn.functional.mse_loss(model(x), y)
    grads = torch.autograd.grad(loss, params, retain_graph=True)
    norm = torch.linalg.vector_norm(torch.cat([g.flatten() for g in grads]))
    assert norm > 1.0
    before = [p.detach().clone() for p in params]
    Engine("cpu", clip_grad=1.0).backward_step(loss, torch.optim.SGD(params, lr=1.0))
    for p, b, g in zip(params, before, grads, strict=True):
        assert torch.allclose(b - p.detach(), g / norm, atol=1e-6)  # update = g·(1/‖g‖)


def test_non_finite_loss_stops_before_the_step() -> None:
    model, x, _ = linear_problem()
    before = model.weight.detach().clone()
    engine = Engine("cpu")
    loss = model(x).sum() * float("nan")
    with pytest.raises(NonFiniteError, match=r"non-finite loss nan at backward pass 1.*tau=3"):
        engine.backward_step(
            loss, torch.optim.SGD(model.parameters(), lr=0.1), describe=lambda: "tau=3"
        )
    assert torch.equal(model.weight, before) and model.weight.grad is None


@pytest.mark.parametrize("clip", [None, 1.0])
def test_non_finite_gradient_of_a_finite_loss_stops_before_the_step(clip: float | None) -> None:
    """The count of affected tensors is taken before clipping, which would spread the NaN
    of the total norm to every gradient."""
    w, v = nn.Parameter(torch.tensor([0.0, 4.0])), nn.Parameter(torch.tensor([1.0]))
    # finite (3.0); the masked sqrt's gradient at 0 is 0·inf = NaN (a NaN total norm)
    loss = torch.where(w > 0, w.sqrt(), torch.zeros_like(w)).sum() + v.sum()
    with pytest.raises(NonFiniteError, match=r"non-finite gradient.*1 of 2 parameter tensors"):
        Engine("cpu", clip_grad=clip).backward_step(loss, torch.optim.SGD([w, v], lr=0.1))
    assert w.tolist() == [0.0, 4.0] and v.tolist() == [1.0]


def test_clipping_a_step_where_no_parameter_got_a_gradient() -> None:
    w, v = nn.Parameter(torch.ones(2)), nn.Parameter(torch.ones(2))
    assert Engine("cpu", clip_grad=1.0).backward_step(v.sum(), torch.optim.SGD([w], lr=0.1))
    assert w.tolist() == [1.0, 1.0]


def test_a_window_ended_early_is_the_mean_of_its_passes_and_the_next_starts_afresh() -> None:
    """grad_accum = 2 over epochs of 3 batches, the last forced (as the trainer does):
    each epoch steps on mean(g0, g1), then on g2 alone; no gradient is carried into the
    next epoch, and the step count is the schedule's ceil(3 / 2) = 2 per epoch."""
    w = nn.Parameter(torch.zeros(()))
    opt = torch.optim.SGD([w], lr=1.0)
    engine = Engine("cpu", grad_accum=2)
    updates, stepped = [], []
    for _ in range(2):
        for i, g in enumerate((1.0, 10.0, 100.0)):
            last = i == 2
            assert engine.will_step == (i == 1)  # DDP syncs the passes that step
            before = w.item()
            stepped.append(engine.backward_step(g * w, opt, force_step=last))
            if stepped[-1]:
                updates.append(before - w.item())
    assert updates == [5.5, 100.0, 5.5, 100.0]
    assert stepped == [False, True, True] * 2 and engine.optimizer_steps == 4


def test_a_step_reads_the_device_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Loss and gradient norm are checked in one host read per optimiser step (each read
    waits for the device's queued work on a GPU, issue #38)."""
    model, x, y = linear_problem()
    reads = []
    original = torch.Tensor.__bool__
    monkeypatch.setattr(torch.Tensor, "__bool__", lambda t: reads.append(1) or original(t))
    Engine("cpu").backward_step(
        ((model(x) - y) ** 2).mean(), torch.optim.SGD(model.parameters(), lr=0.1)
    )
    assert len(reads) == 1


def _fused_problem(
    kind: str = "adam",
) -> tuple[nn.Linear, torch.Tensor, torch.Tensor, torch.optim.Optimizer]:
    model, x, y = linear_problem()
    if kind == "lars":  # skips on the device too (found_inf), on every device
        return model, x, y, build_optimizer("lars", model, lr=0.1, weight_decay=1e-4)
    return model, x, y, torch.optim.Adam(model.parameters(), lr=0.1, fused=True)


@pytest.mark.parametrize("kind", ["adam", "lars"])
def test_a_fused_step_reads_nothing_and_skips_a_non_finite_update_on_the_device(
    kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a fused optimiser (built so on CUDA) or LARS the step reads nothing on the
    host: the optimiser skips a non-finite update itself, and the next call raises, the
    parameters as before the skipped step (fused Adam runs on CPU too, so this is the CUDA
    path)."""
    model, x, y, opt = _fused_problem(kind)
    engine = Engine("cpu")
    reads = []
    original = torch.Tensor.__bool__

    def counted(t: torch.Tensor) -> bool:
        reads.append(t.device.type if not t.is_pinned() else "host")
        return original(t)

    monkeypatch.setattr(torch.Tensor, "__bool__", counted)
    engine.backward_step(((model(x) - y) ** 2).mean(), opt)
    assert reads == []  # the flag is read at the next call
    good = model.weight.detach().clone()
    state = {k: v.clone() for k, v in opt.state[model.weight].items()}
    engine.backward_step(model(x).sum() * float("nan"), opt)  # skipped on the device
    assert torch.equal(model.weight, good) and state.keys() == opt.state[model.weight].keys()
    assert all(torch.equal(v, opt.state[model.weight][k]) for k, v in state.items())
    with pytest.raises(NonFiniteError, match=r"loss nan.*backward pass 2 \(optimiser step 2\)"):
        engine.backward_step(((model(x) - y) ** 2).mean(), opt)
    assert torch.equal(model.weight, good) and model.weight.grad is None


def test_the_last_deferred_step_is_checked_by_check_pending() -> None:
    model, x, y, opt = _fused_problem()
    engine = Engine("cpu", grad_accum=2)
    engine.backward_step(model(x).sum() * float("inf"), opt)  # in the window: no step yet
    assert engine.backward_step(((model(x) - y) ** 2).mean(), opt)  # the window's step
    with pytest.raises(NonFiniteError, match="skipped that update"):
        engine.check_pending()
    engine.check_pending()  # reported once


def test_fused_and_plain_adam_steps_agree() -> None:
    """The deferred path takes the same steps as the checked one (to fused Adam's
    rounding)."""
    runs = []
    start, x, y = linear_problem()
    for fused in (False, True):
        model = copy.deepcopy(start)
        opt = torch.optim.Adam(model.parameters(), lr=0.1, fused=fused)
        engine = Engine("cpu")
        for _ in range(5):
            engine.backward_step(((model(x) - y) ** 2).mean(), opt)
        engine.check_pending()
        runs.append(model.weight.detach().clone())
    torch.testing.assert_close(runs[0], runs[1], rtol=1e-6, atol=1e-7)


def test_channels_last_is_on_by_default_for_convolutions_on_cuda_only() -> None:
    conv, mlp = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU()), nn.Linear(3, 1)
    assert channels_last_default(torch.device("cuda", 0), conv)
    assert not channels_last_default(torch.device("cuda", 0), mlp)
    assert not channels_last_default(torch.device("cpu"), conv)
    engine = Engine("cpu")  # channels_last None: decided when the model is prepared
    engine.prepare(conv)
    assert engine.channels_last is False and engine.describe()["channels_last"] is False
    forced = Engine("cpu", channels_last=True)
    assert forced.prepare(conv)[0].weight.is_contiguous(memory_format=torch.channels_last)


@pytest.mark.parametrize("mode", ["default", "reduce-overhead", "max-autotune"])
def test_compile_mode_reaches_torch_compile_and_marks_graph_steps(
    mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``compile_mode`` is torch.compile's mode; under a mode that replays CUDA graphs each
    step is marked, so a replay may reuse the previous step's outputs' memory."""
    modes, marks = [], []
    monkeypatch.setattr(nn.Module, "compile", lambda self, **kw: modes.append(kw["mode"]))
    monkeypatch.setattr(torch.compiler, "cudagraph_mark_step_begin", lambda: marks.append(1))
    engine = Engine("cpu", compile=True, compile_mode=mode)
    engine.compile_modules(nn.Linear(2, 2), None, nn.Linear(2, 2))
    engine.begin_step()
    assert modes == [mode, mode] and engine.describe()["compile_mode"] == mode
    assert len(marks) == (mode != "default")
    Engine("cpu", compile_mode=mode).begin_step()  # compile off: nothing compiled or marked
    assert len(marks) == (mode != "default")
    with pytest.raises(ValueError, match="compile_mode must be one of default, reduce-overhead"):
        Engine("cpu", compile=True, compile_mode="fast")


def test_prepare_views_checks_the_device_and_compiles_what_offers_it() -> None:
    """The engine hands each view generator that offers ``check_device`` its device, and
    under ``compile`` calls ``compile()`` of those that have one (the image augments);
    generators without either are left alone."""

    seen: list[torch.device] = []

    class Augment:
        compiled = False

        def check_device(self, device: torch.device) -> None:
            seen.append(device)

        def compile(self) -> None:
            self.compiled = True

    on, off = Augment(), Augment()
    Engine("cpu", compile=True).prepare_views(on, lambda batch, generator: batch)
    Engine("cpu").prepare_views(off)
    assert on.compiled and not off.compiled
    assert seen == [torch.device("cpu")] * 2


FP16_CPU = pytest.mark.skipif(
    not hasattr(torch.amp, "GradScaler"), reason="fp16 on CPU needs torch.amp.GradScaler (2.3+)"
)


@FP16_CPU
def test_fp16_scaler_skips_an_overflowing_step_and_lowers_the_scale() -> None:
    w = nn.Parameter(torch.tensor([0.0, 4.0]))
    engine = Engine("cpu", precision="fp16")
    scale = engine.scaler.get_scale()
    assert engine.backward_step(w.sqrt().sum(), torch.optim.SGD([w], lr=0.1))
    assert w.tolist() == [0.0, 4.0] and engine.scaler.get_scale() == scale / 2
    model, x, y = linear_problem()
    before = model.weight.detach().clone()
    engine.backward_step(
        nn.functional.mse_loss(model(x), y), torch.optim.SGD(model.parameters(), lr=0.1)
    )
    assert not torch.equal(model.weight, before)  # a finite step goes through


@pytest.mark.parametrize(
    ("precision", "dtype"),
    [("bf16", torch.bfloat16), pytest.param("fp16", torch.float16, marks=FP16_CPU)],
)
def test_autocast_runs_the_network_in_half_and_the_loss_in_float32(
    precision: str, dtype: torch.dtype
) -> None:
    """One autocast region around network and loss (a training step's forward): the
    network's products in ``dtype``, the registered loss in float32, fp32 a no-op."""
    net, criterion = nn.Linear(4, 4), losses.get("ntxent")
    x1, x2 = torch.randn(6, 4), torch.randn(6, 4)
    with Engine("cpu", precision=precision).autocast():
        z1, z2 = net(x1), net(x2)
        loss = criterion(z1, z2)
    assert z1.dtype == dtype and loss.dtype == torch.float32
    assert torch.equal(loss, criterion(z1.float(), z2.float()))  # the loss of its inputs
    with Engine("cpu").autocast():
        assert net(x1).dtype == torch.float32
    assert isinstance(Engine("cpu").autocast(), contextlib.nullcontext)
