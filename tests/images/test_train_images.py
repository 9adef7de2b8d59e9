"""End to end: ``contrastkit train`` on a CIFAR-10 fixture with a narrow ResNet-18."""

from __future__ import annotations

import dataclasses
import json
import pickle
from pathlib import Path

import numpy as np
import pytest
import torch

from contrastkit.cli import main
from contrastkit.training import TrainConfig, Trainer


def _cifar_fixture(tmp_path: Path) -> None:
    folder = tmp_path / "cifar-10-batches-py"
    folder.mkdir()
    rng = np.random.default_rng(0)
    for k, name in enumerate([f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]):
        labels = [(8 * k + j) % 10 for j in range(8)]
        batch = {"data": rng.integers(0, 256, (8, 3072), dtype=np.uint8), "labels": labels}
        (folder / name).write_bytes(pickle.dumps(batch))


def test_train_cifar10_resnet18_macl(tmp_path: Path) -> None:
    _cifar_fixture(tmp_path)
    out = tmp_path / "run"
    code = main(
        ["train", "--dataset", "cifar10", "--data-root", str(tmp_path), "--backbone", "resnet18",
         "--width", "4", "--framework", "simclr", "--loss", "macl", "--epochs", "1",
         "--batch-size", "16", "--knn-k", "5", "--knn-small-k", "3", "--out", str(out),
         "--no-progress"]
    )  # fmt: skip
    assert code == 0
    final = json.loads((out / "final.json").read_text())
    assert final["config"]["backbone"] == "resnet18" and 0.0 <= final["knn_accuracy"] <= 1.0
    assert 0.0 <= final["linear_top1"] <= final["linear_top5"] <= 1.0
    assert 0.0 < final["repulsion_entropy"] < final["repulsion_entropy_max"]
    assert 0.0 <= final["similarity_overlap_head"] <= 1.0
    assert all((out / f).exists() for f in ("similarities.png", "map2d.png", "cacr_weights.png"))
    assert np.isfinite(json.loads((out / "metrics.jsonl").read_text().splitlines()[0])["loss"])


def test_image_views_replay_exactly_on_resume(tmp_path: Path) -> None:
    """1 epoch + resume to 2 gives the weights of 2 epochs in one go: the SimCLR views
    are drawn from the epoch's generator only."""
    _cifar_fixture(tmp_path)

    def cfg(epochs: int) -> TrainConfig:
        return TrainConfig(dataset="cifar10", data_root=str(tmp_path), backbone="resnet18",
                           width=2, epochs=epochs, batch_size=16, knn_k=3, knn_small_k=2,
                           eval_every=5)  # fmt: skip

    straight = Trainer(cfg(2), tmp_path / "a", False)
    straight.fit()
    Trainer(cfg(1), tmp_path / "b", False).fit()
    resumed = Trainer(cfg(2), tmp_path / "b", False)
    resumed.fit(resume=True)
    a, b = straight.model.state_dict(), resumed.model.state_dict()
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_byol_recipe_gives_each_view_its_own_augmentation(tmp_path: Path) -> None:
    _cifar_fixture(tmp_path)
    from contrastkit.training import trainer_class

    cfg = TrainConfig(dataset="cifar10", data_root=str(tmp_path), backbone="resnet18", width=2,
                      epochs=1, batch_size=16, aug_recipe="byol", device="cpu")  # fmt: skip
    trainer = trainer_class(cfg)(cfg, None, progress=False)
    assert [a.solarize_p for a in trainer.view_augments] == [0.0, 0.2]
    calls: list[int] = []

    def spy(v: int) -> object:
        aug = trainer.view_augments[v]
        return lambda batch, gen: calls.append(v) or aug(batch, gen)

    trainer.view_augments = [spy(0), spy(1)]
    assert np.isfinite(trainer.train_epoch()["loss"])
    assert calls == [0, 1] * trainer.steps_per_epoch
    digits = TrainConfig(dataset="digits", aug_recipe="byol", epochs=1)
    with pytest.raises(ValueError, match="aug_recipe 'byol' applies to image datasets"):
        trainer_class(digits)(digits, None, progress=False)


