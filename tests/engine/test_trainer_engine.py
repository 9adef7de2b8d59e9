"""The Trainer on the engine: every framework under every precision and on every available
device, compile, accumulation, schedules, the online probe and the run files."""

from __future__ import annotations

import argparse
import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
import torch

from contrastkit.checkpoint_file import CHECKSUM_KEY, TRUST_ENV
from contrastkit.commands.train import add_arguments
from contrastkit.commands.train_flags import overrides_from_args
from contrastkit.provenance import code_info
from contrastkit.training import CHECKPOINT, FINAL, METRICS, TrainConfig
from contrastkit.training.monitors import OnlineProbe

# framework/loss pairs to cover: every framework, and AMCL (heads inside the loss)
PAIRS = [
    ("simclr", "ntxent"),
    ("simclr", "amcl"),
    ("moco", "infonce"),
    ("simsiam", "simsiam"),
    ("barlow_twins", "barlow_twins"),
    ("multiview", "cacr"),
    ("supervised", "supcon"),
]
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
FP16_CPU = pytest.mark.skipif(
    not hasattr(torch.amp, "GradScaler"), reason="fp16 on CPU needs torch.amp.GradScaler (2.3+)"
)
PRECISIONS = ["fp32", "bf16", pytest.param("fp16", marks=FP16_CPU)]
DEVICES = ["cpu", "cuda"]


def train_two_steps(trainer: object) -> tuple[dict, list[torch.dtype]]:
    """One epoch (two steps) recording the encoder's output dtype at each call."""
    dtypes: list[torch.dtype] = []
    hook = trainer.model.encoder.register_forward_hook(lambda m, a, out: dtypes.append(out.dtype))
    record = trainer.train_epoch()
    hook.remove()
    return record, dtypes


@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize(("framework", "loss"), PAIRS)
def test_every_framework_trains_two_steps_under_each_precision(
    make_trainer: Callable, framework: str, loss: str, precision: str
) -> None:
    trainer = make_trainer(framework, loss, precision=precision)
    if precision == "fp16":  # the default 2^16 makes the first steps of tiny nets overflow
        trainer.engine.scaler = torch.amp.GradScaler("cpu", init_scale=2.0**8)
    before = [p.detach().clone() for p in trainer.model.encoder.parameters()]
    record, dtypes = train_two_steps(trainer)
    assert dtypes and set(dtypes) == {DTYPES[precision]}  # autocast reached the encoder
    assert torch.isfinite(torch.tensor(record["loss"]))
    assert trainer.engine.micro_steps == 2
    assert trainer.engine.optimizer_steps == 2
    after = list(trainer.model.encoder.parameters())
    assert any(not torch.equal(b, p) for b, p in zip(before, after, strict=True))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize(("framework", "loss"), PAIRS)
def test_every_framework_on_every_available_device(
    make_trainer: Callable, framework: str, loss: str, device: str
) -> None:
    if device == "cuda" and not torch.cuda.is_available():
        pytest.skip("no CUDA device on this machine (torch.cuda.is_available() is False)")
    trainer = make_trainer(framework, loss, device=device)
    assert all(p.device.type == device for p in trainer.model.parameters())
    assert all(b.device.type == device for b in trainer.model.buffers())  # queues, BN stats
    assert trainer.data.x_train.device.type == device
    record, _ = train_two_steps(trainer)
    assert torch.isfinite(torch.tensor(record["loss"]))
    train_feats, test_feats = trainer.features()
    assert train_feats.device.type == device and train_feats.shape == (32, 8)
    assert 0.0 <= trainer.knn(train_feats, test_feats)["knn_accuracy"] <= 1.0


