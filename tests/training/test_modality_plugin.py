"""Proof by extension: a modality defined in this file, outside the package (its dataset,
encoder and views), registers itself and trains with ``contrastkit train``.

:func:`register` declares the ``points`` modality and its dataset ``rings``, as a user's
module would when imported. The tests register it into copies of the registries (the
``points`` fixture), so no other test sees it; the command line learns it from a module
that ``--import`` names (``contrastkit --import points_plugin train --dataset rings``).
"""

from __future__ import annotations

import copy
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from torch import Tensor, nn

from contrastkit.cli import main
from contrastkit.data import Split, dataset_info, register_dataset
from contrastkit.data import registry as data_registry
from contrastkit.study.config import Study, check_final_key
from contrastkit.training import (
    Metric,
    Modality,
    ModalitySetting,
    TrainConfig,
    UndeclaredMetricWarning,
    modality_settings,
    register_modality,
    trainer_class,
)
from contrastkit.training import config as config_module
from contrastkit.training import metrics as metrics_module
from contrastkit.training import modality as modality_module
from contrastkit.training.settings import finite_non_negative as non_negative
from contrastkit.training.trainer import Trainer


def load_rings(num_samples: int | None = None) -> Split:
    """Points ``[N, 2]`` on three concentric rings (radius 1, 2, 3; class = ring), noisy,
    with a fixed 80/20 split."""
    n = 300 if num_samples is None else num_samples
    g = torch.Generator().manual_seed(0)
    labels = torch.arange(n) % 3
    angle = torch.rand(n, generator=g) * 2 * math.pi
    radius = (labels + 1).float() + 0.1 * torch.randn(n, generator=g)
    x = torch.stack([radius * torch.cos(angle), radius * torch.sin(angle)], 1)
    cut = n * 4 // 5
    return Split("rings", "points", x[:cut], labels[:cut], x[cut:], labels[cut:])


class PointEncoder(nn.Module):
    """A two-layer MLP of 2-D points; ``feature_dim`` is what the heads read."""

    def __init__(self, feature_dim: int, width: int) -> None:
        super().__init__()
        self.feature_dim = feature_dim
        self.net = nn.Sequential(nn.Linear(2, width), nn.ReLU(), nn.Linear(width, feature_dim))

    def forward(self, x: Tensor) -> Tensor:
        return self.net(x)


class Jitter:
    """Views of points: a random rotation of up to ``degrees`` and Gaussian noise."""

    def __init__(self, degrees: float = 20.0, noise: float = 0.05) -> None:
        self.degrees, self.noise = degrees, noise

    def __call__(self, batch: Tensor, generator: torch.Generator) -> Tensor:
        turn = (torch.rand(len(batch), generator=generator) * 2 - 1) * math.radians(self.degrees)
        cos, sin = torch.cos(turn), torch.sin(turn)
        rotated = torch.stack(
            [cos * batch[:, 0] - sin * batch[:, 1], sin * batch[:, 0] + cos * batch[:, 1]], 1
        )
        return rotated + self.noise * torch.randn(batch.shape, generator=generator)


def check(config: TrainConfig) -> None:
    """The modality's own setting: ``aug_types`` has no meaning for points."""
    if dataset_info(config.dataset).modality == "points" and config.aug_types is not None:
        raise ValueError("aug_types does not apply to points")


class NormTrainer(Trainer):
    """The shared trainer, and one number of the plug-in's own in ``final.json``: the mean
    norm of the test features."""

    def final_metrics(self, train_feats: Tensor, test_feats: Tensor) -> dict[str, float]:
        norm = float(test_feats.norm(dim=1).mean())
        return {**super().final_metrics(train_feats, test_feats), "feature_norm": norm}


def register(trainer: type[Trainer] | None = None, metrics: tuple[Metric, ...] = ()) -> None:
    """Register the ``points`` modality and its dataset ``rings`` (``trainer``: its own
    trainer class, with the numbers it adds declared in ``metrics``)."""
    register_modality(
        Modality(
            "points",
            kinds=("points",),
            encoder=lambda split, config: PointEncoder(config.feature_dim, config.width),
            augment=lambda split, config: Jitter(**modality_settings(config)),
            trainer=None if trainer is None else lambda config, label_aware: trainer,
            check=check,
            settings=(
                ModalitySetting("degrees", 20.0, "largest rotation of a view", non_negative),
                ModalitySetting("noise", 0.05, "std of a view's Gaussian noise", non_negative),
            ),
            metrics=metrics,
            description="2-D points: an MLP encoder, rotation and noise views",
        )
    )
    register_dataset("rings", load_rings, "points", description="points on three rings")


REGISTRIES = (
    (data_registry, "_REGISTRY"),
    (data_registry, "_KIND_MODALITY"),
    (modality_module, "_MODALITIES"),
    (config_module, "_CHECKS"),
    (config_module, "_UNSET"),
    (metrics_module, "_METRICS"),
    (metrics_module, "_CURVE_POINTS"),
)


