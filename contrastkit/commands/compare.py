"""``contrastkit compare``: train several losses (or configured variants) over seeds and
tabulate mean ± std of the final metrics, with plots and ``summary.json``.

A ``--config`` YAML may hold, besides any :class:`~contrastkit.training.TrainConfig`
field (the shared base), ``seeds``, ``out``, ``losses`` (names) or ``runs``: a list of
mappings with a ``label`` and the config fields that differ for that run, e.g.
``{label: "CACR (K=4)", framework: multiview, loss: cacr, num_views: 5}``. ``--losses``
replaces the runs by one run per loss name.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path
from typing import Any

from .._optional import require
from ..rundir import atomic_write_text, prepare_run_dir, read_jsonl, removed_if_unused
from ..training import (
    FINAL,
    LabelAwareTrainer,
    TrainConfig,
    flatten,
    load_yaml,
    merge_config,
    read_final,
    resumes,
    run_state,
    trainer_class,
)
from ..training.checkpoint import METRICS
from ..training.metrics import compare_columns, header
from .train import check_config
from .train_flags import add_train_arguments, overrides_from_args

NAME = "compare"
HELP = "train several losses over several seeds and compare their metrics"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    groups = add_train_arguments(parser)
    groups["loss"].add_argument("--losses", help="comma-separated loss names, one run each")
    groups["optimisation"].add_argument("--seeds", help="comma-separated seeds (default 0)")
    groups["output"].add_argument(
        "--out", help="output directory (one sub-directory per run and seed)"
    )
    groups["output"].add_argument(
        "--summarize-only",
        action="store_true",
        help="train nothing: tabulate the runs and seeds that have finished (final.json)",
    )


def _int_list(text: str, what: str) -> list[int]:
    try:
        return [int(s) for s in text.split(",") if s.strip()]
    except ValueError:
        raise ValueError(f"{what} must be comma-separated integers, got {text!r}") from None


def _seeds(value: object) -> list[int]:
    """A config's ``seeds``: a list of non-negative integers."""
    if not isinstance(value, list) or not all(
        isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in value
    ):
        raise ValueError(f"seeds must be a list of integers >= 0, got {value!r}")
    return value


def plan(args: argparse.Namespace) -> tuple[list[tuple[str, TrainConfig]], list[int], Path]:
    """The ``(label, config)`` runs, the seeds and the output directory; validates all
    configs before any training starts."""
    base = flatten(load_yaml(args.config)) if args.config else {}
    seeds = _int_list(args.seeds, "--seeds") if args.seeds else _seeds(base.pop("seeds", [0]))
    base.pop("seeds", None)
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"seeds must be distinct, got {seeds}")
    out = args.out if args.out is not None else base.pop("out", "runs/compare")
    if not str(out).strip():
        raise ValueError("--out must name a directory, got an empty string")
    out = Path(out)
    base.pop("out", None)
    runs = base.pop("runs", None)
    names = base.pop("losses", None)
    if args.losses:
        names, runs = [n.strip() for n in args.losses.split(",") if n.strip()], None
    elif runs is not None and names is not None:
        raise ValueError("a compare config gives 'losses' or 'runs', not both")
    if names is not None and not (
        isinstance(names, list) and all(isinstance(n, str) for n in names)
    ):
        raise ValueError(f"losses must be a list of loss names, got {names!r}")
    if runs is not None and not (
        isinstance(runs, list) and runs and all(isinstance(r, dict) for r in runs)
    ):
        raise ValueError(f"runs must be a non-empty list of mappings, one per run, got {runs!r}")
    if runs is None:
        if not names:
            raise ValueError(
                "nothing to compare: give --losses or a config with 'losses' or 'runs'"
            )
        runs = [{"label": n, "loss": n} for n in names]
    if not seeds:
        raise ValueError("--seeds is empty")
    flags = overrides_from_args(args)
    planned = []
    for spec in runs:
        spec = flatten(dict(spec))
        label = str(spec.pop("label", spec.get("loss", "run")))
        values = merge_config(merge_config(base, spec), flags)
        config = TrainConfig.from_dict(values)
        check_config(config, spec)
        planned.append((label, config))
    # keys shared by all runs must be used by at least one run's framework
    check_config(planned[0][1], {*base, *flags}, {c.framework for _, c in planned})
    labels = [label for label, _ in planned]
    if len(set(labels)) != len(labels):
        raise ValueError(f"run labels must be unique, got {labels}")
    return planned, seeds, out


