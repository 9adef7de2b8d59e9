"""Per-step geometry of a SimCSE batch, the quantities of the gradient-paradigm paper's
empirical study (Li, Zhang & Nie, ACL 2024, §3.2, Figs. 5–9).

For the two dropout views ``h, hp [N, d]`` of a batch (L2-normalised here; anchor
``h_i``, positive ``hp_i``, negatives ``hp_j, j ≠ i``; ``θ`` the angle between them):

* ``hardest_share`` — mean over anchors of the largest negative weight
  ``W_ij = e^{s_ij/τ} / Σ_{k≠i} e^{s_ik/τ}`` (the hardest negative's share of the
  softmax over negatives; §3.1.2, Figs. 3 and 7), at the loss's τ (0.05 by default).
* ``lemma1_ratio`` — mean over anchors of the smallest ratio ``r`` that Lemma 1 (§3.1.3)
  requires for the step ``λ(r hp_i − hp_j)`` against the hardest negative ``j`` to bring
  ``h_i`` closer to ``hp_i``:
  ``r_min = 1/λ + sin θ_ij cos α / sin θ_ii − sqrt(1/λ² − sin² θ_ij sin² α / sin² θ_ii)``,
  ``α`` the angle between the planes ``O h_i hp_i`` and ``O h_i hp_j`` (the angle between
  the tangent components of ``hp_i`` and ``hp_j`` at ``h_i``). The bound is the smaller
  root of ``‖v − t_p‖ = ‖t_p‖`` for the step ``v = λ(r t_p − t_n)`` between the tangent
  components ``t_p, t_n`` of positive and negative. Fig. 8a plots several λ without
  singling one out; λ = 0.1 here unless given. Anchors where the square root is
  undefined (no ratio works at that λ) are left out; ``lemma1_defined`` is the fraction
  kept.
* ``pos_cos`` — mean ``s_ii`` (Fig. 8c).
* ``pos_angle_mean`` / ``pos_angle_std`` and ``neg_angle_mean`` / ``neg_angle_std`` —
  μ and σ (population) of ``θ_ii`` and of all ``θ_ij, j ≠ i``, in radians (Fig. 9).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import torch
import torch.nn.functional as tf
from torch import Tensor

from ..engine import host_floats


def lemma1_min_ratio(h: Tensor, pos: Tensor, neg: Tensor, lam: float = 0.1) -> Tensor:
    """Lemma 1's smallest ratio per row of unit ``h, pos, neg [N, d]``; NaN where undefined."""
    if not lam > 0:
        raise ValueError(f"lam must be > 0, got {lam}")
    cos_p = (h * pos).sum(1).clamp(-1.0, 1.0)
    cos_n = (h * neg).sum(1).clamp(-1.0, 1.0)
    tan_p = pos - cos_p[:, None] * h
    tan_n = neg - cos_n[:, None] * h
    norms = tan_p.norm(dim=1) * tan_n.norm(dim=1)
    cos_a = ((tan_p * tan_n).sum(1) / norms.clamp_min(1e-12)).clamp(-1.0, 1.0)
    sin_p = torch.sqrt(1 - cos_p**2)
    sin_n = torch.sqrt(1 - cos_n**2)
    sin_a2 = 1 - cos_a**2
    inside = 1 / lam**2 - sin_n**2 * sin_a2 / sin_p.clamp_min(1e-12) ** 2
    r = 1 / lam + sin_n * cos_a / sin_p.clamp_min(1e-12) - torch.sqrt(inside.clamp_min(0.0))
    return torch.where((inside >= 0) & (sin_p > 1e-12), r, torch.full_like(r, math.nan))


