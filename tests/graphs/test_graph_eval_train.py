"""SVM protocol, GIN encoder and the graph trainer through the shared loop and the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from contrastkit.cli import main
from contrastkit.graphs.evaluate import (
    stratified_folds,
    svm_cross_validation,
    svm_cross_validation_reference,
)
from contrastkit.graphs.gin import GINEncoder
from contrastkit.graphs.trainer import GraphTrainer
from contrastkit.graphs.tu import read_tu
from contrastkit.training import TrainConfig, trainer_class

CONFIGS = Path(__file__).parents[2] / "configs" / "graphs"


def test_folds_are_stratified_and_partition_the_set() -> None:
    labels = np.array([0] * 60 + [1] * 30 + [2] * 20)
    folds = stratified_folds(labels, 10, seed=0)
    tests = np.concatenate([t for _, t in folds])
    assert sorted(tests.tolist()) == list(range(110))  # every graph tested exactly once
    for train, test in folds:
        assert np.bincount(labels[test]).tolist() == [6, 3, 2]
        assert not set(train) & set(test)


def test_folds_need_enough_graphs_per_class() -> None:
    with pytest.raises(ValueError, match="smallest class has 3"):
        stratified_folds(np.array([0] * 20 + [1] * 3), 10)


def test_svm_is_perfect_on_separable_and_chance_on_shuffled_labels() -> None:
    gen = torch.Generator().manual_seed(0)
    y = torch.arange(60) % 2
    x = y[:, None].float() * 3.0 + 0.1 * torch.randn(60, 4, generator=gen)
    result = svm_cross_validation(x, y)
    assert result["svm_accuracy"] == 1.0 and result["svm_accuracy_std"] == 0.0
    assert len(result["svm_fold_accuracies"]) == 10
    noise = svm_cross_validation(torch.randn(60, 4, generator=gen), y, c_grid=(1.0,))
    assert noise["svm_accuracy"] < 0.8


@pytest.mark.parametrize("seed", [0, 1])
def test_precomputed_kernel_protocol_equals_gridsearch(seed: int) -> None:
    """Overlapping classes of unequal size, three classes, features on different scales:
    the inner search picks different C per fold, and both paths must agree on all."""
    gen = torch.Generator().manual_seed(seed)
    y = torch.cat([torch.zeros(50), torch.ones(40), torch.full((30,), 2.0)]).long()
    x = y[:, None].float() * torch.tensor([0.8, 0.0, 0.3]) + torch.randn(120, 3, generator=gen)
    x = x * torch.tensor([1.0, 5.0, 0.2])
    fast = svm_cross_validation(x, y, seed=seed)
    reference = svm_cross_validation_reference(x, y, seed=seed)
    assert fast == reference
    assert len(set(fast["svm_c_chosen"])) > 1  # the grid search mattered


def test_gin_embedding_concatenates_sum_pooled_layers(toy_tu: Path) -> None:
    graphs, _ = read_tu("TOY", toy_tu)
    enc = GINEncoder(graphs.num_features, width=8, layers=3).eval()
    h = enc(graphs)
    assert h.shape == (3, 24) and enc.feature_dim == 24
    states = enc.node_states(graphs)
    first = states[0][: graphs.node_ptr[1]].sum(0)  # graph 0's layer-1 readout
    torch.testing.assert_close(h[0, :8], first)
    # a graph's embedding does not depend on the other graphs of the batch
    torch.testing.assert_close(enc(graphs[torch.tensor([2])])[0], h[2])


def test_graph_configs_are_valid() -> None:
    from contrastkit.training import load_yaml

    for path in sorted(CONFIGS.glob("*.yaml")):
        config = TrainConfig.from_dict(load_yaml(path))
        assert config.feature_dim % config.width == 0, path


def test_trainer_trains_through_the_shared_loop_and_resumes(
    two_class_tu: Path, tmp_path: Path
) -> None:
    values = dict(
        dataset="tu:RINGS",
        data_root=str(two_class_tu),
        loss="macl",
        epochs=1,
        batch_size=16,
        width=8,
        feature_dim=16,
        proj_dim=16,
        lr=0.01,
    )
    config = TrainConfig(**values)
    assert trainer_class(config) is GraphTrainer
    first = GraphTrainer(config, tmp_path / "run", progress=False).fit()
    assert 0.0 <= first["svm_accuracy"] <= 1.0 and "svm_accuracy_std" in first
    assert "knn_accuracy" not in first and first["config"]["joint_views"] is False
    resumed = GraphTrainer(TrainConfig(**{**values, "epochs": 2}), tmp_path / "run", False)
    assert resumed.fit(resume=True)["epochs"] == 2
    assert len((tmp_path / "run" / "metrics.jsonl").read_text().splitlines()) == 2


def test_cli_writes_svm_accuracy(two_class_tu: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "run"
    code = main(
        [
            "train",
            "--modality",
            "graph",
            "--config",
            str(CONFIGS / "macl_tu.yaml"),
            "--dataset",
            "tu:RINGS",
            "--data-root",
            str(two_class_tu),
            "--epochs",
            "1",
            "--batch-size",
            "16",
            "--no-progress",
            "--out",
            str(out),
        ]
    )
    assert code == 0
    final = json.loads((out / "final.json").read_text())
    assert 0.0 <= final["svm_accuracy"] <= 1.0 and final["svm_accuracy_std"] >= 0.0
    assert final["config"]["loss_args"] == {"temperature": 0.2, "alpha": 0.5, "a0": 0.0}


@pytest.mark.parametrize(
    ("command", "modality", "dataset", "actual"),
    [
        (["train"], "image", "tu:RINGS", "graph"),
        (["train"], "graph", "cifar10", "image"),
        (["compare", "--losses", "ntxent"], "tabular", "tu:RINGS", "graph"),
    ],
)
def test_cli_modality_mismatch_is_one_line(
    two_class_tu: Path,
    tmp_path: Path,
    capsys,
    command: list[str],
    modality: str,
    dataset: str,
    actual: str,
) -> None:
    argv = [*command, "--modality", modality, "--dataset", dataset]
    argv += ["--data-root", str(two_class_tu), "--epochs", "1", "--no-progress"]
    code = main([*argv, "--out", str(tmp_path / "run")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err
    assert f"modality {modality!r} does not match dataset {dataset!r}" in err
    assert f"which is {actual!r} data" in err
    assert not (tmp_path / "run").exists()


def test_cli_missing_dataset_is_one_line(tmp_path: Path, capsys) -> None:
    code = main(["train", "--dataset", "tu:NOPE", "--data-root", str(tmp_path), "--no-progress"])
    assert code != 0
    assert "NOPE_A.txt" in capsys.readouterr().err


def test_missing_torch_geometric_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "torch_geometric", None)  # import now fails
    with pytest.raises(ImportError, match=r"pip install 'contrastkit\[graph\]'"):
        GINEncoder(3)


def test_compare_tabulates_svm_accuracy(two_class_tu: Path, tmp_path: Path) -> None:
    out = tmp_path / "cmp"
    code = main(
        [
            "compare",
            "--config",
            str(CONFIGS / "graphcl_tu.yaml"),
            "--dataset",
            "tu:RINGS",
            "--data-root",
            str(two_class_tu),
            "--losses",
            "macl",
            "--seeds",
            "0",
            "--epochs",
            "1",
            "--batch-size",
            "16",
            "--no-progress",
            "--out",
            str(out),
        ]
    )
    assert code == 0
    table = (out / "table.md").read_text()
    assert "svm_accuracy" in table and "| macl |" in table
