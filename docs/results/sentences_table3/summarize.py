"""Summarise the runs of ``run_table3.sh``: SentEval per arm (mean ± sd over seeds), the
paired comparisons of the rule fixed in docs/results_sentences.md before the runs, and the
papers' numbers beside ours.

    python docs/results/sentences_table3/summarize.py [RUNS]

RUNS defaults to ``records/`` next to this file: each finished run's ``history.json``,
``senteval.json`` and ``senteval.done`` (the model folders and plots left out), committed
so the table can be rebuilt without training.

Writes ``table3.json`` (every run's numbers, the comparisons) and ``table3.md`` (the
tables) next to this file. Rule: for a pair (A, B) = (MACL, InfoNCE) or (modified,
unmodified) and a metric M (STS average over the STS tasks present, transfer average over
the 7 transfer tasks), ``d_s = M_A(s) - M_B(s)`` per seed; 95 % paired t-interval
``mean(d) ± t_{0.975, n-1} sd(d) / sqrt(n)``; "A better" if it lies above 0, "reversed" if
below 0, else "within noise". A pair is "not converged" when the mean over its runs of
|dev(last) - dev(second last)| (STS-B dev Spearman x100 at the last two evaluations)
exceeds 0.3 points; its verdict is then reported with that flag.
"""

from __future__ import annotations

import json
import math
import statistics
import sys
from pathlib import Path

from scipy import stats

ARMS = (
    "infonce",
    "macl",
    "mhe",
    "mmhe",
    "mhs",
    "mmhs",
    "barlow_l2",
    "mbarlow",
    "vicreg_l2",
    "mvicreg",
)
PAIRS = (
    ("macl", "infonce", "MACL Table 3 / B.4"),
    ("mmhe", "mhe", "paradigm Table 3"),
    ("mmhs", "mhs", "paradigm Table 3"),
    ("mbarlow", "barlow_l2", "paradigm Table 3"),
    ("mvicreg", "vicreg_l2", "paradigm Table 3"),
)
STS = ("STS12", "STS13", "STS14", "STS15", "STS16", "STSBenchmark", "SICKRelatedness")
TRANSFER = ("MR", "CR", "SUBJ", "MPQA", "SST2", "TREC", "MRPC")
# (STS avg, transfer avg) as printed: MACL Table 3 (RoBERTa, averages computed from its
# per-task rows; STS from Table B.5) and Table B.4 (BERT); gradient-paradigm Table 3 for
# InfoNCE and the modified losses; the unmodified losses' values are the modified value
# minus the improvement printed under it (the paper does not print them directly).
PAPER = {
    "bert": {
        "infonce": (76.25, 85.81),
        "macl": (76.66, 86.16),
        "mmhe": (78.40, 85.07),
        "mhe": (78.40 - 15.78, 85.07 - 0.72),
        "mmhs": (78.27, 85.42),
        "mhs": (78.27 - 5.54, 85.42 + 0.46),
        "mbarlow": (78.34, 85.28),
        "barlow_l2": (78.34 - 12.74, 85.28 - 0.34),
        "mvicreg": (78.24, 85.40),
        "vicreg_l2": (78.24 - 12.71, 85.40 - 0.40),
    },
    "roberta": {
        "infonce": (76.57, 84.84),
        "macl": (77.59, 85.85),
        "mmhe": (76.91, 86.28),
        "mhe": (76.91 - 7.61, 86.28 - 1.36),
        "mmhs": (76.37, 86.17),
        "mhs": (76.37 - 1.75, 86.17 + 0.53),
        "mbarlow": (77.15, 85.98),
        "barlow_l2": (77.15 - 7.64, 85.98 - 1.15),
        "mvicreg": (76.87, 86.11),
        "vicreg_l2": (76.87 - 7.32, 86.11 - 1.14),
    },
}
# per-step diagnostics of the training batches (text.diagnostics), as means over the first
# 5 and the last 10 steps: why an objective helps or hurts
DIAGNOSTICS = ("pos_angle_mean", "neg_angle_mean", "hardest_share", "lemma1_ratio")
FLAT = 0.3  # points of STS-B dev Spearman x100 between the last two evaluations
HERE = Path(__file__).parent
# the untrained model saved the way the runs save theirs and evaluated with the same
# command, for reference (when the committed records were made, save_pretrained dropped
# MiniLM's Normalize module, so the runs and this row were scored on unnormalised
# embeddings; docs/results_sentences.md, "Limits of what was run here")
REFERENCE = HERE / "minilm-untrained.json"