def _slug(label: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in label).strip("_") or "run"


def _mean_std(values: list[float]) -> tuple[float, float]:
    mean = sum(values) / len(values)
    if len(values) < 2:
        return mean, 0.0
    return mean, math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1))


def run_one(
    config: TrainConfig, directory: Path, resume: bool, progress: bool, label_aware: bool = False
) -> dict[str, Any]:
    """Train (or, with ``resume``, reuse / continue) one run; returns its final metrics.
    ``label_aware`` evaluates it like the label-aware runs it is compared with.

    With ``resume``, the run follows the rule a study's runs follow
    (:func:`~contrastkit.training.run_state`): a finished run of this config is reused, a
    partial one (or a finished one of fewer epochs, when its schedule allows) continues,
    and a run of another config raises ``ValueError``."""
    state = run_state(directory, config) if resume else "new"
    if state == "finished":
        return read_final(directory / FINAL)
    trainer = trainer_class(config, label_aware)(config, directory, progress=progress)
    return trainer.fit(resume=resume and resumes(directory, state))


def markdown_table(summary: dict[str, dict[str, Any]], seeds: list[int]) -> str:
    """The mean ± std table (std over seeds, n - 1 denominator)."""
    cols = list(dict.fromkeys(c for entry in summary.values() for c in entry["metrics"]))
    cols.append(cols.pop(cols.index("train_time_s")))
    configs = [entry["config"] for entry in summary.values()]
    shared = {k: v for k, v in configs[0].items() if all(c.get(k) == v for c in configs)}
    head = ["run", *(header(c, shared) for c in cols), "seeds"]
    lines = [f"| {' | '.join(head)} |", "|" + "---|" * len(head)]
    for label, entry in summary.items():
        cells = []
        for col in cols:
            if col not in entry["metrics"]:
                cells.append("-")
                continue
            mean, std = entry["metrics"][col]["mean"], entry["metrics"][col]["std"]
            cells.append(
                f"{mean:.1f} ± {std:.1f}" if col == "train_time_s" else f"{mean:.4f} ± {std:.4f}"
            )
        n = len(entry["metrics"]["train_time_s"]["values"])
        lines.append(f"| {label} | {' | '.join(cells)} | {n} |")
    lines.append(
        f"\nseeds {', '.join(map(str, seeds))}; mean ± std (n - 1) over the finished seeds."
    )
    return "\n".join(lines)


