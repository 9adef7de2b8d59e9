"""Pair-similarity histograms, CACR's repulsion entropy, 2-D maps."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from contrastkit.images.analyses import (
    embed_2d,
    epoch_repulsion_entropy,
    pair_similarities,
    plot_2d_map,
    plot_similarity_histograms,
    repulsion_entropy,
    similarity_histograms,
)


def _identity_aug(x: torch.Tensor, g: torch.Generator) -> torch.Tensor:
    return x


def _noise_aug(x: torch.Tensor, g: torch.Generator) -> torch.Tensor:
    return x + 0.5 * torch.randn(x.shape, generator=g)


def test_pair_similarities_and_histograms(tmp_path: Path) -> None:
    x = torch.randn(30, 8, generator=torch.Generator().manual_seed(0))
    pos, neg = pair_similarities(lambda v: v, x, _identity_aug, torch.Generator())
    assert torch.allclose(pos, torch.ones(30, dtype=torch.float64)) and neg.shape == (870,)
    xn = torch.nn.functional.normalize(x.double(), dim=1)
    ref = [float(xn[i] @ xn[j]) for i in range(30) for j in range(30) if i != j]
    assert torch.allclose(neg, torch.tensor(ref, dtype=torch.float64))
    h = similarity_histograms(pos, neg, bins=10)
    assert sum(h["positive"]) == pytest.approx(1.0) and h["positive"][-1] == pytest.approx(1.0)
    assert h["overlap"][0] < 0.1
    noisy = pair_similarities(lambda v: v, x, _noise_aug, torch.Generator().manual_seed(1))
    assert float(noisy[0].mean()) < 0.99
    png = plot_similarity_histograms({"backbone": (pos, neg), "head": noisy}, tmp_path / "h.png")
    assert png.stat().st_size > 1000


def test_repulsion_entropy_matches_loop_and_its_maximum() -> None:
    z = torch.randn(6, 4, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    h, hmax = repulsion_entropy(z, t_neg=2.0)
    u = z / z.norm(dim=1, keepdim=True)
    total = 0.0
    for i in range(6):
        w = [math.exp(-2.0 * float((u[i] - u[j]).pow(2).sum())) for j in range(6) if j != i]
        p = [v / sum(w) for v in w]
        total += -sum(q * math.log(q) for q in p)
    assert h == pytest.approx(total / 6, rel=1e-10) and hmax == pytest.approx(math.log(5))
    assert repulsion_entropy(z, t_neg=0.0)[0] == pytest.approx(math.log(5))  # uniform
    assert h < hmax
    out = epoch_repulsion_entropy(lambda v: v, torch.randn(40, 4), _identity_aug,
                                  torch.Generator(), batch_size=8)  # fmt: skip
    assert out["repulsion_entropy"] < out["repulsion_entropy_max"] == pytest.approx(math.log(7))


def test_2d_map_keeps_clusters_apart(tmp_path: Path) -> None:
    g = torch.Generator().manual_seed(0)
    centres = torch.eye(3, 10) * 5
    y = torch.arange(60) % 3
    x = centres[y] + 0.1 * torch.randn(60, 10, generator=g)
    coords, method = embed_2d(x, "tsne")
    assert method == "tsne" and coords.shape == (60, 2)
    c = torch.as_tensor(coords)
    nearest = torch.cdist(c, c).fill_diagonal_(float("inf")).argmin(1)
    assert float((y[nearest] == y).double().mean()) > 0.95
    assert plot_2d_map(coords, y, tmp_path / "m.png").stat().st_size > 1000
    with pytest.raises(ValueError, match="method must be"):
        embed_2d(x, "pca")


def test_query_weights_match_softmax_of_costs(tmp_path: Path) -> None:
    from contrastkit.images.analyses import plot_query_weights, query_weights

    g = torch.Generator().manual_seed(0)
    a, p, n = (
        torch.randn(4, generator=g),
        torch.randn(3, 4, generator=g),
        torch.randn(6, 4, generator=g),
    )
    w_pos, w_neg = query_weights(a, p, n, t_pos=1.0, t_neg=2.0)
    u = a.double() / a.double().norm()

    def cost(v: torch.Tensor) -> float:
        return float((v.double() / v.double().norm() - u).pow(2).sum())

    ref_pos = torch.tensor([math.exp(cost(v)) for v in p], dtype=torch.float64)
    ref_neg = torch.tensor([math.exp(-2.0 * cost(v)) for v in n], dtype=torch.float64)
    assert torch.allclose(w_pos, ref_pos / ref_pos.sum()) and torch.allclose(
        w_neg, ref_neg / ref_neg.sum()
    )
    assert int(w_neg.argmax()) == int(torch.tensor([cost(v) for v in n]).argmin())  # nearest
    imgs = torch.rand(10, 3, 8, 8, generator=g)
    png = plot_query_weights(imgs[0], imgs[1:4], w_pos, imgs[4:], w_neg, tmp_path / "w.png", top=4)
    assert png.stat().st_size > 1000
