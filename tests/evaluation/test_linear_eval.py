"""Linear evaluation (SGD / L-BFGS, top-1 / top-5), kNN on the features' device,
and AMCL Table 4's label-fraction probe."""

from __future__ import annotations

import pytest
import torch

from contrastkit.evaluation import knn_accuracy, label_fraction_probe, linear_eval, topk_accuracy
from contrastkit.evaluation.linear_eval import per_class_subset


def _blobs(n: int, classes: int = 10, d: int = 16, noise: float = 0.3, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    centres = torch.randn(classes, d, generator=torch.Generator().manual_seed(99)) * 2
    y = torch.arange(n) % classes
    return centres[y] + noise * torch.randn(n, d, generator=g), y


def test_topk_matches_a_loop() -> None:
    g = torch.Generator().manual_seed(0)
    logits, labels = torch.randn(40, 7, generator=g), torch.randint(0, 7, (40,), generator=g)
    acc = topk_accuracy(logits, labels, (1, 3, 10))
    for k in (1, 3):
        ref = sum(
            int(labels[i]) in logits[i].argsort(descending=True)[:k].tolist() for i in range(40)
        )
        assert acc[k] == pytest.approx(ref / 40)
    assert acc[10] == 1.0  # capped at the class count


@pytest.mark.parametrize("optimizer", ["sgd", "lbfgs"])
def test_linear_eval_separates_blobs_but_not_random_labels(optimizer: str) -> None:
    x_tr, y_tr = _blobs(400)
    x_te, y_te = _blobs(200, seed=1)
    kw = {"epochs": 5 if optimizer == "sgd" else 50, "optimizer": optimizer, "batch_size": 100}
    good = linear_eval(x_tr, y_tr, x_te, y_te, **kw)
    assert good["linear_top1"] > 0.95 and good["linear_top5"] == 1.0
    noise = torch.randn(600, 16, generator=torch.Generator().manual_seed(3))  # no signal
    bad = linear_eval(noise[:400], y_tr, noise[400:], y_te, **kw)
    assert bad["linear_top1"] < 0.25 and bad["linear_top5"] < 0.75
    assert linear_eval(x_tr, y_tr, x_te, y_te, **kw) == good  # seeded


def test_linear_eval_rejects_bad_arguments() -> None:
    x, y = _blobs(20)
    with pytest.raises(ValueError, match="optimizer must be one of sgd, lbfgs"):
        linear_eval(x, y, x, y, optimizer="adam")
    with pytest.raises(ValueError, match="feature widths differ"):
        linear_eval(x, y, x[:, :3], y)


def test_knn_on_meta_device_keeps_the_device() -> None:
    x, y = _blobs(50)
    assert knn_accuracy(x, y, x, y, k=5) == 1.0
    from contrastkit.evaluation import knn_predict

    pred = knn_predict(x.to("meta"), y.to("meta"), x.to("meta"), k=5, num_classes=10)
    assert pred.device.type == "meta" and pred.shape == (50,)


def test_label_fraction_probe_subsets_and_accuracy() -> None:
    x_tr, y_tr = _blobs(600)
    x_te, y_te = _blobs(200, seed=1)
    idx = per_class_subset(y_tr, 10, seed=4)
    assert torch.bincount(y_tr[idx]).tolist() == [10] * 10
    assert torch.equal(idx, per_class_subset(y_tr, 10, seed=4))
    assert not torch.equal(idx, per_class_subset(y_tr, 10, seed=5))
    out = label_fraction_probe(x_tr, y_tr, x_te, y_te, per_class=(1, 10, 500))
    assert set(out) == {"probe_1_per_class", "probe_10_per_class"}  # 500 > 60 per class
    assert out["probe_10_per_class"] > 0.9
