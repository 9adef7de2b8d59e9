"""Backbone- and optimiser-dependent defaults (contrastkit.training.defaults): what a bare
``--backbone resnet18`` or ``--optimizer lars`` trains with, and that every shipped config
resolves to the values it had before these defaults existed, so its runs are reused."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import torch

from contrastkit.cli import build_parser, main
from contrastkit.commands.train_flags import overrides_from_args
from contrastkit.engine import OPTIMIZERS, build_optimizer, build_schedule
from contrastkit.frameworks import FRAMEWORKS
from contrastkit.models import BACKBONES, load_encoder, save_encoder
from contrastkit.study import load_study
from contrastkit.study.records import RECORDS, RunRecord
from contrastkit.study.runner import seeded
from contrastkit.training import TrainConfig, load_yaml, merge_config, modality_of
from contrastkit.training.defaults import OPTIMIZER, RESOLVED, WIDTH, describe, in_effect

from .test_shipped_configs import CONFIGS, ROOT, _configs

# what every config got for these fields before they depended on backbone and optimiser
# (TrainConfig's field defaults until issue #37), spelt out here, not read from the code
OLD_DEFAULTS: dict[str, Any] = {
    "width": 32,
    "lr": 1e-3,
    "lr_scaling": "linear_above_256",
    "weight_decay": 1e-6,
    "schedule": "constant",
    "warmup_epochs": 0.0,
}
COMPARE_KEYS = ("seeds", "out", "runs", "losses")  # compare's keys beside the config's
ARM_KEYS = ("label", "vs", "claim")  # a study arm's keys beside the config's


def _cli_config(*argv: str) -> TrainConfig:
    """The config ``contrastkit train ARGV`` builds (no ``--config`` file)."""
    args = build_parser().parse_args(["train", *argv])
    return TrainConfig.from_dict(merge_config({}, overrides_from_args(args)))


def _raw_runs(path: Path) -> list[dict[str, Any]]:
    """The values each run of ``path`` sets itself, merged as its command merges them, in
    the order :func:`_configs` returns the runs; ``[]`` for a suite (its parts are files of
    their own)."""
    data = load_yaml(path)
    if "parts" in data:
        assert all((path.parent / part) in CONFIGS for part in data["parts"]), path
        return []
    if "arms" in data:
        base = data.get("base") or {}
        return [{**base, **{k: v for k, v in arm.items() if k not in ARM_KEYS}}
                for arm in data["arms"]]  # fmt: skip
    base = {k: v for k, v in data.items() if k not in COMPARE_KEYS}
    if "runs" in data:
        return [{**base, **{k: v for k, v in run.items() if k != "label"}} for run in data["runs"]]
    if "losses" in data:
        return [{**base, "loss": name} for name in data["losses"]]
    return [base]


def _old_value(raw: dict[str, Any], name: str) -> Any:
    value = raw.get(name, OLD_DEFAULTS[name])
    if name == "lr_scaling" and isinstance(value, bool):  # the older spelling of the rule
        return "linear_above_256" if value else "none"
    return value


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: str(p.relative_to(ROOT)))
def test_shipped_config_resolves_as_before(path: Path) -> None:
    raws = _raw_runs(path)
    if not raws:  # a suite: each part is checked as its own file
        return
    configs = _configs(path)
    assert len(configs) == len(raws)
    for raw, config in zip(raws, configs, strict=True):
        old = {name: _old_value(raw, name) for name in OLD_DEFAULTS}
        assert {name: getattr(config, name) for name in OLD_DEFAULTS} == old, path.name
        assert config.effective_lr == pytest.approx(
            _scaled(old["lr"], config.batch_size * config.grad_accum, old["lr_scaling"])
        )


def _scaled(lr: float, batch: int, rule: str) -> float:
    """The four batch-size rules, written out (contrastkit.engine.schedules.scale_lr)."""
    ratio = batch / 256
    return {"linear_above_256": lr * max(1.0, ratio), "linear": lr * ratio,
            "sqrt": lr * ratio**0.5, "none": lr}[rule]  # fmt: skip


def _committed_studies() -> list[tuple[Path, Path]]:
    """``(study config, runs.jsonl)`` of every shipped study whose folder holds records."""
    pairs = []
    for path in sorted((ROOT / "studies").glob("*.yaml")):
        if "arms" not in load_yaml(path):
            continue
        records = ROOT.parent / load_study(path).out / RECORDS
        if records.is_file():
            pairs.append((path, records))
    return pairs


STUDIES = _committed_studies()


def test_some_studies_have_committed_records() -> None:
    assert len(STUDIES) >= 20


@pytest.mark.parametrize(("path", "records"), STUDIES, ids=lambda p: p.stem)
def test_committed_runs_are_still_recognised(path: Path, records: Path) -> None:
    """Every run a study committed (its ``final.json`` config in ``runs.jsonl``) is still
    the run of its arm and seed: the runner would reuse it, not train it again."""
    arms = {arm.label: arm for arm in load_study(path).arms}
    lines = [json.loads(line) for line in records.read_text().splitlines() if line.strip()]
    assert lines
    for line in lines:
        record = RunRecord(line["final"], line["history"])
        config = seeded(arms[line["arm"]], line["seed"])
        assert record.matches(config), (path.name, line["arm"], line["seed"])


def test_every_backbone_and_optimiser_has_defaults() -> None:
    assert set(WIDTH) == set(BACKBONES) and set(OPTIMIZER) == set(OPTIMIZERS)
    assert all(set(recipe) == set(RESOLVED) - {"loss", "width", "warmup_epochs"}
               for recipe in OPTIMIZER.values())  # fmt: skip


@pytest.mark.parametrize("framework", sorted(FRAMEWORKS))
def test_a_run_without_a_loss_trains_with_its_frameworks(framework: str) -> None:
    """``loss`` unset is the framework's own (``--framework barlow_twins`` trained NT-Xent,
    ``simsiam`` and ``supervised`` stopped on it, ``simcse`` got NT-Xent at τ = 0.1 where
    SimCSE's InfoNCE at 0.05 was meant); the start line names it."""
    config = TrainConfig(dataset="digits", framework=framework)
    assert config.loss == FRAMEWORKS[framework].default_loss
    assert config.loss in FRAMEWORKS[framework].compatible_losses()
    assert describe(config.to_dict()).startswith(f"defaults: loss={config.loss} ({framework}'s")


