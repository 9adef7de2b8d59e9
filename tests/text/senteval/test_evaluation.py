"""STS aggregates against direct scipy computations, SentEval's classifier protocol,
the embedding cache and the skip-with-one-line behaviour, on fixture data."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy.stats import spearmanr
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import f1_score
from sklearn.model_selection import StratifiedKFold

from contrastkit.text.senteval import (
    CachedEmbedder,
    Layout,
    markdown_table,
    readers,
    run_senteval,
    transfer,
)
from contrastkit.text.senteval.logreg import L2_GRID
from contrastkit.text.senteval.sts import evaluate_sts_year
from contrastkit.text.senteval.transfer import Fitting

from .fixtures import hash_embed, write_downstream


def task_embed(task: str, sentences: list[str]) -> np.ndarray:
    return hash_embed(sentences)


def test_sts_subsets_all_and_wmean_equal_direct_scipy(tmp_path: Path) -> None:
    root = write_downstream(tmp_path)
    subsets = readers.read_sts_year(root / "STS" / "STS15-en-test", "STS15")
    res = evaluate_sts_year(subsets, hash_embed)
    sys_all, gold_all, rhos, sizes = [], [], [], []
    for name, pairs in subsets.items():
        u, v = hash_embed(pairs.a).astype(np.float64), hash_embed(pairs.b).astype(np.float64)
        cos = (u * v).sum(1) / np.linalg.norm(u, axis=1) / np.linalg.norm(v, axis=1)
        rho = 100 * spearmanr(cos, pairs.y).statistic
        assert res["subsets"][name]["spearman"] == pytest.approx(rho, abs=1e-9)
        assert res["subsets"][name]["pairs"] == 10  # 12 lines, 2 unscored
        sys_all.append(cos)
        gold_all += pairs.y
        rhos.append(rho)
        sizes.append(len(pairs))
    direct_all = 100 * spearmanr(np.concatenate(sys_all), gold_all).statistic
    assert res["spearman"]["all"] == pytest.approx(direct_all, abs=1e-9)
    assert res["spearman"]["wmean"] == pytest.approx(np.average(rhos, weights=sizes), abs=1e-9)


def test_inner_kfold_equals_a_direct_nested_cv() -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((60, 5))
    y = (x[:, 0] + 0.8 * rng.standard_normal(60) > 0).astype(int)
    res = transfer.inner_kfold(x, y, k=3)
    outer = StratifiedKFold(n_splits=3, shuffle=True, random_state=1111)
    accs = []
    for (tr, te), c in zip(outer.split(x, y), res["C"], strict=True):
        inner = StratifiedKFold(n_splits=3, shuffle=True, random_state=1111)
        means = [
            round(
                100
                * np.mean(
                    [
                        LogisticRegression(C=cc, random_state=1111, max_iter=1000)
                        .fit(x[tr][a], y[tr][a])
                        .score(x[tr][b], y[tr][b])
                        for a, b in inner.split(x[tr], y[tr])
                    ]
                ),
                2,
            )
            for cc in transfer.INNER_REGS
        ]
        assert c == transfer.INNER_REGS[int(np.argmax(means))]
        clf = LogisticRegression(C=c, random_state=1111, max_iter=1000).fit(x[tr], y[tr])
        accs.append(round(100 * clf.score(x[te], y[te]), 2))
    assert res["acc"] == pytest.approx(round(float(np.mean(accs)), 2))


def test_mrpc_features_and_f1() -> None:
    u, v = np.array([[1.0, -2.0]]), np.array([[3.0, 1.0]])
    assert transfer.mrpc_features(u, v).tolist() == [[2.0, 3.0, 3.0, -2.0]]
    rng = np.random.default_rng(1)
    x = rng.standard_normal((80, 4))
    y = (x[:, 1] > 0).astype(int)
    res = transfer.kfold_then_test(x[:60], y[:60], x[60:], y[60:], k=3, f1=True)
    clf = LogisticRegression(C=res["C"], random_state=1111, max_iter=1000).fit(x[:60], y[:60])
    assert res["f1"] == pytest.approx(round(100 * f1_score(y[60:], clf.predict(x[60:])), 2))
    assert res["C"] in transfer.KFOLD_REGS


def test_every_task_runs_and_the_table_has_simcse_columns(tmp_path: Path) -> None:
    root = write_downstream(tmp_path, n=12)
    res = run_senteval(Layout(root), task_embed, kfold=2, log=lambda _: None)
    assert not res.skipped
    assert all(res.score(t) is not None for t in res.tasks)
    assert res.tasks["STSBenchmark"].keys() == {"train", "dev", "test"}
    assert res.tasks["MRPC"]["f1"] >= 0
    table = markdown_table(res, "m")
    assert (
        "| Model | STS12 | STS13 | STS14 | STS15 | STS16 | STS-B | SICK-R | Avg. (7/7) |" in table
    )
    assert "| Model | MR | CR | SUBJ | MPQA | SST | TREC | MRPC | Avg. (7/7) |" in table
    avg, n = res.average(("MR", "CR"))
    assert avg == pytest.approx((res.tasks["MR"]["acc"] + res.tasks["CR"]["acc"]) / 2) and n == 2


@pytest.mark.parametrize("kind", ["sklearn", "pytorch"])
def test_parallel_classifier_fits_give_the_same_scores(tmp_path: Path, kind: str) -> None:
    root = write_downstream(tmp_path, n=12)
    tasks = ("MR", "SST2", "TREC", "MRPC")  # all three CV schemes
    results = [
        run_senteval(
            Layout(root), task_embed, tasks, 2, lambda _: None, fitting=Fitting(kind, jobs=j)
        )
        for j in (1, 2)
    ]
    assert set(results[0].tasks) == set(tasks)
    assert results[1].tasks == results[0].tasks
    grid = transfer.INNER_REGS if kind == "sklearn" else L2_GRID
    assert set(results[0].tasks["MR"]["C"]) <= set(grid)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"jobs": 0}, "--jobs must be a positive integer, got 0"), ({"kind": "svm"}, "--classifier")],
)
def test_bad_fitting_settings_are_one_line_errors(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Fitting(**kwargs)


def test_missing_task_is_skipped_with_one_line_naming_files(tmp_path: Path) -> None:
    root = write_downstream(tmp_path, n=10)
    (root / "CR" / "custrev.neg").unlink()
    (root / "STS" / "STSBenchmark" / "sts-test.csv").unlink()
    lines: list[str] = []
    res = run_senteval(Layout(root), task_embed, tasks=("CR", "STSBenchmark"), log=lines.append)
    assert "CR" in res.skipped and "CR" not in res.tasks
    (skip,) = [line for line in lines if line.startswith("skipped")]
    assert "custrev.pos" in skip and "custrev.neg" in skip
    assert res.score("STSBenchmark") is None and "dev" in res.tasks["STSBenchmark"]
    with pytest.raises(ValueError, match="unknown"):
        run_senteval(Layout(root), task_embed, tasks=("STS17",))


def test_cache_makes_a_second_evaluation_encode_nothing(tmp_path: Path) -> None:
    root = write_downstream(tmp_path, n=10)
    tasks = ("STS12", "SICKRelatedness", "TREC")
    first = CachedEmbedder(hash_embed, tmp_path / "cache")
    a = run_senteval(Layout(root), first, tasks=tasks, kfold=2, log=lambda _: None)
    assert first.encoded > 0
    second = CachedEmbedder(hash_embed, tmp_path / "cache")
    b = run_senteval(Layout(root), second, tasks=tasks, kfold=2, log=lambda _: None)
    assert second.encoded == 0
    assert a.to_dict()["STS12"] == b.to_dict()["STS12"]
    assert a.score("TREC") == b.score("TREC")


def test_constant_system_scores_give_zero_not_nan() -> None:
    from contrastkit.text.senteval.sts import correlations

    assert correlations(np.ones(4), [1.0, 2.0, 3.0, 4.0]) == {"spearman": 0.0, "pearson": 0.0}
    with pytest.raises(ValueError, match="varying gold"):
        correlations(np.arange(4.0), [2.0] * 4)


def test_samples_are_put_in_senteval_length_order() -> None:
    from contrastkit.text.senteval.run import _length_order

    x = ["a b c", "a", "a b", "b", "c d"]
    y = [1, 1, 0, 0, 1]
    # by word count, then label; ties keep file order (Python's sort is stable)
    assert _length_order(x, y).tolist() == [3, 1, 2, 4, 0]
    assert _length_order(["a b", "a"], ["x", "y z"], [0, 1]).tolist() == [1, 0]
