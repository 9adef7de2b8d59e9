"""The declared final numbers: what they match, and the headers compare gives them."""

from __future__ import annotations

from contrastkit.training.metrics import compare_columns, header, is_final_metric, undeclared


def test_keys_and_patterns_match_whole() -> None:
    assert is_final_metric("knn_accuracy") and is_final_metric("knn_accuracy_k20")
    assert is_final_metric("probe_10_per_class") and is_final_metric("senteval_MR")
    assert not is_final_metric("knn_accuracy_k") and not is_final_metric("xknn_accuracy")
    assert not is_final_metric("head_mse")  # no trainer writes it
    final = {"knn_accuracy": 0.5, "stray": 1, "flag": True, "device": "cpu", "epochs": 2}
    assert undeclared(final) == ["stray"]


def test_headers_take_the_pattern_s_groups_and_the_runs_shared_config() -> None:
    assert header("knn_accuracy_k3") == "kNN k=3"
    assert header("knn_accuracy", {"knn_k": 7}) == "kNN k=7"
    assert header("knn_accuracy") == "knn_accuracy"  # runs of different k: the key
    assert header("alignment") == "alignment" and header("train_time_s") == "train s/run"
    assert header("repulsion_entropy") == "repulsion_entropy"  # no compare column


def test_compare_columns_are_the_shared_declared_ones_in_declaration_order() -> None:
    finals = [
        {"train_time_s": 1.0, "uniformity": -1.0, "knn_accuracy_k5": 0.4, "knn_accuracy": 0.5},
        {"train_time_s": 2.0, "uniformity": -2.0, "knn_accuracy": 0.6, "repulsion_entropy": 1},
    ]
    assert compare_columns(finals) == ["knn_accuracy", "uniformity", "train_time_s"]