def test_aug_backend_reaches_the_views_where_it_can_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``aug_backend`` is each image view's ``backend``; a device it cannot run on, a
    non-image dataset or an unknown name is one clear error before any training."""
    _cifar_fixture(tmp_path)
    from contrastkit.training import trainer_class

    cfg = TrainConfig(dataset="cifar10", data_root=str(tmp_path), backbone="resnet18", width=2,
                      epochs=1, batch_size=16, aug_backend="triton", device="cpu")  # fmt: skip
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    with pytest.raises(ValueError, match="'triton' needs a CUDA device, got cpu"):
        trainer_class(cfg)(cfg, None, progress=False)
    digits = TrainConfig(dataset="digits", aug_backend="triton", epochs=1)
    with pytest.raises(ValueError, match="aug_backend applies to image datasets, not to"):
        trainer_class(digits)(digits, None, progress=False)
    supervised = dataclasses.replace(cfg, framework="supervised", loss="supcon")
    with pytest.raises(ValueError, match="'triton' needs a CUDA device, got cpu"):
        trainer_class(supervised)(supervised, None, progress=False)  # label-aware trainer
    with pytest.raises(ValueError, match="aug_backend must be one of auto, torch, triton, got"):
        TrainConfig(aug_backend="cuda")
    pytest.importorskip("triton", reason="backend='triton' needs the gpu extra")
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    trainer = trainer_class(cfg)(cfg, None, progress=False)
    assert [a.backend for a in trainer.view_augments] == ["triton"]
    trainer = trainer_class(supervised)(supervised, None, progress=False)
    assert [a.backend for a in trainer.view_augments] == ["triton"]


FRAMEWORK_LOSSES = [("simclr", "ntxent"), ("moco", "macl"), ("simsiam", "simsiam"),
                    ("barlow_twins", "barlow_twins"), ("multiview", "cacr"),
                    ("supervised", "supcon"), ("nnclr", "macl")]  # fmt: skip


@pytest.mark.parametrize(("framework", "loss"), FRAMEWORK_LOSSES)
def test_every_framework_trains_a_resnet_on_real_format_images(
    tmp_path: Path, framework: str, loss: str
) -> None:
    """One epoch of each framework on uint8 CIFAR-format images with a ResNet-18: the
    loss is finite and the encoder's weights move."""
    _cifar_fixture(tmp_path)
    from contrastkit.training import trainer_class

    cfg = TrainConfig(dataset="cifar10", data_root=str(tmp_path), backbone="resnet18", width=2,
                      epochs=1, batch_size=16, framework=framework, loss=loss, queue_size=32,
                      device="cpu")  # fmt: skip
    trainer = trainer_class(cfg)(cfg, None, progress=False)
    before = [p.detach().clone() for p in trainer.model.encoder.parameters()]
    assert np.isfinite(trainer.train_epoch()["loss"])
    after = list(trainer.model.encoder.parameters())
    assert any(not torch.equal(a, b) for a, b in zip(before, after, strict=True))


def test_linear_evaluation_settings_come_from_the_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from contrastkit.images import trainer as image_trainer

    seen: list[dict] = []
    real = image_trainer.linear_eval

    def spy(*args: object, **kwargs: object) -> dict:
        seen.append(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(image_trainer, "linear_eval", spy)
    _cifar_fixture(tmp_path)
    base = ["train", "--dataset", "cifar10", "--data-root", str(tmp_path), "--backbone",
            "resnet18", "--width", "4", "--epochs", "1", "--batch-size", "16", "--knn-k", "5",
            "--knn-small-k", "3", "--no-progress"]  # fmt: skip
    assert main([*base, "--out", str(tmp_path / "a")]) == 0
    assert seen[-1]["epochs"] == 100 and "lr" not in seen[-1]  # MACL App. B.3's defaults
    flags = ["--linear-epochs", "3", "--linear-lr", "0.5", "--linear-optimizer", "lbfgs"]
    assert main([*base, *flags, "--out", str(tmp_path / "b")]) == 0
    assert {k: seen[-1][k] for k in ("epochs", "lr", "optimizer")} == {
        "epochs": 3,
        "lr": 0.5,
        "optimizer": "lbfgs",
    }
    final = json.loads((tmp_path / "b" / "final.json").read_text())
    assert final["config"]["linear_epochs"] == 3


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"dataset": "digits", "linear_epochs": 5}, "applies to image datasets"),
        ({"dataset": "cifar10", "linear_epochs": 0}, "linear_epochs must be a positive"),
        ({"dataset": "cifar10", "linear_lr": -1.0}, "linear_lr must be a finite number > 0"),
        (
            {"dataset": "cifar10", "linear_optimizer": "adam"},
            "linear_optimizer must be one of sgd, lbfgs or null",
        ),
    ],
)
def test_bad_linear_evaluation_settings_are_refused(values: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        TrainConfig(**values)


def test_jitter_flag_reaches_every_view(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from contrastkit.images import ImageTrainer

    _cifar_fixture(tmp_path)
    for recipe in ("simclr", "byol"):
        cfg = TrainConfig(dataset="cifar10", data_root=str(tmp_path), width=4, batch_size=16,
                          aug_recipe=recipe,
                          jitter=[0.4, 0.4, 0.4, 0.4], p_jitter=1.0)  # fmt: skip
        views = ImageTrainer(cfg, tmp_path / recipe).view_augments
        assert [(v.jitter, v.p_jitter) for v in views] == [((0.4,) * 4, 1.0)] * len(views)
    base = ["train", "--dataset", "cifar10", "--data-root", str(tmp_path), "--epochs", "1"]
    assert main([*base, "--jitter", "0.4,0.4", "--out", str(tmp_path / "x")]) == 2
    assert "--jitter must be four comma-separated numbers" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()


@pytest.mark.parametrize("compile_", [False, True])
def test_a_run_that_compiles_compiles_its_views(tmp_path: Path, compile_: bool) -> None:
    """``compile`` reaches the views of training (:meth:`ImageAugment.compile`), not
    only the network."""
    _cifar_fixture(tmp_path)
    cfg = TrainConfig(dataset="cifar10", data_root=str(tmp_path), backbone="resnet18", width=2,
                      epochs=1, batch_size=16, compile=compile_)  # fmt: skip
    trainer = Trainer(cfg, tmp_path / "run", False)
    assert [a.compiled for a in trainer.view_augments] == [compile_]
