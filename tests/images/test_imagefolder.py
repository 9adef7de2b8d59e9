"""``imagefolder`` from folders and archives, with its uint8 decode cache."""

from __future__ import annotations

import tarfile
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from contrastkit.data import load_dataset


def _tree(root: Path, splits: tuple[str, ...], per_class: int = 5, size: int = 8) -> None:
    rng = np.random.default_rng(0)
    for split in splits:
        for cls in ("cat", "dog", "frog"):
            folder = root / split / cls if split else root / cls
            folder.mkdir(parents=True)
            for i in range(per_class):
                arr = rng.integers(0, 256, (size, size, 3), dtype=np.uint8)
                Image.fromarray(arr).save(folder / f"{i}.png")


def test_wrapped_tar_with_train_test_matches_pixels_and_caches(tmp_path: Path) -> None:
    src = tmp_path / "src" / "cifar10"
    _tree(src, ("train", "test"))
    (src / "train" / "cat" / "._0.png").write_bytes(b"macOS resource fork, not an image")
    archive = tmp_path / "images.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(src, arcname="./cifar10")  # one wrapping folder, as the shared copy
    cache = tmp_path / "cache"
    d = load_dataset("imagefolder", data_root=str(archive), cache_dir=str(cache))
    assert d.x_train.shape == (15, 3, 8, 8) and d.x_test.shape == (15, 3, 8, 8)
    assert d.x_train.dtype == torch.uint8 and d.num_classes == 3
    png = np.asarray(Image.open(src / "train" / "dog" / "0.png")).transpose(2, 0, 1)
    rows = [i for i in range(15) if int(d.y_train[i]) == 1]  # classes sorted: cat, dog, frog
    assert any(np.array_equal(d.x_train[i].numpy(), png) for i in rows)
    cached = list(cache.glob("imagefolder-*/x_train.npy"))
    assert len(cached) == 1
    again = load_dataset("imagefolder", data_root=str(archive), cache_dir=str(cache))
    assert torch.equal(again.x_train, d.x_train)


def test_flat_folder_gets_a_seeded_stratified_split(tmp_path: Path) -> None:
    _tree(tmp_path / "data", ("",), per_class=10)
    kw = {"data_root": str(tmp_path / "data"), "cache_dir": str(tmp_path / "c")}
    d = load_dataset("imagefolder", **kw)
    assert d.x_test.shape[0] == 6 and torch.bincount(d.y_test).tolist() == [2, 2, 2]


def test_a_folder_whose_images_change_is_decoded_again(tmp_path: Path) -> None:
    """Adding an image to a class folder or rewriting one leaves the root folder's own
    size and time as they were; the cache is keyed on every image, so it is not reused."""
    root = tmp_path / "data"
    _tree(root, ("train", "test"), per_class=2)
    kw = {"data_root": str(root), "cache_dir": str(tmp_path / "c")}
    assert load_dataset("imagefolder", **kw).x_train.shape[0] == 6
    Image.fromarray(np.full((8, 8, 3), 255, np.uint8)).save(root / "train" / "cat" / "7.png")
    Image.fromarray(np.full((8, 8, 3), 255, np.uint8)).save(root / "train" / "dog" / "0.png")
    again = load_dataset("imagefolder", **kw)
    assert again.x_train.shape[0] == 7
    assert int((again.x_train.flatten(1) == 255).all(1).sum()) == 2


def test_mixed_sizes_need_image_size(tmp_path: Path) -> None:
    _tree(tmp_path / "data", ("",), per_class=3)
    Image.fromarray(np.zeros((5, 9, 3), np.uint8)).save(tmp_path / "data" / "cat" / "odd.png")
    kw = {"data_root": str(tmp_path / "data"), "cache_dir": str(tmp_path / "c")}
    with pytest.raises(ValueError, match=r"odd\.png is 5x9.*image_size"):
        load_dataset("imagefolder", **kw)
    d = load_dataset("imagefolder", image_size=4, **kw)
    assert d.input_shape == (3, 4, 4)


def test_bad_layout_and_missing_root(tmp_path: Path) -> None:
    (tmp_path / "a" / "b" / "c").mkdir(parents=True)
    Image.fromarray(np.zeros((4, 4, 3), np.uint8)).save(tmp_path / "a" / "x.png")
    Image.fromarray(np.zeros((4, 4, 3), np.uint8)).save(tmp_path / "a" / "b" / "c" / "y.png")
    with pytest.raises(ValueError, match="mixed depths"):
        load_dataset("imagefolder", data_root=str(tmp_path / "a"), cache_dir=str(tmp_path / "c"))
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_dataset("imagefolder", data_root=str(tmp_path / "nope"))


def test_two_runs_filling_one_cache_at_once_both_load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A second run decodes and writes the whole cache while the first is between writing
    its first file and renaming it: both must load the same set."""
    import contrastkit.images.imagefolder as imagefolder

    _tree(tmp_path / "data", ("train", "test"), per_class=2)
    kw = {"data_root": str(tmp_path / "data"), "cache_dir": str(tmp_path / "c")}
    save, raced, inner = np.save, [], []

    def save_then_race(file, arr, *args, **kwargs):
        save(file, arr, *args, **kwargs)
        if not raced:  # the first file written: the other run goes now, start to end
            raced.append(True)
            inner.append(load_dataset("imagefolder", **kw))

    monkeypatch.setattr(imagefolder.np, "save", save_then_race)
    outer = load_dataset("imagefolder", **kw)
    assert len(inner) == 1 and torch.equal(outer.x_train, inner[0].x_train)
    files = sorted(p.name for p in (tmp_path / "c").glob("*/*"))  # no temporary left over
    assert files == ["meta.json", "x_test.npy", "x_train.npy", "y_test.npy", "y_train.npy"]


def test_16_bit_images_keep_their_top_8_bits_and_32_bit_ones_are_refused() -> None:
    """Pillow's RGB conversion clipped a 16-bit grayscale PNG to 255 (and mapped 32-bit
    integer and float images to constants) without a word."""
    import io

    from contrastkit.images.folder_files import decode

    wide = (np.arange(64).reshape(8, 8) * 1000).astype(np.uint16)
    png = io.BytesIO()
    Image.fromarray(wide).save(png, format="PNG")
    out = decode(png.getvalue(), "a.png", None)
    assert out.shape == (3, 8, 8) and np.array_equal(out[1], (wide >> 8).astype(np.uint8))
    for pixels in (wide.astype(np.int32), np.random.default_rng(0).random((8, 8), np.float32)):
        tif = io.BytesIO()
        Image.fromarray(pixels).save(tif, format="TIFF")
        with pytest.raises(ValueError, match=r"b\.tif has '(I|F)' pixels .* 8- or 16-bit"):
            decode(tif.getvalue(), "b.tif", None)


def test_a_relative_cache_dir_inside_the_data_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The data may be read-only and must stay as it was: a cache inside it is refused also
    when --cache-dir is given relative to the working folder (it slipped past the check)."""
    _tree(tmp_path / "data", ("",), per_class=3)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match="lies inside the data"):
        load_dataset("imagefolder", data_root="data", cache_dir="data/sub")
    assert not (tmp_path / "data" / "sub").exists()