def load(runs: Path) -> dict[str, dict[int, dict]]:
    """``arm -> seed -> {senteval, history}`` for every finished run."""
    out: dict[str, dict[int, dict]] = {}
    for path in sorted(runs.glob("*-s*/senteval.done")):  # evaluation finished
        name, _, seed = path.parent.name.rpartition("-s")
        if name in ARMS:
            hist = json.loads((path.parent / "history.json").read_text())
            ev = json.loads((path.parent / "senteval.json").read_text())
            out.setdefault(name, {})[int(seed)] = {"senteval": ev, "history": hist}
    return out


def metrics(run: dict) -> dict[str, float]:
    ev, hist = run["senteval"], run["history"]
    dev = [100 * e["spearman"] for e in hist["evals"]]
    row = {t: _score(ev, t) for t in STS + TRANSFER if _score(ev, t) is not None}
    row |= {
        "sts_avg": ev["STS_avg"]["value"],
        "transfer_avg": ev["transfer_avg"]["value"],
        "dev_best": 100 * hist["best_spearman"],
        "best_step": hist["best_step"],
        "dev_last": dev[-1],
        "dev_last_change": dev[-1] - dev[-2],
        **{f"{k}_start": statistics.fmean(hist["diagnostics"][k][:5]) for k in DIAGNOSTICS},
        **{f"{k}_end": statistics.fmean(hist["diagnostics"][k][-10:]) for k in DIAGNOSTICS},
        "train_s": hist["seconds"],
        "eval_s": sum(ev["seconds"].values()),
    }
    return row


def _score(ev: dict, task: str) -> float | None:
    res = ev.get(task)
    if res is None:
        return None
    if task.startswith("STS1"):
        return res["spearman"]["all"]
    if task in ("STSBenchmark", "SICKRelatedness"):
        return res["test"]["spearman"] if "test" in res else None
    return res["acc"]


def paired(a: dict[int, dict], b: dict[int, dict], key: str) -> dict | None:
    seeds = sorted(set(a) & set(b))
    if len(seeds) < 2:
        return None
    d = [a[s][key] - b[s][key] for s in seeds]
    mean, sd = statistics.fmean(d), statistics.stdev(d)
    half = stats.t.ppf(0.975, len(d) - 1) * sd / math.sqrt(len(d))
    lo, hi = mean - half, mean + half
    verdict = "A better" if lo > 0 else "reversed" if hi < 0 else "within noise"
    return {"seeds": seeds, "diffs": d, "mean": mean, "ci": [lo, hi], "verdict": verdict}


def summarise(runs: Path) -> dict:
    data = {arm: {s: metrics(r) for s, r in seeds.items()} for arm, seeds in load(runs).items()}
    arms = {}
    for arm, seeds in data.items():
        keys = seeds[min(seeds)].keys()
        arms[arm] = {
            "seeds": sorted(seeds),
            "mean": {k: statistics.fmean(r[k] for r in seeds.values()) for k in keys},
            "sd": {
                k: statistics.stdev(r[k] for r in seeds.values()) if len(seeds) > 1 else 0.0
                for k in keys
            },
        }
    comparisons = []
    for a, b, source in PAIRS:
        if a not in data or b not in data:
            continue
        moves = [abs(r["dev_last_change"]) for arm in (a, b) for r in data[arm].values()]
        converged = statistics.fmean(moves) <= FLAT
        for key in ("sts_avg", "transfer_avg"):
            res = paired(data[a], data[b], key)
            if res is not None:
                comparisons.append(
                    {"a": a, "b": b, "metric": key, "source": source, "converged": converged, **res}
                )
    return {"runs": data, "arms": arms, "comparisons": comparisons, "paper": PAPER}


def reference(columns: list[str]) -> dict[str, float]:
    """The untrained model's scores on ``columns`` and its averages over them."""
    ev = json.loads(REFERENCE.read_text())
    row = {t: _score(ev, t) for t in columns}
    sts = [row[t] for t in columns if t in STS]
    tr = [row[t] for t in columns if t in TRANSFER]
    return row | {"sts_avg": statistics.fmean(sts), "transfer_avg": statistics.fmean(tr)}


