"""The papers' image analyses: pair-similarity histograms, CACR's conditional entropy of
the repulsion weights, and 2-D maps of test features.

* AMCL Fig. 1 / 6: histograms of the cosine similarity of positive pairs (two views of
  one image) and negative pairs (views of different images), for head and backbone
  features (:func:`pair_similarities`, :func:`similarity_histograms`,
  :func:`plot_similarity_histograms`).
* CACR Fig. 3 / 5 (Eq. 8): ``H(X⁻|X) = E_x E_{x⁻ ~ π⁻(·|x)}[-log π⁻(x⁻|x)]`` with the
  repulsion weights ``π⁻(x_j|x_i) = softmax_{j ≠ i}(-t⁻ ‖z_i - z_j‖²)`` of a mini-batch of
  ``M`` samples; its maximum is ``log(M - 1)`` (uniform weights). CACR computes it on
  every mini-batch (M = 512) and averages over the epoch (§5.1); ``t⁻ = 2`` is CACR's
  CIFAR setting (:func:`repulsion_entropy`, :func:`epoch_repulsion_entropy`).
* MACL Fig. 4 / LASCon Fig. 5: a 2-D map of test features coloured by class, with UMAP
  (umap-learn, if installed) or t-SNE from scikit-learn (:func:`embed_2d`,
  :func:`plot_2d_map`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
from torch import Tensor

from ..losses.views import normalize

Embed = Callable[[Tensor], Tensor]
Augment = Callable[[Tensor, torch.Generator], Tensor]


@torch.no_grad()
def pair_similarities(
    embed: Embed,
    x: Tensor,
    augment: Augment,
    generator: torch.Generator,
    max_negatives: int = 100_000,
) -> tuple[Tensor, Tensor]:
    """Cosine similarities of positive pairs ``[N]`` (two views of ``x[i]``) and of
    negative pairs (view 1 of ``x[i]`` with view 2 of ``x[j]``, ``i ≠ j``; at most
    ``max_negatives`` of them, a seeded sample when there are more)."""
    if x.shape[0] < 2:
        raise ValueError(f"x needs >= 2 samples for negative pairs, got {x.shape[0]}")
    a = normalize(embed(augment(x, generator)).double())
    b = normalize(embed(augment(x, generator)).double())
    pos = (a * b).sum(1)
    sim = a @ b.T
    off = ~torch.eye(x.shape[0], dtype=torch.bool, device=sim.device)
    neg = sim[off]
    if neg.numel() > max_negatives:
        pick = torch.randperm(neg.numel(), generator=generator)[:max_negatives]
        neg = neg[pick.to(neg.device)]
    return pos.cpu(), neg.cpu()


def similarity_histograms(pos: Tensor, neg: Tensor, bins: int = 50) -> dict[str, list[float]]:
    """Densities of ``pos`` and ``neg`` over ``bins`` equal bins of [-1, 1] (each sums to
    1), the bin edges, and the overlap ``Σ_b min(p_b, n_b)`` (0: separated, 1: equal)."""
    edges = torch.linspace(-1.0, 1.0, bins + 1, dtype=torch.float64)
    p = torch.histc(pos.double().clamp(-1, 1), bins, -1.0, 1.0)
    n = torch.histc(neg.double().clamp(-1, 1), bins, -1.0, 1.0)
    p, n = p / p.sum(), n / n.sum()
    return {
        "edges": edges.tolist(),
        "positive": p.tolist(),
        "negative": n.tolist(),
        "overlap": [float(torch.minimum(p, n).sum())],
    }


def plot_similarity_histograms(
    panels: dict[str, tuple[Tensor, Tensor]], path: str | Path, bins: int = 50
) -> Path:
    """One panel per entry ``name: (pos, neg)`` (e.g. ``"head"``, ``"backbone"``), saved
    as a PNG at ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(panels), figsize=(4 * len(panels), 3), squeeze=False)
    for ax, (name, (pos, neg)) in zip(axes[0], panels.items(), strict=True):
        h = similarity_histograms(pos, neg, bins)
        centres = (np.array(h["edges"][:-1]) + np.array(h["edges"][1:])) / 2
        width = 2.0 / bins
        ax.bar(centres, h["negative"], width, alpha=0.6, label="negative pairs")
        ax.bar(centres, h["positive"], width, alpha=0.6, label="positive pairs")
        ax.set_title(f"{name} (overlap {h['overlap'][0]:.2f})", fontsize=9)
        ax.set_xlabel("cosine similarity")
    axes[0][0].legend(fontsize=8)
    path = Path(path)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def repulsion_entropy(z: Tensor, t_neg: float = 2.0) -> tuple[float, float]:
    """``(H(X⁻|X), log(M - 1))`` of one mini-batch of embeddings ``z [M, d]``
    (normalised here), in nats, computed in float64."""
    if z.dim() != 2 or z.shape[0] < 3:
        raise ValueError(f"z must have shape [M, d] with M >= 3, got {tuple(z.shape)}")
    if t_neg < 0 or not math.isfinite(t_neg):
        raise ValueError(f"t_neg must be a finite number >= 0, got {t_neg}")
    u = normalize(z.detach().double())
    cost = (2.0 - 2.0 * (u @ u.T)).clamp(min=0.0)  # ‖z_i - z_j‖² of unit vectors
    logits = (-t_neg * cost).fill_diagonal_(float("-inf"))
    logp = torch.log_softmax(logits, dim=1)
    p = logp.exp()
    ent = -(p * logp.masked_fill(p == 0, 0.0)).sum(1).mean()
    return float(ent), math.log(z.shape[0] - 1)