def test_resnet18_by_default_is_he_et_al_width_64_over_10m_parameters(tmp_path: Path) -> None:
    config = _cli_config("--dataset", "cifar10", "--backbone", "resnet18")
    assert config.width == 64 and _cli_config("--dataset", "cifar10").width == 32
    data = SimpleNamespace(kind="image", input_shape=(3, 32, 32), mean=[0.5] * 3, std=[0.25] * 3)
    encoder = modality_of(config.dataset).encoder(data, config)  # type: ignore[arg-type,misc]
    assert encoder.feature_dim == 512
    save_encoder(encoder, tmp_path / "enc", {"config": config.to_dict()})  # what export writes
    exported = load_encoder(tmp_path / "enc")
    count = sum(p.numel() for p in exported.parameters())
    assert 11_000_000 < count < 11_300_000  # ResNet-18 without its 1000-class head: 11.17M
    assert _cli_config("--dataset", "cifar10", "--backbone", "resnet18", "--width", "8").width == 8


def test_lars_under_the_square_root_rule_starts_from_simclrs_rate() -> None:
    """SimCLR's 0.075·sqrt(B): 1.2 at batch 256 under sqrt (0.3 is the linear rule's)."""
    config = TrainConfig(optimizer="lars", lr_scaling="sqrt", batch_size=1024)
    assert config.lr == 1.2 and in_effect(config.to_dict())["lr"].startswith("SimCLR")
    assert TrainConfig(optimizer="lars", lr_scaling="sqrt", lr=0.5).lr == 0.5  # given wins
    assert TrainConfig(optimizer="lars").lr == 0.3