def markdown(summary: dict) -> str:
    arms, lines = summary["arms"], []
    sts_cols = [t for t in STS if any(t in a["mean"] for a in arms.values())]
    tr_cols = [t for t in TRANSFER if any(t in a["mean"] for a in arms.values())]
    head = ["arm", "seeds", *sts_cols, "STS avg", *tr_cols, "TR avg", "dev best (step)"]
    head += ["dev at end", "dev Δ last"]
    head += ["train s", "eval s"]
    lines += ["| " + " | ".join(head) + " |", "|---" * len(head) + "|"]
    ref = reference(sts_cols + tr_cols)
    cells = ["MiniLM, untrained", "–", *(f"{ref[t]:.2f}" for t in sts_cols)]
    cells += [f"{ref['sts_avg']:.2f}", *(f"{ref[t]:.2f}" for t in tr_cols)]
    cells += [f"{ref['transfer_avg']:.2f}", "86.72 (0)", "–", "–", "0", "–"]
    lines.append("| " + " | ".join(cells) + " |")
    for arm in ARMS:
        if arm not in arms:
            continue
        m, sd = arms[arm]["mean"], arms[arm]["sd"]
        cells = [arm, str(len(arms[arm]["seeds"]))]
        cells += [f"{m[t]:.2f}" for t in sts_cols]
        cells += [f"{m['sts_avg']:.2f} ± {sd['sts_avg']:.2f}"]
        cells += [f"{m[t]:.2f}" for t in tr_cols]
        steps = "/".join(str(summary["runs"][arm][s]["best_step"]) for s in arms[arm]["seeds"])
        cells += [f"{m['transfer_avg']:.2f} ± {sd['transfer_avg']:.2f}"]
        cells += [f"{m['dev_best']:.2f} ({steps})", f"{m['dev_last']:.2f}"]
        cells += [f"{m['dev_last_change']:+.2f}", f"{m['train_s']:.0f}", f"{m['eval_s']:.0f}"]
        lines.append("| " + " | ".join(cells) + " |")
    lines += [
        "",
        "| A vs B | metric | Δ per seed | mean Δ [95 % CI] | verdict | paper Δ BERT / RoBERTa |",
        "|---|---|---|---|---|---|",
    ]
    for c in summary["comparisons"]:
        i = 0 if c["metric"] == "sts_avg" else 1
        paper = [PAPER[m][c["a"]][i] - PAPER[m][c["b"]][i] for m in ("bert", "roberta")]
        verdict = c["verdict"] + ("" if c["converged"] else " (not converged)")
        lines.append(
            f"| {c['a']} vs {c['b']} | {c['metric']} | "
            + " / ".join(f"{d:+.2f}" for d in c["diffs"])
            + f" | {c['mean']:+.2f} [{c['ci'][0]:+.2f}, {c['ci'][1]:+.2f}] | {verdict} | "
            + f"{paper[0]:+.2f} / {paper[1]:+.2f} |"
        )
    lines += ["", "| arm | ours STS / TR | paper BERT STS / TR | paper RoBERTa STS / TR |"]
    lines.append("|---|---|---|---|")
    for arm in ARMS:
        if arm in arms:
            m = arms[arm]["mean"]
            bert, rob = PAPER["bert"][arm], PAPER["roberta"][arm]
            lines.append(
                f"| {arm} | {m['sts_avg']:.2f} / {m['transfer_avg']:.2f} | {bert[0]:.2f} / "
                f"{bert[1]:.2f} | {rob[0]:.2f} / {rob[1]:.2f} |"
            )
    lines += ["", "| arm | " + " | ".join(f"{k} start → end" for k in DIAGNOSTICS) + " |"]
    lines.append("|---" * (len(DIAGNOSTICS) + 1) + "|")
    for arm in ARMS:
        if arm in arms:
            m = arms[arm]["mean"]
            cells = [f"{m[k + '_start']:.3f} → {m[k + '_end']:.3f}" for k in DIAGNOSTICS]
            lines.append(f"| {arm} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(runs: str) -> None:
    summary = summarise(Path(runs))
    (HERE / "table3.json").write_text(json.dumps(summary, indent=2) + "\n")
    (HERE / "table3.md").write_text(markdown(summary))
    print(markdown(summary))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else str(HERE / "records"))
