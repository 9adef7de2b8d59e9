"""Label-aware alignment and uniformity (LASCon §3.3 and §4.2) and the circular plot.

Mini-batch formulas of LASCon §4.2, for L2-normalised embeddings ``z [N, d]`` and a
label similarity ``s [N, N]`` (Eq. 5/6, or an indicator), ``A(i)`` = every j ≠ i and
``s̃_ij = s_ij / Σ_{k∈A(i)} s_ik``:

* alignment  ``(1/N) Σ_i Σ_{j∈A(i)} s̃_ij ‖z_i - z_j‖²`` (mini-batch form of Eq. 3, sign
  flipped to be positive as §4.2 says; lower = similar labels closer);
* uniformity ``1/(2N(N-1)) Σ_i Σ_{j∈A(i)} exp(-2‖z_i - z_j‖²)`` (the §4.2 formula as
  printed: no logarithm, unlike Eq. 4 and the plain Wang & Isola uniformity; lower = more
  uniform). It uses no label, as §3.3.2 notes.

Deviation, documented: the paper's text says both are averaged over ``|I|`` anchors; an
anchor whose similarities to all others are 0 (e.g. an indicator with no other sample of
its class) has no defined ``s̃``, so such anchors are left out of the alignment mean.
Table 3's uniformity values (up to 10.2) cannot come from the §4.2 formula, which is at
most 1/2; we implement the equation.

The circular visualisation (§4.2 "Qualitative Analysis", Fig. 2): embeddings reduced to
2-D by PCA, each point put on the unit circle (its PCA direction: our reading of
"circular"), hue = label, saturation = Gaussian-KDE density in R² of those points.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from torch import Tensor

from .._optional import require
from ..losses.functional import label_similarity
from ..losses.functional.supervised import LabelSimilarity


def _check(z: Tensor, s: Tensor | None = None) -> Tensor:
    if not isinstance(z, Tensor) or z.dim() != 2 or z.shape[0] < 2:
        got = tuple(z.shape) if isinstance(z, Tensor) else type(z).__name__
        raise ValueError(f"z must be a tensor of shape [N, d] with N >= 2, got {got}")
    if s is not None:
        n = z.shape[0]
        if not isinstance(s, Tensor) or s.shape != (n, n):
            got = tuple(s.shape) if isinstance(s, Tensor) else type(s).__name__
            raise ValueError(f"similarity must have shape [N, N] = [{n}, {n}], got {got}")
        if bool((s < 0).any()) or not bool(torch.isfinite(s).all()):
            raise ValueError("similarity must be finite and >= 0")
    return z.double()


def _sq_dists(z: Tensor) -> Tensor:
    return torch.cdist(z, z).pow(2)


def label_aware_alignment(z: Tensor, similarity: Tensor) -> Tensor:
    """§4.2 alignment of ``z [N, d]`` under label similarity ``similarity [N, N]`` (≥ 0;
    the diagonal is ignored). Returns a float64 scalar."""
    zd = _check(z, similarity)
    n = zd.shape[0]
    off = ~torch.eye(n, dtype=torch.bool, device=z.device)
    s = similarity.double() * off
    total = s.sum(dim=1)
    valid = total > 0
    if not bool(valid.any()):
        raise ValueError("similarity is zero off the diagonal: no anchor has a similar sample")
    s_tilde = s[valid] / total[valid, None]
    return (s_tilde * _sq_dists(zd)[valid]).sum(dim=1).mean()


def label_aware_uniformity(z: Tensor) -> Tensor:
    """§4.2 uniformity ``1/(2N(N-1)) Σ_{i≠j} exp(-2‖z_i - z_j‖²)`` of ``z [N, d]``."""
    zd = _check(z)
    n = zd.shape[0]
    kernel = torch.exp(-2.0 * _sq_dists(zd))
    off_sum = kernel.sum() - kernel.diagonal().sum()
    return off_sum / (2.0 * n * (n - 1))


def augmentation_indicator(n: int) -> Tensor:
    """``[2N, 2N]`` similarity of the SimCLR layout ``cat(view1, view2)``: 1 between the
    two views of a sample, 0 elsewhere (the NT-Xent case of LASCon §3.4.3)."""
    eye = torch.eye(n, dtype=torch.float64)
    zeros = torch.zeros(n, n, dtype=torch.float64)
    return torch.cat([torch.cat([zeros, eye], 1), torch.cat([eye, zeros], 1)], 0)


def two_view_label_geometry(
    z1: Tensor,
    z2: Tensor,
    labels: Tensor,
    similarity: LabelSimilarity = "linear",
    c: float = 1.0,
) -> dict[str, float]:
    """Label-aware alignment and uniformity of two normalised views ``z1, z2 [N, d]`` of
    the same samples with ``labels [N]`` (or ``[N, D]``), in the 2N layout: the two views
    of a sample have label distance 0, hence similarity 1 (as in training)."""
    if z1.shape != z2.shape:
        raise ValueError(f"z1 and z2 must have the same shape, got {z1.shape} and {z2.shape}")
    z = torch.cat([z1, z2]).double()
    s = label_similarity(labels.double() if labels.is_floating_point() else labels, similarity, c)
    s2 = s.double().repeat(2, 2)
    return {
        "label_alignment": float(label_aware_alignment(z, s2)),
        "label_uniformity": float(label_aware_uniformity(z)),
    }


def circular_coordinates(z: Tensor) -> tuple[np.ndarray, np.ndarray]:
    """``(points [N, 2] on the unit circle, KDE density [N])`` of embeddings ``z [N, d]``:
    PCA to 2-D (centred SVD), each point scaled to unit length, density from
    ``scipy.stats.gaussian_kde`` (Scott's bandwidth) at the points."""
    require("scipy", "train", "circular_coordinates")
    from scipy.stats import gaussian_kde

    zd = _check(z)
    centred = zd - zd.mean(0)
    _, _, vh = torch.linalg.svd(centred, full_matrices=False)
    comps = vh[:2] if vh.shape[0] >= 2 else torch.cat([vh, torch.zeros_like(vh)])
    pc = centred @ comps.T
    pts = (pc / pc.norm(dim=1, keepdim=True).clamp(min=1e-12)).numpy()
    try:
        density = gaussian_kde(pts.T)(pts.T)
    except np.linalg.LinAlgError:  # all points on one line: no 2-D density to estimate
        density = np.ones(pts.shape[0])
    return pts, density


def circular_plot(z: Tensor, labels: Tensor, path: str | Path, title: str | None = None) -> Path:
    """Save the §4.2 circular plot of ``z [N, d]`` coloured by ``labels [N]`` as a PNG.

    Hue runs from red (smallest label) to blue (largest); saturation is the KDE density
    relative to its maximum, so dense regions are vivid and sparse ones pale.
    """
    require("matplotlib", "train", "circular_plot")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import hsv_to_rgb

    if not isinstance(labels, Tensor) or labels.shape != (z.shape[0],):
        raise ValueError(f"labels must have shape [N] = [{z.shape[0]}]")
    pts, density = circular_coordinates(z)
    y = labels.double().numpy()
    span = max(float(y.max() - y.min()), 1e-12)
    hue = 2.0 / 3.0 * (y - y.min()) / span  # 0 = red ... 2/3 = blue
    sat = density / max(float(density.max()), 1e-12)
    rgb = hsv_to_rgb(np.stack([hue, sat, np.ones_like(hue)], axis=1))
    fig, ax = plt.subplots(figsize=(4.5, 4.5))
    order = np.argsort(sat)  # dense points drawn last
    ax.add_patch(plt.Circle((0.0, 0.0), 1.0, fill=False, color="0.85", linewidth=0.8))
    ax.scatter(pts[order, 0], pts[order, 1], c=rgb[order], s=14, edgecolors="none")
    ax.set_aspect("equal")
    ax.set_xlim(-1.15, 1.15)
    ax.set_ylim(-1.15, 1.15)
    ax.axis("off")
    if title:
        ax.set_title(title, fontsize=9)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