# one worker compiles at a time: the inductor cache on disk is shared by the xdist workers
@pytest.mark.xdist_group("inductor")
@pytest.mark.skipif(
    not any(shutil.which(c) for c in ("g++", "c++", "clang++")),
    reason="torch.compile's CPU backend (inductor) needs a C++ compiler; none on PATH",
)
def test_compile_trains_one_step(make_trainer: Callable) -> None:
    eager = make_trainer(batch_size=32)
    compiled = make_trainer(batch_size=32, compile=True)
    assert compiled.model.encoder._compiled_call_impl is not None
    assert eager.model.encoder._compiled_call_impl is None
    loss_e, loss_c = eager.train_epoch()["loss"], compiled.train_epoch()["loss"]
    assert compiled.engine.optimizer_steps == 1
    assert loss_c == pytest.approx(loss_e, rel=1e-4)  # same initial weights, same batch
    for a, b in zip(eager.model.parameters(), compiled.model.parameters(), strict=True):
        assert torch.allclose(a, b, atol=1e-5)


def test_accumulation_and_warmup_cosine_schedule(make_trainer: Callable) -> None:
    trainer = make_trainer(
        epochs=3, grad_accum=2, optimizer="lars", schedule="warmup_cosine", warmup_epochs=1,
        lr=0.2, lr_scaling="linear_above_256",
    )  # fmt: skip
    assert trainer.config.effective_lr == pytest.approx(0.2)  # 32 ≤ 256: unscaled
    rates = []
    for _ in range(3):
        rates.append(trainer.train_epoch()["lr"])
        trainer.epoch += 1
    assert trainer.engine.micro_steps == 6 and trainer.engine.optimizer_steps == 3
    # one optimiser step per epoch: warm-up step 1/1, then the cosine at 0 and 1/2
    assert rates == pytest.approx([0.2, 0.2, 0.1])


def test_run_files_probe_tensorboard_and_periodic_checkpoints(
    make_trainer: Callable, tmp_path: Path
) -> None:
    pytest.importorskip("tensorboard")
    trainer = make_trainer(
        out=tmp_path, epochs=2, online_probe=True, save_every=1, tensorboard=True
    )
    final = trainer.fit()
    records = [json.loads(x) for x in (tmp_path / METRICS).read_text().splitlines()]
    for rec in records:
        assert 0.0 <= rec["online_probe_accuracy"] <= 1.0 and rec["online_probe_loss"] > 0
        assert 0.0 <= rec["online_probe_test_accuracy"] <= 1.0
    assert records[0]["online_probe_loss"] == pytest.approx(
        torch.log(torch.tensor(4.0)).item(), rel=0.05
    )  # zero-initialised probe, 4 classes: the first steps are near log 4
    assert (tmp_path / "checkpoint_epoch0001.pt").exists()
    assert (tmp_path / "checkpoint_epoch0002.pt").exists()
    assert any((tmp_path / "tensorboard").iterdir())
    written = json.loads((tmp_path / FINAL).read_text())
    for key in ("device", "gpu_name", "precision", "compile", "torch_version"):
        assert key in written and written[key] == final[key]
    assert written["device"] == "cpu" and written["torch_version"] == torch.__version__
    assert {k: written[k] for k in code_info()} == code_info()  # which code trained it
    assert written["peak_device_memory_mb"] > 0
    state = torch.load(tmp_path / CHECKPOINT, weights_only=True)
    assert {"scheduler", "engine", "torch_rng", "probe"} <= set(state)


def test_the_online_probe_counts_both_splits_classes_and_refuses_continuous_labels() -> None:
    cpu = torch.device("cpu")
    probe = OnlineProbe.for_labels(8, torch.tensor([0, 3, 1]), torch.tensor([4, 0]), cpu, "d")
    assert (probe.layer.in_features, probe.layer.out_features) == (8, 5)
    with pytest.raises(ValueError, match="online_probe needs class labels; r has continuous"):
        OnlineProbe.for_labels(8, torch.tensor([0.5, 1.0]), torch.tensor([0.2]), cpu, "r")