def plot(out: Path, runs: dict[str, list[Path]]) -> list[str]:
    """``accuracy.png`` (mean kNN accuracy per epoch) and, when any run logged one,
    ``temperature.png`` (per-step temperatures of the first seed: MACL's τ_a, AMCL's
    head-averaged τ⁺ and τ⁻)."""
    require("matplotlib", "train", "the comparison plots")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = []
    fig, ax = plt.subplots(figsize=(7, 4.5))
    temp_fig, temp_ax = plt.subplots(figsize=(7, 4.5))
    has_temperature = False
    for label, dirs in runs.items():
        histories = [read_jsonl(d / METRICS)[0] for d in dirs]
        by_epoch: dict[int, list[float]] = {}
        for history in histories:
            for rec in history:
                if "knn_accuracy" in rec:
                    by_epoch.setdefault(rec["epoch"], []).append(rec["knn_accuracy"])
        epochs = sorted(by_epoch)
        ax.plot(
            epochs, [sum(by_epoch[e]) / len(by_epoch[e]) for e in epochs], marker="o", label=label
        )
        for key, name in (
            ("temperature_steps", "τ_a"),
            ("tau_pos_mean_steps", "mean τ⁺"),
            ("tau_neg_mean_steps", "mean τ⁻"),
        ):
            trace = [t for rec in histories[0] for t in rec.get(key, [])]
            if trace:
                has_temperature = True
                temp_ax.plot(trace, label=f"{label} {name}", linewidth=0.8)
    ax.set(
        xlabel="epoch",
        ylabel="kNN accuracy (k=200)",
        title="kNN accuracy per epoch (mean over seeds)",
    )
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "accuracy.png", dpi=120)
    written.append(str(out / "accuracy.png"))
    if has_temperature:
        temp_ax.set(
            xlabel="training step", ylabel="temperature", title="per-step temperature (first seed)"
        )
        temp_ax.legend(fontsize=8)
        temp_fig.tight_layout()
        temp_fig.savefig(out / "temperature.png", dpi=120)
        written.append(str(out / "temperature.png"))
    plt.close(fig)
    plt.close(temp_fig)
    return written


def run(args: argparse.Namespace) -> int:
    planned, seeds, out = plan(args)
    with removed_if_unused(None if args.summarize_only else out):  # if no run could start
        return _compare(args, planned, seeds, out)


def _compare(
    args: argparse.Namespace, planned: list[tuple[str, TrainConfig]], seeds: list[int], out: Path
) -> int:
    if args.summarize_only:
        if not out.is_dir():
            raise ValueError(f"--summarize-only: {str(out)!r} is not a directory")
    else:
        out = prepare_run_dir(out, resume=args.resume, overwrite=args.overwrite)
    start = time.perf_counter()
    summary: dict[str, dict[str, Any]] = {}
    dirs: dict[str, list[Path]] = {}
    # one label-aware run (SupCon, LASCon) gives every run the downstream head and geometry
    label_aware = any(issubclass(trainer_class(config), LabelAwareTrainer) for _, config in planned)
    for label, config in planned:
        finals, dirs[label] = [], []
        for seed in seeds:
            directory = out / _slug(label) / f"seed{seed}"
            if args.summarize_only:
                if (directory / FINAL).exists():
                    finals.append(read_final(directory / FINAL))
                    dirs[label].append(directory)
                continue
            seeded = TrainConfig.from_dict({**config.to_dict(), "seed": seed})
            print(f"[compare] {label} seed {seed} -> {directory}", flush=True)
            finals.append(
                run_one(seeded, directory, args.resume, not args.no_progress, label_aware)
            )
            dirs[label].append(directory)
        if not finals:
            del dirs[label]
            continue
        small_k = f"knn_accuracy_k{config.knn_small_k}"
        metrics = {}
        columns = compare_columns(finals)  # what every seed's run holds, declared with a header
        columns.append(columns.pop(columns.index("train_time_s")))
        for col in columns:
            values = [float(f[col]) for f in finals]
            mean, std = _mean_std(values)
            metrics[col] = {"mean": mean, "std": std, "values": values}
        summary[label] = {"config": config.to_dict(), "metrics": metrics, "small_k_column": small_k}
    if not summary:
        raise ValueError(f"no finished runs under {out}")
    table = markdown_table(summary, seeds)
    plots = plot(out, dirs)
    wall = time.perf_counter() - start
    if not args.summarize_only:  # keep the training run's summary (and its wall time)
        summary_json = {"seeds": seeds, "wall_time_s": wall, "runs": summary, "plots": plots}
        atomic_write_text(out / "summary.json", json.dumps(summary_json, indent=2) + "\n")
        atomic_write_text(out / "table.md", table + "\n")
    print(table)
    print(f"\nwall time {wall:.0f} s; plots: {', '.join(plots)}; summary: {out / 'summary.json'}")
    return 0
