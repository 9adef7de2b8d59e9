"""``contrastkit study CONFIG``: run a paper table's arms × seeds (resumably) and write its
report (``REPORT.md``, ``results.json``, plots) into the study folder. A suite config
(:mod:`contrastkit.study.suite`) runs and reports each of its studies in turn, then writes
the suite's ``REPORT.md`` with one column per study.

A killed or time-limited study continues where it stopped when the same command is run
again: finished runs are skipped, interrupted runs continue from their last epoch.
``--jobs N`` trains in N processes at once (:mod:`contrastkit.study.jobs`).
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path
from time import monotonic
from typing import Any

from ..study import Study, Suite, load_config, run_study, status, write_report, write_suite_report
from ..study.jobs import run_jobs
from ..study.probe import run_probe
from ..study.remaining import duration, remaining
from ..study.report import collect, finished_runs, readme_rows
from ..study.runner import survey
from ..study.trial import run_trial
from ..training import ENVIRONMENT_KEYS
from ..training.config_io import parse_assignments

NAME = "study"
HELP = "run a paper table's arms over seeds to convergence and report the claim's verdict"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("config", help="study or suite YAML (configs/studies/*.yaml)")
    parser.add_argument(
        "--runs-dir",
        help="where the runs go (default: the config's runs_dir); for a suite, the root of "
        "one folder per study",
    )
    parser.add_argument(
        "--out",
        help="study folder for the report (default: the config's out); for a suite, the "
        "suite's folder and the root of one folder per study",
    )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="this machine's data path or execution for every arm (repeatable): "
        + ", ".join(ENVIRONMENT_KEYS),
    )
    parser.add_argument(
        "--max-minutes",
        type=float,
        help="stop cleanly (between epochs) after this many minutes; rerun to continue",
    )
    parser.add_argument(
        "--seeds",
        nargs="+",
        help="subset of the study's seeds to train (or, with --status, to show) in this "
        "process, separated by commas or spaces (e.g. two processes on disjoint seeds); the "
        "report covers every seed",
    )
    parser.add_argument(
        "--arms",
        nargs="+",
        help="subset of the arm labels to train (or, with --status, to show), separated by "
        "commas or spaces",
    )
    parser.add_argument(
        "--readme-rows", action="store_true", help="also print the README claims-table rows"
    )
    parser.add_argument("--progress", action="store_true", help="show per-epoch progress bars")
    parser.add_argument(
        "--jobs",
        type=int,
        default=1,
        metavar="N",
        help="train in N processes at once (each claims the next unfinished run; with "
        "several GPUs and no --set device=cuda:K, one GPU each), then write the report "
        "once (default 1)",
    )
    parser.add_argument(
        "--no-report",
        action="store_true",
        help="train only: write no report (what each process of --jobs runs)",
    )
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
        "--trial",
        type=int,
        metavar="EPOCHS",
        help="before the runs: train every arm (or --arms) on the first seed for EPOCHS "
        "epochs in a temporary folder, final evaluation included, and price the study's "
        "remaining work at each arm's pace on this machine; writes nothing",
    )
    mode.add_argument(
        "--status",
        action="store_true",
        help="train and write nothing: print where every arm × seed stands, the work left "
        "and its hours at the pace the runs logged",
    )


def _items(values: list[str]) -> list[str]:
    """``--seeds``/``--arms`` values as given (``0,1``, ``0 1`` or ``0, 1``), one per item."""
    return [item.strip() for value in values for item in value.split(",") if item.strip()]


def _seeds(values: list[str] | None, declared: list[int]) -> list[int] | None:
    if values is None:
        return None
    try:
        seeds = [int(s) for s in _items(values)]
    except ValueError:
        text = " ".join(values)
        raise ValueError(f"--seeds must be integers (commas or spaces), got {text!r}") from None
    unknown = sorted(set(seeds) - set(declared))
    if not seeds or unknown:
        raise ValueError(f"--seeds must be a non-empty subset of the study's seeds {declared}")
    return seeds


def _arms(values: list[str] | None, declared: list[str]) -> list[str] | None:
    if values is None:
        return None
    arms = _items(values)
    unknown = sorted(set(arms) - set(declared))
    if not arms or unknown:
        raise ValueError(f"--arms must be a non-empty subset of the study's arms {declared}")
    return arms


def _probe(study: Study, args: argparse.Namespace) -> None:
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


def _status(study: Study, seeds: list[int] | None, arms: list[str] | None) -> None:
    slots = [
        slot
        for slot in survey(study)
        if (seeds is None or slot.seed in seeds) and (arms is None or slot.label in arms)
    ]
    states = status(study, slots)
    for (label, seed), state in states.items():
        print(f"{label} seed {seed}: {state}")
    done = sum(state.startswith("finished") for state in states.values())
    left = remaining(slots)
    line = f"[study] {study.name}: {done} of {len(states)} runs finished; {left.describe()}"
    workers = len({slot.held_by for slot in slots} - {None})
    if workers > 1 and left.seconds:  # the logged pace is one process's, under that load
        line += f"; {workers} processes at work now: about {duration(left.seconds / workers)}"
    print(line)


def _trial(study: Study, epochs: int, arms: list[str] | None, progress: bool) -> bool:
    """Print each arm's trial and the study's remaining work at their paces; whether
    every arm ran."""
    trials = run_trial(study, epochs, arms, progress)
    for trial in trials:
        print(trial.describe(f"the paces of a {epochs}-epoch trial"), flush=True)
    seconds = sum(t.left.seconds for t in trials if t.left is not None)
    failed = [t.label for t in trials if t.error is not None]
    tail = f"; failed: {', '.join(failed)}" if failed else ""
    print(
        f"[study] {study.name}: {duration(seconds)} of work left for "
        f"{len(trials) - len(failed)} arms at their trial paces, on one process{tail}"
    )
    return not failed


def _report(study: Study, command: str, readme: bool) -> dict[str, Any]:
    """Write ``study``'s report if it has finished runs; its :func:`collect` either way."""
    runs = finished_runs(study)
    if not runs:  # nothing to report: write no empty folder
        print(f"[study] {study.name}: no finished runs under {study.runs_dir}", file=sys.stderr)
        return collect(study, runs)
    results = write_report(study, command, runs)
    for name, comp in results["comparisons"].items():
        print(f"{name}: {comp['verdict']}")
    print(f"report: {study.out / 'REPORT.md'}")
    if readme:
        print("\n".join(readme_rows(results, str(study.out))))
    return results