def test_a_checkpoint_of_an_older_config_resumes(
    make_trainer: Callable, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(TRUST_ENV, "1")  # no digest: loaded only when trusted (--trust-checkpoint)
    make_trainer(out=tmp_path, epochs=1).fit()
    state = torch.load(tmp_path / CHECKPOINT, weights_only=True)
    old = {k: v for k, v in state["config"].items() if k not in ("device", "precision", "compile")}
    state["config"] = {**old, "lr_scaling": True}  # as written before lr_scaling was a rule
    # as written before the scheduler, the engine state and the checksum were kept
    del state["scheduler"], state["engine"], state[CHECKSUM_KEY]
    torch.save(state, tmp_path / CHECKPOINT)
    resumed = make_trainer(out=tmp_path, epochs=2)
    resumed.fit(resume=True)
    assert resumed.epoch == 2
    # SGD brings its own lr, scaling and weight decay (contrastkit.training.defaults)
    with pytest.raises(ValueError, match="differs in: lr, lr_scaling, optimizer, weight_decay"):
        make_trainer(out=tmp_path, epochs=3, optimizer="sgd").fit(resume=True)


@pytest.mark.parametrize("schedule", ["warmup_cosine", "linear"])
def test_a_run_under_a_length_dependent_schedule_is_not_extended(
    make_trainer: Callable, tmp_path: Path, schedule: str
) -> None:
    make_trainer(out=tmp_path, epochs=1, schedule=schedule).fit()
    with pytest.raises(ValueError, match=rf"differs in: epochs\); schedule '{schedule}' sets"):
        make_trainer(out=tmp_path, epochs=2, schedule=schedule).fit(resume=True)
    make_trainer(out=tmp_path, epochs=1, schedule=schedule).fit(resume=True)  # same length


def test_engine_flags_reach_the_config() -> None:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    flags = (
        "--device cpu --precision bf16 --compile --compile-mode max-autotune --channels-last "
        "--grad-accum 2 --clip-grad 1.5 "
        "--optimizer sgd --sgd-momentum 0.8 --nesterov --schedule step --lr-milestones 3,5 "
        "--lr-gamma 0.5 --lr-scaling sqrt --save-every 2 --tensorboard --online-probe --epochs 6"
    )
    args = parser.parse_args(flags.split(" "))
    config = TrainConfig.from_dict(overrides_from_args(args))
    assert (config.device, config.precision, config.compile) == ("cpu", "bf16", True)
    assert (config.grad_accum, config.clip_grad, config.optimizer) == (2, 1.5, "sgd")
    assert (config.sgd_momentum, config.nesterov, config.schedule) == (0.8, True, "step")
    assert (config.lr_milestones, config.lr_gamma, config.lr_scaling) == ([3, 5], 0.5, "sqrt")
    assert (config.save_every, config.tensorboard, config.online_probe) == (2, True, True)
    assert config.channels_last is True and config.compile_mode == "max-autotune"


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"precision": "fp64"}, "precision must be one of fp32, bf16, fp16"),
        ({"device": "gpu"}, "device must be auto, cpu, cuda, cuda:N or mps"),
        ({"optimizer": "rmsprop"}, "optimizer must be one of sgd, adam, adamw, lars"),
        ({"schedule": "step"}, "schedule 'step' needs lr_milestones"),
        ({"lr_milestones": [5, 3]}, "lr_milestones must be increasing"),
        ({"warmup_epochs": 3}, "warmup_epochs applies to schedule 'warmup_cosine'"),
        ({"schedule": "warmup_cosine", "warmup_epochs": 20}, "warmup_epochs must be"),
        ({"grad_accum": 0}, "grad_accum must be a positive integer"),
        ({"clip_grad": -1.0}, "clip_grad must be a finite number > 0"),
        ({"sgd_momentum": 1.0}, r"sgd_momentum must be a number in \[0, 1\)"),
        ({"lr_scaling": "cubic"}, "lr_scaling must be one of"),
        ({"compile": "yes"}, "compile must be true or false"),
        ({"compile": True, "compile_mode": "fast"}, "compile_mode must be one of default, "),
        ({"compile_mode": "reduce-overhead"}, "compile_mode 'reduce-overhead' applies with"),
    ],
)
def test_engine_config_errors(values: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        TrainConfig(**values)
