"""Run configuration: validation, YAML, key=value parsing."""

from __future__ import annotations

from pathlib import Path

import pytest

from contrastkit.training import TrainConfig, load_yaml, parse_assignments


@pytest.mark.parametrize(
    ("values", "match"),
    [
        ({"batch_size": 1}, "batch_size must be >= 2"),
        ({"epochs": 0}, "epochs must be a positive"),
        ({"dataset": "imagenet"}, "unknown dataset 'imagenet'"),
        ({"lr": 0.0}, "lr must be > 0"),
        ({"aug_types": 0}, "aug_types must be a positive"),
        ({"bogus": 1}, "unknown config key"),
        ({"joint_views": "yes"}, "joint_views must be true, false or null"),
        ({"sync_batchnorm": 1}, "sync_batchnorm must be true or false"),
    ],
)
def test_bad_values_are_named(values: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        TrainConfig.from_dict(values)


def test_lr_scaling_above_256() -> None:
    assert TrainConfig(batch_size=64).effective_lr == pytest.approx(1e-3)
    assert TrainConfig(batch_size=512).effective_lr == pytest.approx(2e-3)
    assert TrainConfig(batch_size=512, lr_scaling=False).effective_lr == pytest.approx(1e-3)


def test_steps_per_epoch_counts_full_batches_and_names_what_does_not_fit() -> None:
    assert TrainConfig(batch_size=64).steps_per_epoch(1000) == 15  # the last 40 are dropped
    assert TrainConfig(batch_size=64, epoch_steps=4).steps_per_epoch(1000, world=2) == 4
    with pytest.raises(ValueError, match="batch_size 64 exceeds the 63 training samples"):
        TrainConfig(batch_size=64).steps_per_epoch(63)
    with pytest.raises(ValueError, match="batch_size 64 must divide evenly over 3 processes"):
        TrainConfig(batch_size=64).steps_per_epoch(1000, world=3)
    with pytest.raises(ValueError, match="epoch_steps 16 exceeds the 15 full batches"):
        TrainConfig(batch_size=64, epoch_steps=16).steps_per_epoch(1000)


def test_assignments_and_yaml(tmp_path: Path) -> None:
    assert parse_assignments(["temperature=0.2", "adaptive=false", "base=ntxent", "heads=3"]) == {
        "temperature": 0.2,
        "adaptive": False,
        "base": "ntxent",
        "heads": 3,
    }
    with pytest.raises(ValueError, match="key=value"):
        parse_assignments(["temperature"])
    (tmp_path / "c.yaml").write_text("loss: macl\nepochs: 3\n")
    assert load_yaml(tmp_path / "c.yaml") == {"loss": "macl", "epochs": 3}
    (tmp_path / "bad.yaml").write_text("- 1\n- 2\n")
    with pytest.raises(ValueError, match="must hold a mapping"):
        load_yaml(tmp_path / "bad.yaml")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_yaml(tmp_path / "missing.yaml")


def test_differences_fill_keys_added_since_a_run_was_written() -> None:
    config = TrainConfig(loss="macl", epochs=5)
    old = {k: v for k, v in config.to_dict().items() if k not in ("optimizer", "precision")}
    assert config.differences({**old, "lr_scaling": True}) == []  # older spelling of the rule
    assert config.differences({**old, "loss": "ntxent"}) == ["loss"]
    assert config.differences({**old, "epochs": 3}) == ["epochs"]
    assert config.differences({**old, "epochs": 3}, ignore=("epochs",)) == []
    assert config.differences({**old, "optimizer": "sgd"}) == ["optimizer"]
    assert config.differences(None) == sorted(config.to_dict())
    assert config.differences({"no_such_key": 1}) == sorted(config.to_dict())
