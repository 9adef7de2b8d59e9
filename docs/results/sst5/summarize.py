"""Summarise the SST-5 runs of ``run_sst5.sh``: per-method mean ± sd over seeds and the
paired comparisons fixed in docs/results_sentences.md before the runs finished.

    python docs/results/sst5/summarize.py /work/runs/sentences/sst5

Writes ``docs/results/sst5/sst5.json`` (every run's numbers and the comparisons) and
``docs/results/sst5/sst5.md`` (the tables). Rule: for a LASCon variant L and a baseline
B, ``d_s = MAE_L(s) - MAE_B(s)`` per seed s; 95 % paired t-interval
``mean(d) ± t_{0.975, n-1} sd(d) / sqrt(n)``; "LASCon better" if it lies below 0, "reversed"
if above 0, else "within noise".
"""

from __future__ import annotations

import json
import math
import statistics
import sys
from pathlib import Path

from scipy import stats

METHODS = (
    "zero-shot",
    "simclr",
    "supcon",
    "lascon-out-linear",
    "lascon-in-linear",
    "lascon-out-tanh",
    "lascon-in-tanh",
    "lascon-out-linear-c2",
)
LABELS = {
    "zero-shot": "MiniLM, no fine-tuning",
    "simclr": "SimCLR (NT-Xent)",
    "supcon": "SupCon (label ≥ 3)",
    "lascon-out-linear": "LASCon-out, linear",
    "lascon-in-linear": "LASCon-in, linear",
    "lascon-out-tanh": "LASCon-out, tanh c=2",
    "lascon-in-tanh": "LASCon-in, tanh c=2",
    "lascon-out-linear-c2": "LASCon-out, linear c=2 (post hoc)",
}
METRICS = ("mae", "pearson", "accuracy")
HERE = Path(__file__).parent


def load(runs: Path) -> dict[str, dict[int, dict]]:
    out: dict[str, dict[int, dict]] = {}
    for path in sorted(runs.glob("*-s*/sst5.json")):
        name, _, seed = path.parent.name.rpartition("-s")
        if name in METHODS:
            out.setdefault(name, {})[int(seed)] = json.loads(path.read_text())
    return out


def paired(a: dict[int, dict], b: dict[int, dict], metric: str = "mae") -> dict | None:
    seeds = sorted(set(a) & set(b))
    if len(seeds) < 2:
        return None
    d = [a[s]["test"][metric] - b[s]["test"][metric] for s in seeds]
    mean, sd = statistics.mean(d), statistics.stdev(d)
    half = stats.t.ppf(0.975, len(d) - 1) * sd / math.sqrt(len(d))
    lo, hi = mean - half, mean + half
    verdict = "LASCon better" if hi < 0 else "reversed" if lo > 0 else "within noise"
    if metric != "mae":  # higher is better
        verdict = "LASCon better" if lo > 0 else "reversed" if hi < 0 else "within noise"
    return {"seeds": seeds, "diffs": d, "mean": mean, "ci95": [lo, hi], "verdict": verdict}


def fmt(values: list[float], scale: float = 1.0, digits: int = 3) -> str:
    m = statistics.mean(values) * scale
    if len(values) < 2:
        return f"{m:.{digits}f}"
    return f"{m:.{digits}f} ± {statistics.stdev(values) * scale:.{digits}f}"


def main() -> None:
    runs = Path(sys.argv[1] if len(sys.argv) > 1 else "/work/runs/sentences/sst5")
    data = load(runs)
    rows = [
        "| method | seeds | MAE ↓ | Pearson ↑ | accuracy % ↑ | steps | train s / run "
        "| wall s / run |",
        "|---|---|---|---|---|---|---|---|",
    ]
    summary: dict[str, dict] = {}
    for name in METHODS:
        if name not in data:
            continue
        by_seed = data[name]
        seeds = sorted(by_seed)
        vals = {m: [by_seed[s]["test"][m] for s in seeds] for m in METRICS}
        train_s = [by_seed[s]["train_seconds"] for s in seeds]
        wall = [by_seed[s]["seconds"] for s in seeds]
        summary[name] = {
            "seeds": seeds,
            "per_seed": {s: by_seed[s]["test"] for s in seeds},
            "steps": by_seed[seeds[0]]["steps"],
            "train_seconds": train_s,
            "seconds": wall,
            "loss_args": by_seed[seeds[0]]["loss_args"],
        }
        rows.append(
            f"| {LABELS[name]} | {','.join(map(str, seeds))} | {fmt(vals['mae'])} | "
            f"{fmt(vals['pearson'])} | {fmt(vals['accuracy'], 100, 2)} | "
            f"{summary[name]['steps']} | {statistics.mean(train_s):.0f} | "
            f"{statistics.mean(wall):.0f} |"
        )
    comps = []
    crows = [
        "| LASCon variant | vs | seeds | mean ΔMAE | 95 % CI | verdict (MAE) | mean ΔPearson "
        "| mean Δacc (pts) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name in METHODS[3:]:
        for base in ("supcon", "simclr", "zero-shot"):
            if name not in data or base not in data:
                continue
            res = {m: paired(data[name], data[base], m) for m in METRICS}
            if res["mae"] is None:
                continue
            comps.append({"method": name, "baseline": base, **res})
            lo, hi = res["mae"]["ci95"]
            crows.append(
                f"| {LABELS[name]} | {LABELS[base]} | {len(res['mae']['seeds'])} | "
                f"{res['mae']['mean']:+.4f} | [{lo:+.4f}, {hi:+.4f}] | {res['mae']['verdict']} | "
                f"{res['pearson']['mean']:+.4f} | {100 * res['accuracy']['mean']:+.2f} |"
            )
    (HERE / "sst5.json").write_text(
        json.dumps({"runs_dir": str(runs), "methods": summary, "comparisons": comps}, indent=2)
        + "\n"
    )
    (HERE / "sst5.md").write_text("\n".join(rows) + "\n\n" + "\n".join(crows) + "\n")
    print("\n".join(rows) + "\n\n" + "\n".join(crows))


if __name__ == "__main__":
    main()
