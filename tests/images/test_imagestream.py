"""Streamed image folders: the same images as the decode cache, through DataLoader workers."""

from __future__ import annotations

import tarfile
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from contrastkit.data import load_dataset
from contrastkit.data.sources import LazyImages, iter_batches
from contrastkit.images import imagestream
from contrastkit.images.imagestream import StreamedImages
from contrastkit.training import TrainConfig, trainer_class


def _tree(root: Path, per_class: int = 6, size: int = 10) -> None:
    rng = np.random.default_rng(0)
    for split in ("train", "test"):
        for cls in ("cat", "dog", "frog"):
            folder = root / "wrap" / split / cls
            folder.mkdir(parents=True)
            for i in range(per_class if split == "train" else 2):
                arr = rng.integers(0, 256, (size + i % 3, size + 2, 3), dtype=np.uint8)
                Image.fromarray(arr).save(folder / f"{i}.png")


@pytest.fixture(params=["folder", "tar"])
def source(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    _tree(tmp_path / "src")
    if request.param == "folder":
        return tmp_path / "src"
    archive = tmp_path / "images.tar"  # uncompressed: read per member at its offset
    with tarfile.open(archive, "w") as tar:
        tar.add(tmp_path / "src" / "wrap", arcname="wrap")
    return archive


def test_streamed_and_cached_give_the_same_images_for_the_same_indices(
    source: Path, tmp_path: Path
) -> None:
    kw = {"data_root": str(source), "cache_dir": str(tmp_path / "cache"), "image_size": 8}
    cached = load_dataset("imagefolder", stream=False, **kw)
    streamed = load_dataset("imagefolder", stream=True, **kw)
    assert isinstance(streamed.x_train, LazyImages) and not isinstance(cached.x_train, LazyImages)
    assert streamed.x_train.shape == tuple(cached.x_train.shape) == (18, 3, 8, 8)
    assert torch.equal(streamed.y_train, cached.y_train)
    assert torch.equal(streamed.y_test, cached.y_test)
    assert np.allclose(streamed.mean, cached.mean) and np.allclose(streamed.std, cached.std)
    idx = torch.tensor([17, 0, 5, 5, 9])
    assert torch.equal(streamed.x_train[idx], cached.x_train[idx])  # decoded in this process
    assert torch.equal(streamed.x_test[1:5], cached.x_test[1:5])
    rows = torch.randperm(18, generator=torch.Generator().manual_seed(0)).view(3, 6)
    got = list(iter_batches(streamed.x_train, rows, workers=2))  # decoded in 2 workers
    assert len(got) == 3 and all(g.dtype == torch.uint8 for g in got)
    for r, batch in zip(rows, got, strict=True):
        assert torch.equal(batch, cached.x_train[r])
    sub = load_dataset("imagefolder", num_samples=7, stream=True, **kw)
    ref = load_dataset("imagefolder", num_samples=7, stream=False, **kw)
    assert torch.equal(sub.x_train[:], ref.x_train) and torch.equal(sub.y_train, ref.y_train)
    lt = load_dataset("imagefolder", stream=True, imbalance="linear", **kw)  # stays lazy
    lt_ref = load_dataset("imagefolder", stream=False, imbalance="linear", **kw)
    assert isinstance(lt.x_train, LazyImages) and torch.equal(lt.x_train[:], lt_ref.x_train)
    assert torch.bincount(lt.y_train).tolist() == [2, 4, 6]  # f_l = l / C of 6 per class


def test_threshold_picks_streaming_and_compressed_archives_cannot_stream(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _tree(tmp_path / "src")
    kw = {"cache_dir": str(tmp_path / "cache"), "image_size": 8}
    small = load_dataset("imagefolder", data_root=str(tmp_path / "src"), **kw)
    assert not isinstance(small.x_train, LazyImages)  # 24 × 3 × 8 × 8 bytes: cached
    assert imagestream.estimated_bytes(tmp_path / "src", 8) == 24 * 3 * 64
    monkeypatch.setattr(imagestream, "STREAM_BYTES", 1000)
    big = load_dataset(
        "imagefolder", data_root=str(tmp_path / "src"), image_size=8, cache_dir=str(tmp_path / "c2")
    )
    assert isinstance(big.x_train, LazyImages) and isinstance(big.x_train.base, StreamedImages)
    archive = tmp_path / "images.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(tmp_path / "src" / "wrap", arcname="wrap")
    with pytest.raises(ValueError, match="compressed archive, which cannot be read per image"):
        load_dataset("imagefolder", data_root=str(archive), stream=True, **kw)
    # without image_size, a different size is named when it is decoded (here: already by
    # the channel statistics of the load)
    with pytest.raises(ValueError, match=r"is 11x12, the first image 10x12; pass image_size"):
        load_dataset("imagefolder", data_root=str(tmp_path / "src"), stream=True).x_train[:]


@pytest.mark.parametrize("stream", [True, False])
def test_an_undecodable_member_is_named_with_its_archive(tmp_path: Path, stream: bool) -> None:
    (tmp_path / "d" / "a").mkdir(parents=True)
    (tmp_path / "d" / "b").mkdir()
    Image.new("RGB", (8, 8)).save(tmp_path / "d" / "a" / "x.png")
    (tmp_path / "d" / "b" / "y.jpg").write_text("not an image")
    archive = tmp_path / "bad.tar"
    with tarfile.open(archive, "w") as tar:
        tar.add(tmp_path / "d", arcname="d")
    with pytest.raises(ValueError, match=rf"cannot decode {archive}:d/b/y\.jpg"):
        load_dataset(
            "imagefolder", data_root=str(archive), stream=stream, cache_dir=str(tmp_path / "c")
        ).x_train[:]


def test_one_training_epoch_is_identical_on_streamed_and_cached_data(tmp_path: Path) -> None:
    """The data source is all that changes: same batches, same views, same loss."""
    _tree(tmp_path / "src")

    def run(stream: bool) -> tuple[float, torch.Tensor]:
        cfg = TrainConfig(dataset="imagefolder", data_root=str(tmp_path / "src"),
                          cache_dir=str(tmp_path / "cache"), image_size=8, stream=stream,
                          workers=2, backbone="resnet18", width=2, epochs=1, batch_size=6,
                          knn_k=3, knn_small_k=2, device="cpu", seed=3)  # fmt: skip
        trainer = trainer_class(cfg)(cfg, None, progress=False)
        loss = trainer.train_epoch()["loss"]
        return loss, trainer.features()[1]

    (loss_a, feats_a), (loss_b, feats_b) = run(False), run(True)
    assert loss_a == loss_b
    torch.testing.assert_close(feats_a, feats_b, rtol=0, atol=0)


def test_train_command_runs_a_streamed_folder_end_to_end(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`contrastkit train --stream`: training, kNN, linear evaluation and the analyses all
    read the streamed sets; a bad recipe name is one error line."""
    import json

    from contrastkit.cli import main

    _tree(tmp_path / "src")
    out = tmp_path / "run"
    argv = ["train", "--dataset", "imagefolder", "--data-root", str(tmp_path / "src"),
            "--cache-dir", str(tmp_path / "cache"), "--image-size", "8", "--stream",
            "--workers", "1", "--backbone", "resnet18", "--width", "2", "--epochs", "1",
            "--batch-size", "6", "--knn-k", "3", "--knn-small-k", "2", "--no-progress",
            "--device", "cpu"]  # fmt: skip
    assert main([*argv, "--out", str(out)]) == 0
    final = json.loads((out / "final.json").read_text())
    assert final["config"]["stream"] is True and 0.0 <= final["linear_top1"] <= 1.0
    assert (out / "map2d.png").exists()
    capsys.readouterr()
    assert main([*argv, "--aug-recipe", "moco", "--out", str(tmp_path / "bad")]) == 2
    assert "error: aug_recipe must be one of simclr, byol, got 'moco'" in capsys.readouterr().err