@torch.no_grad()
def epoch_repulsion_entropy(
    embed: Embed,
    x: Tensor,
    augment: Augment,
    generator: torch.Generator,
    batch_size: int = 512,
    t_neg: float = 2.0,
) -> dict[str, float]:
    """CACR §5.1's per-epoch value: :func:`repulsion_entropy` of ``embed(augment(batch))``
    averaged over the shuffled mini-batches of ``x`` (last partial batch dropped)."""
    if x.shape[0] < max(3, batch_size):
        raise ValueError(f"x needs >= max(3, batch_size) = {max(3, batch_size)} samples")
    order = torch.randperm(x.shape[0], generator=generator)
    steps = x.shape[0] // batch_size
    values = [
        repulsion_entropy(embed(augment(x[idx], generator)), t_neg)[0]
        for idx in order[: steps * batch_size].view(steps, batch_size)
    ]
    return {
        "repulsion_entropy": sum(values) / steps,
        "repulsion_entropy_max": math.log(batch_size - 1),
    }


def embed_2d(features: Tensor, method: str = "auto", seed: int = 0) -> tuple[np.ndarray, str]:
    """2-D coordinates ``[N, 2]`` of ``features [N, d]`` and the method used: ``"umap"``
    (umap-learn), ``"tsne"`` (scikit-learn), or ``"auto"`` (UMAP if importable)."""
    if method not in ("auto", "umap", "tsne"):
        raise ValueError(f"method must be 'auto', 'umap' or 'tsne', got {method!r}")
    x = normalize(features.detach().double()).cpu().numpy()
    if method in ("auto", "umap"):
        try:
            import umap
        except ImportError:
            if method == "umap":
                raise ImportError("the 2-D map with method='umap' needs umap-learn") from None
        else:
            return umap.UMAP(n_components=2, random_state=seed).fit_transform(x), "umap"
    from sklearn.manifold import TSNE

    # t-SNE needs perplexity < N: the cap N - 1 binds only below 3 samples
    perplexity = min(30.0, max(2.0, (x.shape[0] - 1) / 3), x.shape[0] - 1.0)
    coords = TSNE(2, perplexity=perplexity, random_state=seed, init="pca").fit_transform(x)
    return coords, "tsne"


def plot_2d_map(coords: np.ndarray, labels: Tensor, path: str | Path, title: str = "") -> Path:
    """Scatter plot of ``coords [N, 2]`` coloured by ``labels [N]``, saved as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 5))
    ax.scatter(coords[:, 0], coords[:, 1], c=labels.cpu().numpy(), cmap="tab10", s=3)
    ax.set_title(title, fontsize=9)
    ax.set_xticks([])
    ax.set_yticks([])
    path = Path(path)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def query_weights(
    anchor: Tensor, positives: Tensor, negatives: Tensor, t_pos: float = 1.0, t_neg: float = 2.0
) -> tuple[Tensor, Tensor]:
    """CACR's conditional weights of one query (Eq. 5, Fig. 4): ``π⁺ = softmax(t⁺·c⁺)`` over
    ``positives [K, d]`` and ``π⁻ = softmax(-t⁻·c⁻)`` over ``negatives [J, d]``, with
    ``c = ‖u - v‖²`` of unit vectors and ``anchor [d]``; float64 ``[K]`` and ``[J]``."""
    a = normalize(anchor.detach().double().view(1, -1))
    cost_pos = (normalize(positives.detach().double()) - a).pow(2).sum(1)
    cost_neg = (normalize(negatives.detach().double()) - a).pow(2).sum(1)
    return torch.softmax(t_pos * cost_pos, 0), torch.softmax(-t_neg * cost_neg, 0)


def plot_query_weights(
    query: Tensor,
    positives: Tensor,
    pos_weights: Tensor,
    negatives: Tensor,
    neg_weights: Tensor,
    path: str | Path,
    top: int = 8,
) -> Path:
    """CACR Fig. 4: the query image, its positive views with π⁺, and the ``top`` negatives
    of largest π⁻ with their weights. Images are ``[C, H, W]`` / ``[n, C, H, W]`` in [0, 1]
    or uint8."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    def show(ax: object, img: Tensor, title: str) -> None:
        arr = img.float().div(255.0) if img.dtype == torch.uint8 else img.float()
        arr = arr.clamp(0, 1).permute(1, 2, 0).cpu().numpy()
        ax.imshow(arr[..., 0] if arr.shape[-1] == 1 else arr, cmap="gray")  # type: ignore[attr-defined]
        ax.set_title(title, fontsize=7)  # type: ignore[attr-defined]
        ax.axis("off")  # type: ignore[attr-defined]

    order = neg_weights.argsort(descending=True)[:top]
    cols = max(1 + positives.shape[0], len(order))
    fig, axes = plt.subplots(2, cols, figsize=(1.3 * cols, 3.0), squeeze=False)
    for ax in axes.flat:
        ax.axis("off")
    show(axes[0][0], query, "query")
    for k in range(positives.shape[0]):
        show(axes[0][1 + k], positives[k], f"π⁺ {float(pos_weights[k]):.2f}")
    for col, j in enumerate(order.tolist()):
        show(axes[1][col], negatives[j], f"π⁻ {float(neg_weights[j]):.3f}")
    path = Path(path)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
