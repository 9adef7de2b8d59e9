"""``contrastkit study CONFIG``: run a paper table's arms × seeds (resumably) and write its
report (``REPORT.md``, ``results.json``, plots) into the study folder.

A killed or time-limited study continues where it stopped when the same command is run
again: finished runs are skipped, interrupted runs continue from their last epoch.
"""

from __future__ import annotations

import argparse
import shlex
import sys

from ..study import load_study, run_study, status, write_report
from ..study.probe import run_probe
from ..study.report import finished_runs, readme_rows

NAME = "study"
HELP = "run a paper table's arms over seeds to convergence and report the claim's verdict"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("config", help="study YAML (configs/studies/*.yaml)")
    parser.add_argument("--runs-dir", help="where the runs go (default <study folder>/runs)")
    parser.add_argument("--out", help="study folder for the report (default: the config's out)")
    parser.add_argument(
        "--max-minutes",
        type=float,
        help="stop cleanly (between epochs) after this many minutes; rerun to continue",
    )
    parser.add_argument(
        "--seeds",
        help="comma-separated subset of the study's seeds to train (or, with --status, to "
        "show) in this process (e.g. two processes on disjoint seeds); the report covers "
        "every seed",
    )
    parser.add_argument(
        "--arms",
        help="comma-separated subset of the arm labels to train (or, with --status, to show)",
    )
    parser.add_argument(
        "--readme-rows", action="store_true", help="also print the README claims-table rows"
    )
    parser.add_argument("--progress", action="store_true", help="show per-epoch progress bars")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument(
        "--report-only", action="store_true", help="train nothing: report the finished runs"
    )
    mode.add_argument(
        "--probe",
        type=int,
        metavar="EPOCHS",
        help="choose the study's epochs: train its baseline arm (first seed) for up to "
        "EPOCHS epochs (resumable, apart from the study's runs), write <out>/probe.json and "
        "print the smallest epoch count that passes the convergence rule",
    )
    mode.add_argument(
        "--status",
        action="store_true",
        help="train and write nothing: print where every arm × seed stands",
    )


def _seeds(text: str | None, declared: list[int]) -> list[int] | None:
    if text is None:
        return None
    try:
        seeds = [int(s) for s in text.split(",") if s.strip()]
    except ValueError:
        raise ValueError(f"--seeds must be comma-separated integers, got {text!r}") from None
    unknown = sorted(set(seeds) - set(declared))
    if not seeds or unknown:
        raise ValueError(f"--seeds must be a non-empty subset of the study's seeds {declared}")
    return seeds


def _arms(text: str | None, declared: list[str]) -> list[str] | None:
    if text is None:
        return None
    arms = [a.strip() for a in text.split(",") if a.strip()]
    unknown = sorted(set(arms) - set(declared))
    if not arms or unknown:
        raise ValueError(f"--arms must be a non-empty subset of the study's arms {declared}")
    return arms


def run(args: argparse.Namespace) -> int:
    if args.max_minutes is not None and not args.max_minutes > 0:
        raise ValueError(f"--max-minutes must be > 0, got {args.max_minutes}")
    study = load_study(args.config, runs_dir=args.runs_dir, out=args.out)
    command = "contrastkit study " + shlex.join(
        [args.config, *(["--runs-dir", args.runs_dir] if args.runs_dir else [])]
    )
    seeds = _seeds(args.seeds, study.seeds)
    arms = _arms(args.arms, [a.label for a in study.arms])
    if (seeds or arms) and (args.probe is not None or args.report_only):
        raise ValueError(
            "--seeds and --arms choose the runs to train or show (--status); --probe trains "
            "the baseline's first seed and --report-only reports every finished run"
        )
    if args.probe is not None:
        result = run_probe(study, args.probe, args.max_minutes, progress=args.progress)
        for row in result["checks"]:
            change = "n/a" if row["change"] is None else f"{row['change']:+.4f}"
            mark = "flat" if row["converged"] else "moving"
            print(f"epochs {row['epochs']}: change {change} ({mark})")
        print(
            f"[study] probe at epoch {result['epochs_reached']} of {args.probe}; suggested "
            f"epochs: {result['suggested_epochs'] or 'none yet'} (config: {study.epochs}); "
            f"{study.out / 'probe.json'}"
        )
        return 0
    if args.status:
        states = {
            (label, seed): state
            for (label, seed), state in status(study).items()
            if (seeds is None or seed in seeds) and (arms is None or label in arms)
        }
        for (label, seed), state in states.items():
            print(f"{label} seed {seed}: {state}")
        done = sum(state.startswith("finished") for state in states.values())
        print(f"[study] {done} of {len(states)} runs finished")
        return 0
    if not args.report_only:
        done = run_study(study, args.max_minutes, progress=args.progress, seeds=seeds, arms=arms)
        print(
            f"[study] {len(done.finished)} runs finished now, {len(done.skipped)} already "
            f"finished, {len(done.pending)} pending ({done.wall_time_s / 60:.1f} min)",
            flush=True,
        )
        if done.pending:
            print("[study] time limit reached; run the same command again to continue")
    runs = finished_runs(study)
    if not runs:  # nothing to report: write no empty folder
        print(f"[study] no finished runs under {study.runs_dir}", file=sys.stderr)
        return 0
    results = write_report(study, command, runs)
    for name, comp in results["comparisons"].items():
        print(f"{name}: {comp['verdict']}")
    print(f"report: {study.out / 'REPORT.md'}")
    if args.readme_rows:
        print("\n".join(readme_rows(results, str(study.out))))
    return 0