def test_lars_without_lr_trains_at_simclr_rate_with_warmup() -> None:
    config = _cli_config("--optimizer", "lars", "--batch-size", "512", "--epochs", "100")
    assert (config.lr, config.lr_scaling, config.weight_decay) == (0.3, "linear", 1e-6)
    assert config.effective_lr == pytest.approx(0.6)  # 0.3 × 512/256
    assert (config.schedule, config.warmup_epochs) == ("warmup_cosine", 10.0)
    optimizer = build_optimizer("lars", [torch.nn.Parameter(torch.ones(2, 2))], config.effective_lr)
    schedule = build_schedule(
        config.schedule, optimizer, steps_per_epoch=4, epochs=config.epochs,
        warmup_epochs=config.warmup_epochs,
    )  # fmt: skip
    rates = []
    for _ in range(42):
        rates.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        schedule.step()
    assert rates[0] == pytest.approx(0.6 / 40) and rates[39] == pytest.approx(0.6)
    assert rates[40] == pytest.approx(0.6) and rates[41] < 0.6  # then the cosine decay
    short = _cli_config("--optimizer", "lars", "--epochs", "20")
    assert short.warmup_epochs == 2.0  # at most a tenth of the run
    given = _cli_config("--optimizer", "lars", "--lr", "1.2", "--schedule", "constant")
    assert (given.lr, given.schedule, given.warmup_epochs) == (1.2, "constant", 0.0)


def test_sgd_and_adam_defaults() -> None:
    sgd = _cli_config("--optimizer", "sgd")
    assert (sgd.lr, sgd.lr_scaling, sgd.weight_decay, sgd.schedule) == (
        0.12, "linear", 1e-4, "constant",
    )  # fmt: skip
    adam = _cli_config("--schedule", "warmup_cosine")
    assert (adam.lr, adam.lr_scaling, adam.warmup_epochs) == (1e-3, "linear_above_256", 0.0)


def test_unknown_optimizer_is_named_before_its_missing_defaults() -> None:
    with pytest.raises(ValueError, match="optimizer must be one of"):
        TrainConfig(optimizer="rmsprop")


def test_in_effect_and_the_start_line() -> None:
    config = TrainConfig(optimizer="lars", epochs=50, lr=0.5)
    assert in_effect(config.to_dict()) == {
        "loss": "simclr's loss",
        "width": "this project's CPU-sized encoders",
        "lr_scaling": "SimCLR App. B.1",
        "weight_decay": "SimCLR App. B.1",
        "schedule": "SimCLR App. B.1",
        "warmup_epochs": "SimCLR App. B.1, at most epochs/10",
    }
    line = describe(config.to_dict())
    assert line.startswith(
        "defaults: loss=ntxent (simclr's loss); width=32 (this project's CPU-sized encoders);"
    )
    assert "warmup_epochs=5.0 (SimCLR App. B.1, at most epochs/10)" in line
    assert "lr=" not in line


def test_train_prints_and_records_the_defaults(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    out = tmp_path / "run"
    argv = ["train", "--optimizer", "lars", "--epochs", "2", "--epoch-steps", "2",
            "--batch-size", "32", "--knn-k", "5", "--knn-small-k", "3", "--out", str(out),
            "--no-progress"]  # fmt: skip
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert "lr=0.3, lr_scaling=linear, weight_decay=1e-06, schedule=warmup_cosine" in err
    final = json.loads((out / "final.json").read_text())
    assert final["config"]["lr"] == 0.3 and final["config"]["warmup_epochs"] == 0.2
    assert final["defaults_applied"]["lr"] == "SimCLR App. B.1"
    assert final["defaults_applied"]["width"] == "this project's CPU-sized encoders"
    history = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert 0 < history[-1]["lr"] <= 0.3 * 32 / 256