def run(args: argparse.Namespace) -> int:
    if args.max_minutes is not None and not args.max_minutes > 0:
        raise ValueError(f"--max-minutes must be > 0, got {args.max_minutes}")
    settings = parse_assignments(args.set, "--set")
    target = load_config(args.config, runs_dir=args.runs_dir, out=args.out, settings=settings)
    suite = target if isinstance(target, Suite) else None
    parts = suite.parts if suite else [target]
    sources = suite.sources if suite else [Path(args.config)]
    if (args.seeds or args.arms) and (args.probe is not None or args.report_only):
        raise ValueError(
            "--seeds and --arms choose the runs to train or show (--status); --probe trains "
            "the baseline's first seed and --report-only reports every finished run"
        )
    if args.jobs < 1:
        raise ValueError(f"--jobs must be a positive integer, got {args.jobs}")
    if args.jobs > 1 and (args.probe is not None or args.trial is not None or args.status):
        raise ValueError("--jobs trains the study's runs; --probe, --trial and --status run alone")
    if args.jobs > 1 and args.report_only:
        raise ValueError("--jobs trains the study's runs; --report-only trains nothing")
    if args.seeds and args.trial is not None:
        raise ValueError("--trial trains each arm's first seed: choose arms with --arms only")
    chosen = [
        (_seeds(args.seeds, part.seeds), _arms(args.arms, [a.label for a in part.arms]))
        for part in parts
    ]
    if args.probe is not None:
        if suite:
            raise ValueError(
                f"--probe chooses one study's epochs; {args.config} is a suite: probe one of "
                f"its parts ({', '.join(str(s) for s in sources)})"
            )
        _probe(target, args)
        return 0
    if args.status:
        for part, (seeds, arms) in zip(parts, chosen, strict=True):
            _status(part, seeds, arms)
        return 0
    if args.trial is not None:
        ok = [
            _trial(part, args.trial, arms, args.progress)
            for part, (_, arms) in zip(parts, chosen, strict=True)
        ]
        return 0 if all(ok) else 1
    start = monotonic()
    failed = []
    if args.jobs > 1:
        pinned = ":" in str(settings.get("device", ""))  # --set device=cuda:K: one GPU for all
        # the plug-ins the command imported (--import) define what the study names
        imports = [part for module in getattr(args, "imports", []) for part in ("--import", module)]
        codes = run_jobs(_worker_argv(args), args.jobs, gpus=0 if pinned else None, options=imports)
        failed = [f"{i} (exit {code})" for i, code in enumerate(codes) if code]
    results = []
    for part, source, (seeds, arms) in zip(parts, sources, chosen, strict=True):
        if not args.report_only and args.jobs == 1:
            left = None
            if args.max_minutes is not None:
                left = max(args.max_minutes - (monotonic() - start) / 60, 0.0)
            done = run_study(part, left, progress=args.progress, seeds=seeds, arms=arms)
            held = f", {len(done.busy)} held by other processes" if done.busy else ""
            print(
                f"[study] {part.name}: {len(done.finished)} runs finished now, "
                f"{len(done.skipped)} already finished, {len(done.pending)} pending{held} "
                f"({done.wall_time_s / 60:.1f} min)",
                flush=True,
            )
            if done.pending:
                print("[study] time limit reached; run the same command again to continue")
        if args.no_report:
            continue
        flags = ["--runs-dir", str(part.runs_dir)] if args.runs_dir else []
        command = "contrastkit study " + shlex.join([str(source), *flags])
        results.append(_report(part, command, args.readme_rows))
    if suite and any(r["runs_finished"] for r in results):
        flags = ["--runs-dir", args.runs_dir] if args.runs_dir else []
        write_suite_report(suite, results, "contrastkit study " + shlex.join([args.config, *flags]))
        print(f"suite report: {suite.out / 'REPORT.md'}")
    if failed:
        print(
            f"[study] failed processes: {', '.join(failed)}; see their errors above",
            file=sys.stderr,
        )
        return 1
    return 0


def _worker_argv(args: argparse.Namespace) -> list[str]:
    """The ``contrastkit study`` arguments of one process of ``--jobs``: this command's
    study, runs, machine settings and time limit, without a report. A flag added to the
    command is passed on here, or declared the parent's own in ``tests/study/test_jobs.py``,
    which fails otherwise."""
    argv = [args.config, "--no-report"]
    for flag, value in (
        ("--runs-dir", args.runs_dir),
        ("--out", args.out),
        ("--max-minutes", args.max_minutes),
        ("--seeds", args.seeds and ",".join(args.seeds)),
        ("--arms", args.arms and ",".join(args.arms)),
    ):
        if value is not None:
            argv += [flag, str(value)]
    for assignment in args.set:
        argv += ["--set", assignment]
    return [*argv, "--progress"] if args.progress else argv