@torch.no_grad()
def batch_diagnostic_tensors(
    h: Tensor, hp: Tensor, temperature: float = 0.05, lam: float = 0.1
) -> dict[str, Tensor]:
    """The module's quantities for one batch of two views ``[N, d]`` (N ≥ 2), as 0-d
    float64 tensors on the views' device, read nothing on the host (a training step keeps
    them; :func:`~contrastkit.engine.host_floats` reads a run of them at once)."""
    if h.shape != hp.shape or h.ndim != 2 or h.shape[0] < 2:
        raise ValueError(
            f"need two views of shape [N >= 2, d], got {tuple(h.shape)}, {tuple(hp.shape)}"
        )
    a = tf.normalize(h.detach().double(), dim=1)
    b = tf.normalize(hp.detach().double(), dim=1)
    n = a.shape[0]
    s = a @ b.T
    own = torch.eye(n, dtype=torch.bool, device=s.device)
    neg = s.masked_fill(own, -math.inf)
    share = torch.softmax(neg / temperature, dim=1).amax(dim=1)
    hardest = neg.argmax(dim=1)
    r = lemma1_min_ratio(a, b, b[hardest], lam)
    defined = ~torch.isnan(r)
    pos_angle = torch.arccos(torch.diagonal(s).clamp(-1.0, 1.0))
    # the off-diagonal entries in row-major order, without a data-dependent shape
    off = s.flatten()[1:].view(n - 1, n + 1)[:, :-1].flatten()
    neg_angle = torch.arccos(off.clamp(-1.0, 1.0))
    return {
        "hardest_share": share.mean(),
        "lemma1_ratio": torch.where(defined, r, 0.0).sum() / defined.sum(),  # 0/0: NaN
        "lemma1_defined": defined.double().mean(),
        "pos_cos": torch.diagonal(s).mean(),
        "pos_angle_mean": pos_angle.mean(),
        "pos_angle_std": pos_angle.std(unbiased=False),
        "neg_angle_mean": neg_angle.mean(),
        "neg_angle_std": neg_angle.std(unbiased=False),
    }


def batch_diagnostics(
    h: Tensor, hp: Tensor, temperature: float = 0.05, lam: float = 0.1
) -> dict[str, float]:
    """:func:`batch_diagnostic_tensors` as floats (one copy to the host)."""
    values = batch_diagnostic_tensors(h, hp, temperature, lam)
    return dict(zip(values, host_floats(list(values.values())), strict=True))


def plot_diagnostics(history: str | Path, out: str | Path) -> Path:
    """Plot the per-step diagnostics of a SimCSE ``history.json`` into the image ``out``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    data = json.loads(Path(history).read_text(encoding="utf-8"))
    diag = data.get("diagnostics") or {}
    if not diag or not diag.get("pos_cos"):
        raise ValueError(f"{history}: no per-step diagnostics recorded")
    steps = range(1, len(diag["pos_cos"]) + 1)
    panels = [
        ("hardest negative's softmax share", ["hardest_share"]),
        ("Lemma 1 minimum ratio r (λ = 0.1)", ["lemma1_ratio"]),
        ("anchor-positive cosine", ["pos_cos"]),
        ("angles (rad): μ ± σ", ["pos_angle_mean", "neg_angle_mean"]),
    ]
    fig, axes = plt.subplots(1, 4, figsize=(16, 3.2))
    for ax, (title, keys) in zip(axes, panels, strict=True):
        for key in keys:
            y = torch.tensor(diag[key], dtype=torch.float64)
            ax.plot(steps, y, label=key)
            std_key = key.replace("_mean", "_std")
            if std_key != key and std_key in diag:
                sd = torch.tensor(diag[std_key], dtype=torch.float64)
                ax.fill_between(steps, y - sd, y + sd, alpha=0.25)
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("step")
        if len(keys) > 1:
            ax.legend(fontsize=7)
    fig.tight_layout()
    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def record(
    store: dict[str, list[Tensor | float]], h: Tensor, hp: Tensor, temperature: float
) -> None:
    """Append :func:`batch_diagnostic_tensors` of one step at ``temperature`` to ``store``
    (one list per quantity; device tensors until they are read, e.g. by
    :func:`~contrastkit.engine.host_floats`)."""
    for key, value in batch_diagnostic_tensors(h, hp, temperature).items():
        store.setdefault(key, []).append(value)
