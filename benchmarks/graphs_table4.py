"""Summarise the MACL Table 4 analogue runs (``final.json`` files) as a Markdown table.

Layout read: ``RUNS/<dataset>/<loss>/seed<k>/final.json`` (what
``/work/runs/graphs/run_table4.sh`` writes). Per dataset and loss: the mean ± std over
seeds of the per-seed SVM accuracy (each itself a mean over 10 folds), the mean std over
folds, the number of seeds, the mean training wall time, and the last epoch's training
loss change (|loss[-1] - loss[-2]|, a flatness reading of the learning curve).

Usage: ``python benchmarks/graphs_table4.py /work/runs/graphs/table4``; with ``--davis``,
``RUNS/<method>/seed<k>/final.json`` of the Davis runs (``/work/runs/graphs/run_davis.sh``).
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

LOSSES = ("dcl", "macl", "ntxent")
NAMES = {
    "dcl": "GraphCL loss (DCL, τ=0.2)",
    "macl": "MACL (τ0=0.2, α=0.5, A0=0)",
    "ntxent": "NT-Xent (τ=0.2)",
}
# MACL Table 4 (Huang et al., ICML 2023): mean ± std of SVM accuracy (%), 5 runs
PAPER = {
    "MUTAG": {"dcl": "86.80 ± 1.34", "macl": "89.04 ± 0.98"},
    "PROTEINS": {"dcl": "74.39 ± 0.45", "macl": "74.47 ± 0.85"},
    "NCI1": {"dcl": "77.87 ± 0.41", "macl": "78.41 ± 0.47"},
    "IMDB-BINARY": {"dcl": "71.14 ± 0.44", "macl": "71.42 ± 1.05"},
}


def rows(root: Path) -> list[str]:
    out = [
        "| dataset | loss | SVM acc. % (mean ± std over seeds) | mean fold std | seeds "
        "| epochs | train s | last-epoch Δloss | paper (Table 4) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for dataset in sorted(p.name for p in root.iterdir() if p.is_dir()):
        for loss in LOSSES:
            finals = sorted((root / dataset / loss).glob("seed*/final.json"))
            if not finals:
                continue
            runs = [json.loads(f.read_text()) for f in finals]
            acc = [100 * r["svm_accuracy"] for r in runs]
            fold_std = statistics.mean(100 * r["svm_accuracy_std"] for r in runs)
            spread = statistics.stdev(acc) if len(acc) > 1 else float("nan")
            deltas = []
            for f in finals:
                losses = [
                    json.loads(line)["loss"]
                    for line in (f.parent / "metrics.jsonl").read_text().splitlines()
                ]
                if len(losses) > 1:
                    deltas.append(abs(losses[-1] - losses[-2]))
            out.append(
                f"| {dataset} | {NAMES[loss]} | {statistics.mean(acc):.2f} ± {spread:.2f} "
                f"| {fold_std:.2f} | {len(acc)} | {runs[0]['epochs']} "
                f"| {statistics.mean(r['train_time_s'] for r in runs):.0f} "
                f"| {statistics.mean(deltas):.3f} | {PAPER.get(dataset, {}).get(loss, '—')} |"
            )
    return out


def paired_rows(root: Path) -> list[str]:
    """Per-seed paired differences (other loss − DCL) of SVM accuracy, with the 95 %
    t-interval over seeds and the verdict rule of ``docs/results_graphs.md``."""
    from scipy.stats import t

    out = [
        "| dataset | difference | mean (pp) | 95 % t-interval | seeds | verdict |",
        "|---|---|---|---|---|---|",
    ]
    for dataset in sorted(p.name for p in root.iterdir() if p.is_dir()):
        for other in ("macl", "ntxent"):
            diffs = []
            for f in sorted((root / dataset / other).glob("seed*/final.json")):
                base = root / dataset / "dcl" / f.parent.name / "final.json"
                if base.exists():
                    a, b = json.loads(f.read_text()), json.loads(base.read_text())
                    diffs.append(100 * (a["svm_accuracy"] - b["svm_accuracy"]))
            if len(diffs) < 2:
                continue
            mean = statistics.mean(diffs)
            half = t.ppf(0.975, len(diffs) - 1) * statistics.stdev(diffs) / len(diffs) ** 0.5
            low, high = mean - half, mean + half
            verdict = "better" if low > 0 else "worse" if high < 0 else "no difference shown"
            out.append(
                f"| {dataset} | {other} − dcl | {mean:+.2f} | [{low:+.2f}, {high:+.2f}] "
                f"| {len(diffs)} | {verdict} |"
            )
    return out


DAVIS_METRICS = ("dta_mse", "dta_mae", "dta_pearson", "dta_spearman", "dta_ci")
# LASCon Table 6, node-masking column (MSE, Corr); Table 2 (linear similarity, MSE, Corr)
DAVIS_PAPER = {
    "simclr": "0.305 / 0.789",
    "supcon": "0.290 / 0.801 (SupCon-o)",
    "lascon": "0.276 / 0.812 (LASCon-oL, Table 2: 0.276 / 0.811)",
}


def davis_rows(root: Path) -> list[str]:
    """``RUNS/<method>/seed<k>/final.json`` of the Davis runs: mean ± std over seeds."""
    out = [
        "| method | "
        + " | ".join(m.removeprefix("dta_") for m in DAVIS_METRICS)
        + " | seeds | epochs | train s | paper MSE / Corr |",
        "|---|" + "---|" * (len(DAVIS_METRICS) + 4),
    ]
    for method in ("simclr", "supcon", "lascon"):
        runs = [json.loads(f.read_text()) for f in sorted((root / method).glob("seed*/final.json"))]
        if not runs:
            continue
        cells = []
        for m in DAVIS_METRICS:
            values = [r[m] for r in runs]
            spread = f" ± {statistics.stdev(values):.3f}" if len(values) > 1 else ""
            cells.append(f"{statistics.mean(values):.3f}{spread}")
        out.append(
            f"| {method} | {' | '.join(cells)} | {len(runs)} | {runs[0]['epochs']} "
            f"| {statistics.mean(r['train_time_s'] for r in runs):.0f} | {DAVIS_PAPER[method]} |"
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", type=Path)
    parser.add_argument("--davis", action="store_true", help="RUNS holds the Davis runs")
    args = parser.parse_args()
    if args.davis:
        print("\n".join(davis_rows(args.runs)))
    else:
        print("\n".join(rows(args.runs)) + "\n\n" + "\n".join(paired_rows(args.runs)))


if __name__ == "__main__":
    main()
