"""Lazy image sets and STL-10's train + unlabeled pre-training (memory-mapped)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from contrastkit.data import load_dataset
from contrastkit.data.sources import ConcatImages, iter_batches, pretraining_set, take
from contrastkit.training import TrainConfig, trainer_class


def _parts() -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(0)
    a = torch.randint(0, 256, (5, 3, 4, 4), generator=gen, dtype=torch.uint8)
    b = torch.randint(0, 256, (7, 3, 4, 4), generator=gen, dtype=torch.uint8)
    return a, b


def test_concat_gathers_rows_from_each_part_in_order() -> None:
    a, b = _parts()
    whole = torch.cat([a, b])
    x = ConcatImages([a, b])
    assert len(x) == 12 and x.shape == (12, 3, 4, 4)
    idx = torch.tensor([11, 0, 4, 5, 7, 4, -1])
    assert torch.equal(x[idx], whole[idx])
    assert torch.equal(x[3:9], whole[3:9])
    sub = take(x, torch.tensor([6, 2, 10]))
    assert torch.equal(sub[torch.tensor([2, 0])], whole[torch.tensor([10, 6])])
    rows = [torch.tensor([0, 2]), slice(0, 3)]
    got = list(iter_batches(sub, rows))
    assert torch.equal(got[0], whole[torch.tensor([6, 10])]) and torch.equal(got[1], sub[:])
    with pytest.raises(IndexError, match="out of range for 12"):
        x[torch.tensor([12])]
    with pytest.raises(ValueError, match="uint8 \\[N, C, H, W\\] of one size"):
        ConcatImages([a, torch.zeros(2, 3, 5, 5, dtype=torch.uint8)])


def _stl_fixture(root: Path, n_train: int = 20, n_test: int = 10, n_unl: int = 12) -> dict:
    folder = root / "stl10_binary"
    folder.mkdir(parents=True)
    rng = np.random.default_rng(0)
    sizes = (("train", n_train), ("test", n_test), ("unlabeled", n_unl))
    imgs = {s: rng.integers(0, 256, (n, 3, 96, 96), dtype=np.uint8) for s, n in sizes}
    for split, x in imgs.items():
        x.transpose(0, 1, 3, 2).tofile(folder / f"{split}_X.bin")  # column-major, as released
    (np.arange(n_train) % 10 + 1).astype(np.uint8).tofile(folder / "train_y.bin")
    (np.arange(n_test) % 10 + 1).astype(np.uint8).tofile(folder / "test_y.bin")
    return imgs


def _mapped_file(address: int) -> str:
    for line in Path("/proc/self/maps").read_text().splitlines():
        fields = line.split()
        low, high = (int(v, 16) for v in fields[0].split("-"))
        if low <= address < high:
            return fields[5] if len(fields) > 5 else ""
    return ""


def test_stl10_unlabeled_stays_memory_mapped_in_the_pretraining_set(tmp_path: Path) -> None:
    imgs = _stl_fixture(tmp_path)
    d = load_dataset("stl10", data_root=str(tmp_path))
    x, y = pretraining_set(d)
    assert isinstance(x, ConcatImages) and len(x) == 32
    assert x.parts[1] is d.x_unlabeled  # the memory-mapped tensor itself, not a copy
    if Path("/proc/self/maps").is_file():  # Linux: the rows live in a mapping of the file
        assert _mapped_file(d.x_unlabeled.data_ptr()).endswith("unlabeled_X.bin")
    assert y[:20].tolist() == d.y_train.tolist() and (y[20:] == -1).all()
    assert torch.equal(x[torch.tensor([21, 3])][0], torch.from_numpy(imgs["unlabeled"][1]))
    assert pretraining_set(d, unlabeled=False)[0] is d.x_train
    with pytest.raises(ValueError, match="no labels for online_probe"):
        pretraining_set(d, labelled_only=["online_probe"])
    digits = load_dataset("digits")
    with pytest.raises(ValueError, match="digits has no unlabelled images"):
        pretraining_set(digits, unlabeled=True)


def _stl_config(root: Path, **kw: object) -> TrainConfig:
    values = dict(dataset="stl10", data_root=str(root), backbone="resnet18", width=2,
                  epochs=1, batch_size=8, knn_k=3, knn_small_k=2, device="cpu")  # fmt: skip
    return TrainConfig(**{**values, **kw})


def test_trainer_pretrains_on_train_plus_unlabeled_and_evaluates_on_labelled(
    tmp_path: Path,
) -> None:
    imgs = _stl_fixture(tmp_path)
    cfg = _stl_config(tmp_path)
    trainer = trainer_class(cfg)(cfg, None, progress=False)
    assert trainer.steps_per_epoch == 4  # 32 images / 8, not 20 / 8
    seen: list[torch.Tensor] = []
    aug = trainer.view_augments[0]

    def spy(batch: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
        seen.append(batch)
        return aug(batch, gen)

    trainer.view_augments = [spy]
    record = trainer.train_epoch()
    assert np.isfinite(record["loss"])
    drawn = torch.cat(seen[::2])  # two views per batch: every other call is a new batch
    every = torch.from_numpy(np.concatenate([imgs["train"], imgs["unlabeled"]]))
    key = {bytes(im.numpy().tobytes()) for im in drawn}
    assert key == {bytes(im.numpy().tobytes()) for im in every}  # each image once
    train_feats, test_feats = trainer.features()
    assert train_feats.shape[0] == 20 and test_feats.shape[0] == 10  # labelled splits only
    alone = trainer_class(cfg)(_stl_config(tmp_path, unlabeled=False), None, progress=False)
    assert alone.steps_per_epoch == 2
    with pytest.raises(ValueError, match="no labels for the supervised framework"):
        trainer_class(cfg)(_stl_config(tmp_path, framework="supervised", loss="supcon"), None)


def test_keep_reads_only_a_ranks_slice_and_zero_fills_the_rest() -> None:
    a, b = _parts()
    x = ConcatImages([a, b])
    whole = torch.cat([a, b])
    rows = torch.tensor([[11, 0, 4, 5], [7, 3, 2, 9]])
    read: list[torch.Tensor] = []
    gather = x.gather
    x.gather = lambda idx: read.append(idx) or gather(idx)  # type: ignore[method-assign]
    got = list(iter_batches(x, rows, keep=slice(2, 4)))
    assert [r.tolist() for r in read] == [[4, 5], [2, 9]]  # only the kept positions
    for r, batch in zip(rows, got, strict=True):
        assert torch.equal(batch[2:], whole[r[2:]]) and not batch[:2].any()


def test_rank_slice_of_a_batch_trains_on_its_own_images(tmp_path: Path) -> None:
    """As rank 1 of 2 (no process group needed: the loop slices by rank), each batch the
    augmentation sees holds this rank's half and zeros for the other half."""
    imgs = _stl_fixture(tmp_path)
    cfg = _stl_config(tmp_path)
    trainer = trainer_class(cfg)(cfg, None, progress=False)
    trainer.world, trainer.rank = 2, 1
    seen: list[torch.Tensor] = []
    aug = trainer.view_augments[0]
    trainer.view_augments = [lambda batch, gen: seen.append(batch) or aug(batch, gen)]
    assert np.isfinite(trainer.train_epoch()["loss"])
    halves = torch.cat([s[4:] for s in seen[::2]])
    assert not torch.cat([s[:4] for s in seen]).any()
    every = np.concatenate([imgs["train"], imgs["unlabeled"]])
    assert {im.numpy().tobytes() for im in halves} <= {im.tobytes() for im in every}
    assert len(halves) == 16  # 4 batches × this rank's 4
