"""LASCon §4.2 label-aware alignment / uniformity (loop references) and the circular plot."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from contrastkit.evaluation.label_geometry import (
    augmentation_indicator,
    circular_coordinates,
    circular_plot,
    label_aware_alignment,
    label_aware_uniformity,
    two_view_label_geometry,
)
from contrastkit.losses import functional as F


def _sphere(n: int, d: int, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.nn.functional.normalize(torch.randn(n, d, generator=g, dtype=torch.float64))


def _loop_alignment(z: torch.Tensor, s: torch.Tensor) -> float:
    """(1/|valid I|) Σ_i Σ_{j≠i} s_ij / Σ_{k≠i} s_ik · ‖z_i - z_j‖², plain loops."""
    n, rows = z.shape[0], []
    for i in range(n):
        total = sum(float(s[i, k]) for k in range(n) if k != i)
        if total == 0.0:
            continue
        acc = 0.0
        for j in range(n):
            if j != i:
                acc += float(s[i, j]) / total * float(((z[i] - z[j]) ** 2).sum())
        rows.append(acc)
    return sum(rows) / len(rows)


def _loop_uniformity(z: torch.Tensor) -> float:
    n, acc = z.shape[0], 0.0
    for i in range(n):
        for j in range(n):
            if j != i:
                acc += math.exp(-2.0 * float(((z[i] - z[j]) ** 2).sum()))
    return acc / (2 * n * (n - 1))


def test_indicator_of_augmentation_gives_plain_alignment() -> None:
    z1, z2 = _sphere(12, 5, 0), _sphere(12, 5, 1)
    got = label_aware_alignment(torch.cat([z1, z2]), augmentation_indicator(12))
    assert float(got) == pytest.approx(float(F.alignment(z1, z2)), rel=1e-12)


def test_alignment_matches_loop_reference_for_a_dense_similarity() -> None:
    z = _sphere(9, 4, 2)
    s = torch.rand(9, 9, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    s[2] = 0.0  # an anchor with no similar sample is left out
    s[2, 2] = 5.0  # the diagonal is ignored
    assert float(label_aware_alignment(z, s)) == pytest.approx(_loop_alignment(z, s), rel=1e-12)


def test_uniformity_matches_loop_reference() -> None:
    z = _sphere(10, 3, 4)
    assert float(label_aware_uniformity(z)) == pytest.approx(_loop_uniformity(z), rel=1e-12)
    # all points equal: every kernel value is 1, the formula's maximum 1/2
    same = z[:1].repeat(6, 1)
    assert float(label_aware_uniformity(same)) == pytest.approx(0.5, rel=1e-12)


def test_two_view_geometry_uses_eq5_similarity_in_the_2n_layout() -> None:
    z1, z2 = _sphere(7, 4, 5), _sphere(7, 4, 6)
    y = torch.tensor([1.0, 3.0, -2.0, 0.5, 4.0, 4.0, -1.0], dtype=torch.float64)
    m = float(y.abs().max())
    s = torch.empty(14, 14, dtype=torch.float64)
    for a in range(14):
        for b in range(14):  # Eq. (5), linear, c = 1, labels duplicated for the 2 views
            s[a, b] = 1.0 - abs(float(y[a % 7]) - float(y[b % 7])) / m / 2.0
    z = torch.cat([z1, z2])
    got = two_view_label_geometry(z1, z2, y, "linear", 1.0)
    assert got["label_alignment"] == pytest.approx(_loop_alignment(z, s), rel=1e-10)
    assert got["label_uniformity"] == pytest.approx(_loop_uniformity(z), rel=1e-12)


def test_alignment_rewards_label_ordered_embeddings() -> None:
    # points on a circle at an angle proportional to the label vs. the same points shuffled
    y = torch.linspace(0.0, 1.0, 40, dtype=torch.float64)
    ordered = torch.stack([torch.cos(2.5 * y), torch.sin(2.5 * y)], 1)
    shuffled = ordered[torch.randperm(40, generator=torch.Generator().manual_seed(0))]
    s = 1.0 - (y[:, None] - y[None]).abs() * 4.0  # sharp similarity, clipped below
    s = s.clamp(min=0.0)
    assert float(label_aware_alignment(ordered, s)) < 0.5 * float(
        label_aware_alignment(shuffled, s)
    )


@pytest.mark.parametrize(
    ("z", "s", "match"),
    [
        (torch.zeros(1, 3), None, r"z must be a tensor of shape \[N, d\] with N >= 2"),
        (torch.zeros(4, 3), torch.zeros(3, 3), r"similarity must have shape \[N, N\]"),
        (torch.zeros(3, 3), -torch.ones(3, 3), "finite and >= 0"),
        (torch.zeros(3, 3), torch.eye(3), "no anchor has a similar sample"),
    ],
)
def test_input_errors(z: torch.Tensor, s: torch.Tensor | None, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        label_aware_alignment(z, s) if s is not None else label_aware_uniformity(z)


def test_circular_coordinates_lie_on_the_circle_and_follow_the_pca_plane() -> None:
    # embeddings in a 2-D plane of R^6: the circle angle must reproduce the in-plane angle
    angles = torch.linspace(0.0, 1.5 * math.pi, 30, dtype=torch.float64)
    plane = torch.linalg.qr(
        torch.randn(6, 2, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    )[0]
    z = 3.0 * torch.stack([angles.cos(), angles.sin()], 1) @ plane.T
    pts, density = circular_coordinates(z)
    assert pts.shape == (30, 2) and density.shape == (30,)
    assert abs(torch.tensor(pts).norm(dim=1) - 1.0).max() < 1e-9
    assert (density > 0).all()
    # pairwise angular gaps are preserved up to rotation / reflection (|cos| of the gap)
    p = torch.tensor(pts)
    gap = (p @ p.T).clamp(-1.0, 1.0)
    centred = z - z.mean(0)
    c = torch.nn.functional.normalize(centred, dim=1)
    assert torch.allclose(gap, c @ c.T, atol=1e-9)


def test_circular_plot_writes_a_png(tmp_path: Path) -> None:
    z, y = _sphere(25, 8, 7), torch.rand(25, dtype=torch.float64)
    path = circular_plot(z, y, tmp_path / "sub" / "circ.png", title="tiny")
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 2000
    with pytest.raises(ValueError, match=r"labels must have shape \[N\]"):
        circular_plot(z, y[:3], tmp_path / "bad.png")
