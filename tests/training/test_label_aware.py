"""Label-aware training end to end: LASCon / SupCon on regression data via the CLI,
downstream head and §4.2 geometry in final.json, compare tables, errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from contrastkit.cli import main
from contrastkit.tabular import MLPEncoder
from contrastkit.training import LabelAwareTrainer, TrainConfig, Trainer, trainer_class

TINY = ["--epochs", "1", "--batch-size", "64", "--feature-dim", "8", "--width", "8"]
TINY += ["--proj-dim", "8", "--threads", "1", "--no-progress"]


def test_train_lascon_tanh_on_diabetes_writes_regression_metrics(tmp_path: Path) -> None:
    out = tmp_path / "run"
    argv = ["train", "--framework", "supervised", "--loss", "lascon", "--similarity", "tanh"]
    argv += ["--c", "2.0", "--variant", "in", "--dataset", "diabetes", *TINY, "--out", str(out)]
    assert main(argv) == 0
    final = json.loads((out / "final.json").read_text())
    assert final["config"]["loss_args"] == {"similarity": "tanh", "c": 2.0, "variant": "in"}
    assert final["task"] == "regression" and "knn_accuracy" not in final
    for key in ("head_mae", "head_pearson", "head_spearman", "label_alignment"):
        assert isinstance(final[key], float) and final[key] == final[key]  # finite, not NaN
    assert 0.0 < final["label_uniformity"] <= 0.5  # the §4.2 formula's range
    assert (out / "circular.png").read_bytes()[:4] == b"\x89PNG"


def test_supcon_sees_binarised_labels_and_evaluation_the_continuous_ones() -> None:
    cfg = TrainConfig(
        framework="supervised",
        loss="supcon",
        dataset="diabetes",
        binarize_threshold=139.0,
        epochs=1,
        batch_size=64,
        feature_dim=8,
        width=8,
        proj_dim=8,
    )
    trainer = LabelAwareTrainer(cfg)
    assert isinstance(trainer.model.encoder, MLPEncoder)
    assert trainer.data.y_train.dtype == torch.int64
    assert torch.equal(trainer.data.y_train, (trainer.task.y_train >= 139.0).long())
    assert trainer.task.y_train.is_floating_point()
    final = trainer.fit()
    assert final["head_mae"] > 1.0  # in the labels' units (25-346), so not a class error


@pytest.mark.parametrize("dataset", ["diabetes", "digits"])
def test_features_after_epochs_only_where_an_epoch_metric_uses_them(dataset: str) -> None:
    cfg = TrainConfig(framework="supervised", loss="lascon", dataset=dataset, epochs=3,
                      batch_size=64, feature_dim=8, width=8, proj_dim=8, knn_k=5)  # fmt: skip
    trainer = LabelAwareTrainer(cfg)
    calls = []
    features = trainer.features
    trainer.features = lambda: calls.append(trainer.epoch) or features()  # type: ignore
    trainer.fit()
    # continuous labels: no kNN per epoch, so only the final evaluation encodes the data
    assert calls == ([3] if dataset == "diabetes" else [1, 2, 3, 3])


def test_trainer_selection_and_classification_runs(tmp_path: Path) -> None:
    assert trainer_class(TrainConfig()) is Trainer
    assert trainer_class(TrainConfig(), label_aware=True) is LabelAwareTrainer
    assert trainer_class(TrainConfig(dataset="diabetes")) is LabelAwareTrainer
    assert trainer_class(TrainConfig(framework="supervised", loss="supcon")) is LabelAwareTrainer
    out = tmp_path / "cls"
    argv = ["train", "--framework", "supervised", "--loss", "supcon", "--dataset", "digits"]
    assert main([*argv, *TINY, "--batch-size", "256", "--knn-k", "20", "--out", str(out)]) == 0
    final = json.loads((out / "final.json").read_text())
    assert final["task"] == "classification"
    assert {"knn_accuracy", "linear_accuracy", "head_accuracy", "label_alignment"} <= set(final)


def test_compare_tabulates_regression_metrics(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text(
        "dataset: diabetes\nseeds: [0]\nruns:\n"
        "  - {label: SimCLR, framework: simclr, loss: ntxent}\n"
        "  - {label: LASCon, framework: supervised, loss: lascon}\n"
    )
    assert main(["compare", "--config", str(cfg), *TINY, "--out", str(tmp_path / "cmp")]) == 0
    printed = capsys.readouterr().out
    assert "head MAE" in printed and "label align" in printed and "| LASCon |" in printed
    summary = json.loads((tmp_path / "cmp" / "summary.json").read_text())
    assert "knn_accuracy" not in summary["runs"]["SimCLR"]["metrics"]
    assert len(summary["runs"]["LASCon"]["metrics"]["head_mae"]["values"]) == 1


@pytest.mark.parametrize(
    ("extra", "match"),
    [
        (["--framework", "simclr", "--binarize-threshold", "1"], "binarize_threshold applies"),
        (
            ["--framework", "supervised", "--loss", "supcon", "--binarize-threshold", "1e9"],
            "puts every training sample in one class",
        ),
        (["--aug-types", "2"], "aug_types does not apply"),
    ],
)
def test_one_line_errors(extra: list[str], match: str, capsys: pytest.CaptureFixture) -> None:
    assert main(["train", "--dataset", "diabetes", *TINY, *extra]) == 2
    assert match in capsys.readouterr().err


@pytest.mark.parametrize(
    "loss", [["--loss", "supcon"], ["--loss", "lascon", "--similarity", "indicator"]]
)
def test_losses_pairing_equal_labels_need_a_threshold_on_continuous_labels(
    loss: list[str], capsys: pytest.CaptureFixture
) -> None:
    """digits_rotation's angles are not whole numbers: SupCon without binarize_threshold
    would pair only samples of one angle by chance. diabetes's whole-number labels run."""
    args = ["train", "--dataset", "digits_rotation", "--framework", "supervised", *TINY, *loss]
    assert main(args) == 2
    assert "pairs equal labels, and 'digits_rotation' has continuous labels" in (
        capsys.readouterr().err
    )
