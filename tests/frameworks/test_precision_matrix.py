"""The precision matrix, generated from the registries: every framework × every loss it
accepts × fp32/bf16/fp16 trains two steps on the CPU with a tiny encoder, the way the
Trainer does (the framework's whole forward under ``Engine.autocast``, backward and step
outside it): finite float32 loss, the encoder run in the precision's dtype, its parameters
updated, float buffers (queues, support sets, BN statistics) still float32. A newly
registered framework or loss joins the matrix by itself.
"""

from __future__ import annotations

import shutil

import pytest
import torch
from torch import Tensor, nn

from contrastkit import losses
from contrastkit.engine import Engine
from contrastkit.frameworks import FRAMEWORKS, Framework, build_framework

N, IN, WIDTH = 8, 12, 8  # batch, input width, encoder feature width
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
FP16_CPU = pytest.mark.skipif(
    not hasattr(torch.amp, "GradScaler"), reason="fp16 on CPU needs torch.amp.GradScaler (2.3+)"
)
PRECISIONS = ["fp32", "bf16", pytest.param("fp16", marks=FP16_CPU)]
PAIRS = [(f, loss) for f, cls in FRAMEWORKS.items() for loss in cls.compatible_losses()]


class TinyEncoder(nn.Sequential):
    """``[N, IN] → [N, WIDTH]``: one linear layer and a ReLU."""

    def __init__(self) -> None:
        super().__init__(nn.Linear(IN, WIDTH), nn.ReLU())
        self.feature_dim = WIDTH


def tiny_framework(framework: str, loss: str) -> Framework:
    """``framework`` with ``loss`` around a :class:`TinyEncoder`: small heads and queues."""
    kwargs = {"heads": 2, "out_dim": 8} if losses.info(loss).inputs == "features" else {}
    options = {"num_views": 3} if framework == "multiview" else {}
    return build_framework(
        framework, TinyEncoder(), loss, kwargs, proj_dim=8, queue_size=16, **options
    )


def train_two_steps(framework: str, loss: str, precision: str, compile: bool = False) -> None:
    """Two training steps; asserts what the module docstring lists."""
    torch.manual_seed(0)
    model = tiny_framework(framework, loss)
    engine = Engine("cpu", precision=precision, compile=compile)
    if precision == "fp16":  # the default 2^16 makes the first steps of tiny nets overflow
        engine.scaler = torch.amp.GradScaler("cpu", init_scale=2.0**8)
    engine.compile_modules(*(m for name, m in model.named_children() if name != "loss"))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    before = [p.detach().clone() for p in model.encoder.parameters()]
    dtypes: list[torch.dtype] = []
    model.encoder.register_forward_hook(lambda m, a, out: dtypes.append(out.dtype))
    g = torch.Generator().manual_seed(1)
    x, labels = torch.randn(N, IN, generator=g), torch.arange(N) % 4
    for _ in range(2):
        views = [x + 0.1 * torch.randn(N, IN, generator=g) for _ in range(model.num_views)]
        with engine.autocast():
            value: Tensor = model(views, labels if model.needs_labels else None)
        assert value.dtype == torch.float32 and torch.isfinite(value), float(value)
        engine.backward_step(value, optimizer)
    assert dtypes and set(dtypes) == {DTYPES[precision]}  # autocast reached the encoder
    after = list(model.encoder.parameters())
    assert any(not torch.equal(b, p) for b, p in zip(before, after, strict=True))
    assert all(b.dtype == torch.float32 for b in model.buffers() if b.is_floating_point())


@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize(("framework", "loss"), PAIRS)
def test_every_framework_and_loss_trains_in_every_precision(
    framework: str, loss: str, precision: str
) -> None:
    train_two_steps(framework, loss, precision)


def test_the_matrix_covers_every_framework() -> None:
    assert {f for f, _ in PAIRS} == set(FRAMEWORKS)
    assert ("moco", "macl") in PAIRS and ("nnclr", "ntxent") in PAIRS


# one worker compiles at a time: the inductor cache on disk is shared by the xdist workers
@pytest.mark.xdist_group("inductor")
@pytest.mark.skipif(
    not any(shutil.which(c) for c in ("g++", "c++", "clang++")),
    reason="torch.compile's CPU backend (inductor) needs a C++ compiler; none on PATH",
)
@pytest.mark.parametrize(("framework", "loss"), [("simclr", "ntxent"), ("moco", "macl")])
def test_compiled_network_trains_in_bf16(framework: str, loss: str) -> None:
    """``torch.compile`` of the network parts inside the step's autocast region (a
    representative subset: compiling costs seconds per case on the CPU)."""
    train_two_steps(framework, loss, "bf16", compile=True)
