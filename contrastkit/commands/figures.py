"""``contrastkit figures paradigm --out DIR``: the §3.1 simulations of Li, Zhang & Nie
(ACL 2024) as PNGs plus the arrays behind them (``paradigm.npz``).

Writes ``gd_heatmaps.png`` (mean GD of InfoNCE, ArcCon, MPT, MET over the μ_pos × μ_neg
grid; Figs. 2 and 10), ``hardest_share.png`` (the hardest negative's share of the softmax
weight against μ_neg for several τ at μ_pos = π/6; Fig. 3) and ``dynamic_ratio.png`` (mean
ratios of ArcCon and MET, shading the cells the optimisation does not visit; Fig. 4).
The paper's setting is ``--grid 100 --batches 1000``; the defaults are coarser so the
command finishes in about a minute on two CPU cores.
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from .._optional import require
from ..analysis import simulation as sim
from .common import UsageError

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.image import AxesImage

NAME = "figures"
HELP = "Reproduce the simulation figures of a paper (paradigm: Li et al. 2024, Figs. 2-4, 10)."
FIGURE_SETS = ("paradigm",)
TEMPERATURES = (0.01, 0.03, 0.05, 0.1, 0.3, 1.0)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("name", choices=FIGURE_SETS, help="which paper's figures")
    parser.add_argument("--out", type=Path, required=True, help="output directory")
    parser.add_argument(
        "--grid", type=int, default=40, help="points per μ axis (paper: 100; default 40)"
    )
    parser.add_argument(
        "--batches",
        type=int,
        default=250,
        help="sampled batches per grid cell (paper: 1000; default 250)",
    )
    parser.add_argument("--temperature", type=float, default=0.05, help="τ of InfoNCE/ArcCon")
    parser.add_argument("--margin", type=float, default=0.3, help="m of MPT/MET")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--overwrite", action="store_true", help="replace the files of an earlier --out"
    )


OUTPUTS = ("paradigm.npz", "gd_heatmaps.png", "hardest_share.png", "dynamic_ratio.png")
MAX_GRID = 1000  # 10x the paper's 100 points per axis; a grid cell holds --batches draws


def run(args: argparse.Namespace) -> int:
    if not 2 <= args.grid <= MAX_GRID:
        raise UsageError(f"--grid must be in [2, {MAX_GRID}], got {args.grid}")
    if args.batches < 1:
        raise UsageError(f"--batches must be >= 1, got {args.batches}")
    if not (args.temperature > 0 and math.isfinite(args.temperature)):
        raise UsageError(f"--temperature must be a finite number > 0, got {args.temperature}")
    if not math.isfinite(args.margin):
        raise UsageError(f"--margin must be a finite number, got {args.margin}")
    if args.seed < 0:
        raise UsageError(f"--seed must be >= 0, got {args.seed}")
    if args.out.exists() and not args.out.is_dir():
        raise UsageError(f"--out {str(args.out)!r} is a file, not a folder")
    present = [name for name in OUTPUTS if (args.out / name).exists()]
    if present and not args.overwrite:
        raise UsageError(
            f"--out {str(args.out)!r} already holds {', '.join(present)}; pass --overwrite "
            "to replace them, or choose another folder"
        )
    args.out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    mu_pos = sim.grid(sim.MU_POS_RANGE, args.grid)
    mu_neg = sim.grid(sim.MU_NEG_RANGE, args.grid)
    maps = sim.paradigm_maps(
        mu_pos, mu_neg, args.batches, args.temperature, args.margin, seed=args.seed
    )
    mu_neg_line = sim.grid(sim.MU_NEG_RANGE, 100)
    share = sim.hardest_share(mu_neg_line, TEMPERATURES, args.batches, seed=args.seed)
    arrays = {k: v.numpy() for k, v in maps.items()}
    np.savez_compressed(
        args.out / "paradigm.npz",
        mu_pos=mu_pos.numpy(),
        mu_neg=mu_neg.numpy(),
        mu_neg_share=mu_neg_line.numpy(),
        temperatures=np.array(TEMPERATURES),
        hardest_share=share.numpy(),
        **arrays,
    )
    _plot(args.out, mu_pos.numpy(), mu_neg.numpy(), arrays, mu_neg_line.numpy(), share.numpy())
    print(
        f"wrote {args.out}/paradigm.npz, gd_heatmaps.png, hardest_share.png, "
        f"dynamic_ratio.png (grid {args.grid}x{args.grid}, {args.batches} batches per cell, "
        f"{time.perf_counter() - start:.1f} s)"
    )
    return 0


def _heatmap(
    ax: Axes,
    mu_pos: np.ndarray,
    mu_neg: np.ndarray,
    values: np.ndarray,
    title: str,
    vmin: float,
    vmax: float,
) -> AxesImage:
    extent = (mu_neg[0] / math.pi, mu_neg[-1] / math.pi, mu_pos[0] / math.pi, mu_pos[-1] / math.pi)
    img = ax.imshow(
        values, origin="lower", aspect="auto", extent=extent, vmin=vmin, vmax=vmax, cmap="viridis"
    )
    ax.set_title(title, fontsize=9)
    ax.set_xlabel("μ_neg / π")
    ax.set_ylabel("μ_pos / π")
    return img


def _plot(
    out: Path,
    mu_pos: np.ndarray,
    mu_neg: np.ndarray,
    maps: dict[str, np.ndarray],
    mu_neg_line: np.ndarray,
    share: np.ndarray,
) -> None:
    require("matplotlib", "train", "contrastkit figures")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 4, figsize=(13, 3.0), constrained_layout=True)
    for ax, key, title in zip(
        axes,
        ("gd_infonce", "gd_arccon", "gd_mpt", "gd_met"),
        ("InfoNCE", "ArcCon", "MPT", "MET"),
        strict=True,
    ):
        img = _heatmap(ax, mu_pos, mu_neg, maps[key], f"mean GD: {title}", 0.0, 1.0)
    fig.colorbar(img, ax=axes, shrink=0.9)
    fig.savefig(out / "gd_heatmaps.png", dpi=80)
    plt.close(fig)

    fig, axes = plt.subplots(1, 2, figsize=(9, 3.2), constrained_layout=True)
    for t, row in zip(TEMPERATURES, share, strict=True):
        axes[0].plot(mu_neg_line / math.pi, row, label=f"τ = {t:g}")
        axes[1].plot(mu_neg_line / math.pi, row * sim.N_NEG, label=f"τ = {t:g}")
    axes[0].set_ylabel("hardest negative's share of W")
    axes[0].set_ylim(0, 1.02)
    axes[1].set_ylabel(f"share × {sim.N_NEG} (1 = uniform weight)")
    axes[1].set_yscale("log")
    for ax in axes:
        ax.set_xlabel("μ_neg / π  (μ_pos = π/6)")
    axes[0].legend(fontsize=7)
    fig.savefig(out / "hardest_share.png", dpi=80)
    plt.close(fig)

    visited = mu_neg[None, :] > mu_pos[:, None]
    fig, axes = plt.subplots(1, 2, figsize=(8.5, 3.2), constrained_layout=True)
    for ax, loss in zip(axes, ("arccon", "met"), strict=True):
        ratio = maps[f"ratio_{loss}"]
        mask = visited & (maps[f"gd_{loss}"] > 0.01)
        img = _heatmap(
            ax, mu_pos, mu_neg, ratio, f"mean ratio: {loss} (grey: not visited)", 0.0, 3.0
        )
        ax.imshow(
            np.where(mask, np.nan, 1.0),
            origin="lower",
            aspect="auto",
            extent=img.get_extent(),
            cmap="Greys",
            vmin=0.0,
            vmax=2.0,
            alpha=0.6,
        )
        fig.colorbar(img, ax=ax)
    fig.savefig(out / "dynamic_ratio.png", dpi=80)
    plt.close(fig)