@pytest.fixture
def registries(monkeypatch: pytest.MonkeyPatch) -> None:
    """Copies of the registries, which the test leaves behind."""
    for module, name in REGISTRIES:
        monkeypatch.setattr(module, name, copy.copy(getattr(module, name)))


@pytest.fixture
def points(registries: None) -> None:
    """``points`` registered into copies of the registries."""
    register()


ARGS = ["train", "--dataset", "rings", "--epochs", "2", "--batch-size", "32", "--width", "16",
        "--feature-dim", "8", "--proj-dim", "8", "--knn-k", "5", "--knn-small-k", "3",
        "--no-progress"]  # fmt: skip


@pytest.mark.usefixtures("points")
def test_a_modality_outside_the_package_trains_with_contrastkit_train(tmp_path: Path) -> None:
    assert trainer_class(TrainConfig(dataset="rings")) is Trainer  # the shared rule
    assert main([*ARGS, "--out", str(tmp_path / "run")]) == 0
    final = json.loads((tmp_path / "run" / "final.json").read_text())
    metrics = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").open()]
    assert [m["epoch"] for m in metrics] == [1, 2]
    assert all(math.isfinite(m["loss"]) for m in metrics)
    assert 0.0 <= final["knn_accuracy"] <= 1.0 and 0.0 <= final["linear_accuracy"] <= 1.0
    assert math.isfinite(final["alignment"]) and math.isfinite(final["uniformity"])
    assert final["config"]["dataset"] == "rings" and final["epochs"] == 2


@pytest.mark.usefixtures("points")
def test_its_config_check_and_modality_are_the_registry_s() -> None:
    with pytest.raises(ValueError, match="aug_types does not apply to points"):
        TrainConfig(dataset="rings", aug_types=2)
    with pytest.raises(ValueError, match="modality 'image' does not match dataset 'rings'"):
        TrainConfig(dataset="rings", modality="image")
    assert TrainConfig(dataset="rings", modality="points").modality == "points"


