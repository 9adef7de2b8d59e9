"""The dataset registry and class-imbalanced subsets."""

from __future__ import annotations

import pytest
import torch

from contrastkit.data import Split, load_dataset, register_dataset
from contrastkit.data.imbalance import class_fractions, imbalance_split
from contrastkit.data.registry import check_modality, dataset_info, is_regression
from contrastkit.training import TrainConfig


def _toy(num_samples: int | None = None) -> Split:
    y = torch.arange(100) % 4
    return Split("toy", "2d", torch.zeros(100, 1, 2, 2), y, torch.zeros(8, 1, 2, 2), y[:8])


def test_prefix_and_plain_registration() -> None:
    calls: list[str] = []

    def family(rest: str, num_samples: int | None = None) -> Split:
        calls.append(rest)
        return _toy()

    register_dataset("toyfam", family, "2d", prefix=True)
    register_dataset("toy", _toy, "2d")
    load_dataset("toyfam:PROTEINS")
    assert calls == ["PROTEINS"] and dataset_info("toyfam:X").prefix
    with pytest.raises(ValueError, match="unknown dataset 'toyfam'"):
        dataset_info("toyfam")
    with pytest.raises(ValueError, match="does not take data_root"):
        load_dataset("toy", data_root="/x")
    with pytest.raises(ValueError, match="already registered"):
        register_dataset("toy", family, "2d")
    assert is_regression("diabetes") and not is_regression("toy")


@pytest.mark.parametrize(
    ("name", "modality"),
    [
        ("digits", "image"),
        ("cifar10", "image"),
        ("imagefolder", "image"),
        ("mnist1d", "signal"),
        ("diabetes", "tabular"),
        ("tu:PROTEINS", "graph"),
        ("davis", "graph"),
    ],
)
def test_each_dataset_declares_its_modality(name: str, modality: str) -> None:
    assert dataset_info(name).modality == modality
    assert check_modality(name, None) == modality == check_modality(name, modality)
    assert TrainConfig(dataset=name, modality=modality).modality == modality


def test_a_modality_mismatch_is_refused() -> None:
    with pytest.raises(ValueError, match="modality 'graph' does not match dataset 'cifar10'"):
        TrainConfig(dataset="cifar10", modality="graph")
    with pytest.raises(ValueError, match="modality 'image' does not match dataset 'tu:MUTAG'"):
        TrainConfig(dataset="tu:MUTAG", modality="image")
    with pytest.raises(ValueError, match="modality must be one of graph, image, signal"):
        check_modality("digits", "audio")
    assert check_modality("sst5", "text") == "text"
    with pytest.raises(ValueError, match="dataset kind must be one of"):
        register_dataset("toy_unknown_kind", _toy, "voxels")


def test_fractions_follow_the_stated_rules() -> None:
    lin = class_fractions("linear", 10)
    assert torch.allclose(lin, torch.arange(1, 11, dtype=torch.float64) / 10)  # l / C
    exp = class_fractions("exponential", 10, 100.0)
    assert exp[0] == pytest.approx(0.01) and exp[-1] == pytest.approx(1.0)
    ratios = exp[1:] / exp[:-1]
    assert torch.allclose(ratios, ratios[0].expand_as(ratios))  # geometric
    with pytest.raises(ValueError, match="imbalance_ratio must be a number >= 1"):
        class_fractions("linear", 10, 0.5)


def test_imbalanced_subset_is_seeded_and_test_untouched() -> None:
    base = _toy()
    a = imbalance_split(base, "linear", seed=3)
    assert torch.bincount(a.y_train).tolist() == [6, 12, 19, 25]  # round(l/4 · 25)
    assert torch.equal(a.y_train, imbalance_split(base, "linear", seed=3).y_train)
    assert torch.equal(a.x_test, base.x_test) and a.name == "toy-linear"
    b = imbalance_split(base, "exponential", ratio=25.0, seed=0)
    assert torch.bincount(b.y_train).tolist() == [1, 3, 9, 25]  # 25·25^(-k/3) = 1, 2.9, 8.5, 25
    with pytest.raises(ValueError, match="regression"):
        load_dataset("diabetes", imbalance="linear")