def test_the_command_line_imports_the_modality_s_module(tmp_path: Path) -> None:
    """``contrastkit --import MODULE``: a fresh process learns the modality from a module
    that registers it when imported."""
    (tmp_path / "points_plugin.py").write_text(
        f"from {Path(__file__).stem} import register\n\nregister()\n"
    )
    path = [str(tmp_path), str(Path(__file__).parent), *sys.path]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(path)}
    argv = [sys.executable, "-m", "contrastkit", "--import", "points_plugin", *ARGS]
    done = subprocess.run(
        [*argv, "--epochs", "1", "--out", str(tmp_path / "run")],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    final = json.loads((tmp_path / "run" / "final.json").read_text())
    assert final["epochs"] == 1 and 0.0 <= final["knn_accuracy"] <= 1.0


def test_import_of_a_missing_module_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--import", "no_such_points_module", *ARGS]) == 2
    err = capsys.readouterr().err
    assert err == (
        "contrastkit: error: --import no_such_points_module: no module "
        "'no_such_points_module' on the Python path\n"
    )


@pytest.mark.usefixtures("registries")
def test_the_numbers_a_modality_declares_are_what_study_and_compare_know(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A modality's own ``final.json`` number, declared in its ``metrics``: a study may
    judge it, and ``contrastkit compare`` tabulates it under its header."""
    with pytest.raises(ValueError, match=r"'feature_norm' is not a number final\.json holds"):
        check_final_key("feature_norm", "metric")
    register(NormTrainer, (Metric("feature_norm", "feature norm"),))
    check_final_key("feature_norm", "metric")
    out = tmp_path / "cmp"
    assert (
        main(["compare", *ARGS[1:], "--epochs", "1", "--losses", "ntxent", "--out", str(out)]) == 0
    )
    summary = json.loads((out / "summary.json").read_text())["runs"]["ntxent"]["metrics"]
    assert list(summary)[-2:] == ["feature_norm", "train_time_s"]
    assert summary["feature_norm"]["mean"] > 0
    header = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("| run"))
    assert header == (
        "| run | kNN k=5 | kNN k=3 | linear | alignment | uniformity | feature norm"
        " | train s/run | seeds |"
    )
    with pytest.raises(ValueError, match="final metric 'feature_norm' is declared already"):
        register_modality(Modality("more_points", ("more",), metrics=(Metric("feature_norm"),)))


def _convergence(metric: str) -> dict:
    """A study's convergence settings for the per-epoch curve ``metric``."""
    study = Study(
        "s", "p", "t", "c", Path("o"), Path("r"), [], "a", [0], convergence={"metric": metric}
    )
    return study.convergence_settings()


@pytest.mark.usefixtures("registries")
def test_a_curve_a_modality_declares_sets_the_studys_minimum_of_evaluations() -> None:
    """A modality's ``curve_points`` is what a study's convergence check asks of that
    curve (text's STS-B dev curve: 4); other curves keep 2, and a study may still say."""
    assert _convergence("sts_dev_spearman")["min_points"] == 4  # the text modality's
    assert _convergence("ring_error")["min_points"] == 2
    register_modality(Modality("curvy", ("curvy",), curve_points=(("ring_error", 5),)))
    assert _convergence("ring_error")["min_points"] == 5
    assert _convergence("knn_accuracy")["min_points"] == 2
    with pytest.raises(ValueError, match="'ring_error' declares its minimum"):
        register_modality(Modality("curvier", ("curvier",), curve_points=(("ring_error", 3),)))
    with pytest.raises(ValueError, match="evaluations must be an integer > 2, got 2"):
        register_modality(Modality("flat", ("flat",), curve_points=(("flat_curve", 2),)))


@pytest.mark.usefixtures("registries")
def test_a_final_number_no_metric_declares_warns(tmp_path: Path) -> None:
    """The run finishes and keeps the number, and the warning says what to declare."""
    register(NormTrainer)
    with pytest.warns(UndeclaredMetricWarning, match="numbers feature_norm are declared by no"):
        assert main([*ARGS, "--epochs", "1", "--out", str(tmp_path / "run")]) == 0
    assert json.loads((tmp_path / "run" / "final.json").read_text())["feature_norm"] > 0


@pytest.mark.usefixtures("points")
def test_a_modality_s_own_settings_come_from_modality_args(tmp_path: Path) -> None:
    """The settings a modality declares: their defaults, a config's ``modality_args``
    (YAML, and ``--modality-arg`` over it key by key), their checks and the record."""
    views = Trainer(TrainConfig(dataset="rings", modality_args={"noise": 0.2}), None, False)
    assert (views.augment.noise, views.augment.degrees) == (0.2, 20.0)
    (tmp_path / "run.yaml").write_text("data:\n  dataset: rings\n  modality_args: {degrees: 5}\n")
    argv = [*ARGS[:1], "--config", str(tmp_path / "run.yaml"), *ARGS[3:], "--epochs", "1"]
    assert main([*argv, "--modality-arg", "noise=0.1", "--out", str(tmp_path / "run")]) == 0
    final = json.loads((tmp_path / "run" / "final.json").read_text())
    assert final["config"]["modality_args"] == {"degrees": 5, "noise": 0.1}


@pytest.mark.usefixtures("points")
@pytest.mark.parametrize(
    ("given", "message"),
    [
        ("nois=0.1", "modality_args: 'nois' is no setting of modality 'points' "
                     "(its settings: degrees, noise)"),
        ("noise=-1", "modality_args noise must be a finite number >= 0, got -1"),
        ("noise", "--modality-arg expects key=value, got 'noise'"),
    ],
)  # fmt: skip
def test_a_modality_arg_it_does_not_declare_or_refuses_is_one_line(
    given: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*ARGS, "--modality-arg", given]) == 2
    assert capsys.readouterr().err == f"contrastkit: error: {message}\n"


def test_a_modality_without_settings_refuses_modality_args() -> None:
    with pytest.raises(ValueError, match="'noise' is no setting of modality 'image'"):
        TrainConfig(dataset="digits", modality_args={"noise": 0.1})


@pytest.mark.usefixtures("registries")
def test_a_modality_s_notes_follow_the_help_of_the_settings_it_reads() -> None:
    """What a modality declares on a core setting (its names, its value when unset) is
    appended to that flag's ``--help``; a note on a key that is no setting is refused."""
    register_modality(Modality("noted", ("noted",), notes=(("crop_scale", "default 0.5"),)))
    assert modality_module.setting_notes("crop_scale").endswith("; noted: default 0.5")
    text = " ".join(_help("train").split())
    assert "image views: minimum crop area (image: default" in text
    assert "; noted: default 0.5)" in text
    with pytest.raises(ValueError, match="has a note on 'crop_size', no config setting"):
        register_modality(Modality("typo", ("typo",), notes=(("crop_size", "default 1"),)))


def _help(command: str) -> str:
    """``contrastkit COMMAND --help``."""
    from contrastkit.cli import build_parser

    sub = next(a for a in build_parser()._actions if hasattr(a, "choices") and a.choices)
    return sub.choices[command].format_help()


@pytest.mark.usefixtures("registries")
def test_a_setting_left_unset_takes_the_modality_s_value_on_its_data() -> None:
    """``Modality.unset`` fills a setting left ``None`` on that modality's data only (the
    text modality's ``joint_views``: false); ``--help`` notes it; a setting whose default
    is not ``None`` cannot be given one."""
    register_modality(Modality("spread", ("spread",), unset=(("joint_views", True),)))
    register_dataset("spread_rings", load_rings, "spread")
    assert TrainConfig(dataset="spread_rings").joint_views is True
    assert TrainConfig(dataset="spread_rings", joint_views=False).joint_views is False
    assert TrainConfig(dataset="digits").joint_views is None  # the framework's
    assert TrainConfig(dataset="sst5").joint_views is False  # the text modality's
    assert modality_module.setting_notes("joint_views") == (
        "text: default false; spread: default true"
    )
    with pytest.raises(ValueError, match="sets 'epochs' when unset: no config setting whose"):
        register_modality(Modality("eager", ("eager",), unset=(("epochs", 3),)))
