"""Running a study's arms × seeds through the ordinary trainer, resumably.

Runs go seed by seed (every arm of seed 0, then of seed 1, ...), so a study stopped
part-way has complete paired seeds. Each run lives in ``<runs_dir>/<arm>/seed<k>``:

* ``final.json`` for the study's epochs and config: finished, skipped;
* ``final.json`` or a checkpoint of fewer epochs, same config: continued from its
  checkpoint (the trainer replays the same batches and views, so a run stopped and
  resumed trains exactly like one run straight through); not under a schedule that
  depends on the run's length (``warmup_cosine``, ``linear``), whose runs only continue
  to the epochs they were started for;
* anything with a different config: an error naming the directory (never overwritten);
* no run directory, but the run's line in the study folder's ``runs.jsonl`` (a run of an
  earlier session whose directory is gone; :mod:`.records`): finished, skipped.

Several processes may run the same study at once (e.g. one per core): a process claims a
run before training it and the others skip it while the claim is held (:mod:`.claims`),
asking once more for each run they skipped so at the end of their pass.

A deadline (``max_minutes``) is checked before every run and every epoch; when it passes
the current run stops after its last saved epoch and the study can be continued later.
"""

from __future__ import annotations

import functools
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..rundir import append_line, read_jsonl, removed_if_unused
from ..training import (
    METRICS,
    LabelAwareTrainer,
    TrainConfig,
    Trainer,
    resumes,
    run_state,
    trainer_class,
)
from .claims import claimed, holder
from .config import Arm, Study
from .records import RunRecord, load_records

STUDY_LOG = "study_log.jsonl"  # one line per run that ended, stopped or was interrupted


class DeadlineError(Exception):
    """Raised between epochs when the study's time budget is used up."""


def _with_deadline(cls: type[Trainer], deadline: float | None) -> type[Trainer]:
    """``cls`` with a check of ``deadline`` (``time.monotonic``) before every epoch."""
    if deadline is None:
        return cls

    def train_epoch(self: Trainer) -> dict[str, Any]:
        if time.monotonic() >= deadline:
            raise DeadlineError
        return cls.train_epoch(self)

    return type(f"Deadline{cls.__name__}", (cls,), {"train_epoch": train_epoch})


def train(
    directory: Path,
    config: TrainConfig,
    state: str,
    label_aware: bool,
    deadline: float | None,
    progress: bool,
) -> None:
    """Train the run in ``directory`` (claimed by the caller; ``state`` from
    :func:`~contrastkit.training.run_state`) to ``config.epochs``, continuing a partial run
    (:func:`~contrastkit.training.resumes`); raises :class:`DeadlineError` between epochs
    once ``deadline`` has passed."""
    cls = _with_deadline(trainer_class(config, label_aware), deadline)
    cls(config, directory, progress=progress).fit(resume=resumes(directory, state))


def label_aware_study(study: Study) -> bool:
    """Whether every arm trains with the label-aware trainer (its downstream head and
    label geometry), as one label-aware arm (SupCon, LASCon, regression data) requires of
    the arms it is compared with. Image and graph studies keep their own trainers."""
    return any(issubclass(trainer_class(a.config), LabelAwareTrainer) for a in study.arms)


def run_dir(study: Study, arm: Arm, seed: int) -> Path:
    return study.runs_dir / arm.slug / f"seed{seed}"


def seeded(arm: Arm, seed: int) -> TrainConfig:
    return TrainConfig.from_dict({**arm.config.to_dict(), "seed": seed})


@dataclass(frozen=True)
class Slot:
    """One arm × seed of a study and where it stands: ``finished`` (its run directory),
    ``recorded`` (only its line in ``runs.jsonl`` is left), ``partial``, ``new`` or
    ``other config`` (a directory :func:`run_study` would refuse)."""

    label: str
    seed: int
    directory: Path
    config: TrainConfig
    state: str
    record: RunRecord | None

    @functools.cached_property
    def logged(self) -> list[dict[str, Any]]:
        """The per-epoch records the run has logged: its ``metrics.jsonl`` (read once per
        slot, however many readers ask), else its ``runs.jsonl`` history, else none."""
        path = self.directory / METRICS
        if self.state in ("finished", "partial") and path.exists():
            return read_jsonl(path)[0]
        return list(self.record.history) if self.state == "recorded" and self.record else []

    @functools.cached_property
    def held_by(self) -> int | None:
        """The pid of the live process that holds the run's claim when first asked, else
        ``None`` (:func:`.claims.holder`)."""
        return holder(self.directory)


def survey(study: Study) -> list[Slot]:
    """Every arm × seed of ``study`` with its state, reading the run directories and the
    study folder's ``runs.jsonl``; trains and writes nothing."""
    records = load_records(study.out)
    slots = []
    for arm in study.arms:
        for seed in study.seeds:
            directory, config = run_dir(study, arm, seed), seeded(arm, seed)
            try:
                state = run_state(directory, config)
            except ValueError:
                state = "other config"
            record = records.get((arm.label, seed))
            if state == "new" and record and record.matches(config):
                state = "recorded"
            slots.append(Slot(arm.label, seed, directory, config, state, record))
    return slots


def status(study: Study, slots: list[Slot] | None = None) -> dict[tuple[str, int], str]:
    """:func:`survey` (or ``slots`` of it) in words, by (arm label, seed): ``finished``,
    ``finished (runs.jsonl)``, ``epoch N of E`` (continues from its checkpoint), ``new``
    or ``other config``, plus ``, claimed by pid P`` while a live process holds an
    unfinished run."""
    out = {}
    for slot in survey(study) if slots is None else slots:
        state = {"recorded": "finished (runs.jsonl)"}.get(slot.state, slot.state)
        if slot.state == "partial":
            done = slot.logged
            state = f"epoch {done[-1]['epoch'] if done else 0} of {slot.config.epochs}"
        if not state.startswith("finished") and slot.held_by is not None:
            state += f", claimed by pid {slot.held_by}"
        out[(slot.label, slot.seed)] = state
    return out


@dataclass
class Progress:
    """What one invocation of :func:`run_study` did."""

    finished: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    busy: list[str] = field(default_factory=list)  # held by other processes when asked twice
    stopped: str | None = None
    pending: list[str] = field(default_factory=list)
    wall_time_s: float = 0.0


def run_study(
    study: Study,
    max_minutes: float | None = None,
    progress: bool = False,
    log: bool = True,
    seeds: list[int] | None = None,
    arms: list[str] | None = None,
) -> Progress:
    """Train every unfinished arm × seed of ``study`` (only those in ``seeds`` and
    ``arms`` if given; see the module docstring)."""
    start = time.monotonic()
    deadline = None if max_minutes is None else start + 60.0 * max_minutes
    label_aware = label_aware_study(study)
    done = Progress()
    chosen = [a for a in study.arms if arms is None or a.label in arms]
    plan = [(seed, arm) for seed in seeds or study.seeds for arm in chosen]
    records = load_records(study.out)
    # a run another process holds is asked for once more at the end: its holder may have
    # ended meanwhile, or was a --status probe that held the claim file for an instant
    asked: set[tuple[int, str]] = set()
    for i, (seed, arm) in enumerate(plan):  # grows by those second asks as it goes
        name = f"{arm.label} seed {seed}"
        directory = run_dir(study, arm, seed)
        config = seeded(arm, seed)
        state = run_state(directory, config)
        record = records.get((arm.label, seed))
        if state == "finished" or (state == "new" and record and record.matches(config)):
            done.skipped.append(name)
            continue
        if deadline is not None and time.monotonic() >= deadline:
            done.pending.extend(f"{a.label} seed {s}" for s, a in plan[i:])
            break
        started = time.perf_counter()  # a duration; the deadline reads time.monotonic
        training = False
        try:
            # a run that fails to start leaves no folder; the claim is released first
            with removed_if_unused(directory), claimed(directory) as held:
                if not held:
                    if (seed, arm.label) in asked:
                        done.busy.append(name)
                    else:
                        asked.add((seed, arm.label))
                        plan.append((seed, arm))
                    continue
                state = run_state(directory, config)  # again: the holder may have finished it
                if state == "finished":
                    done.skipped.append(name)
                    continue
                if log:
                    print(f"[study] {name} ({state}) -> {directory}", flush=True)
                training = True
                train(directory, config, state, label_aware, deadline, progress)
        except DeadlineError:
            log_run(study, name, time.perf_counter() - started, finished=False)
            done.stopped = name
            done.pending.extend(f"{a.label} seed {s}" for s, a in plan[i:])
            break
        except KeyboardInterrupt:  # Ctrl-C or SIGTERM: the time trained so far still counts
            if training:
                log_run(study, name, time.perf_counter() - started, finished=False)
            raise
        log_run(study, name, time.perf_counter() - started, finished=True)
        done.finished.append(name)
    done.wall_time_s = time.monotonic() - start
    return done


def log_run(study: Study, name: str, seconds: float, finished: bool) -> None:
    """Append the wall time of run ``name`` (training and final evaluation, this process's
    part) to ``study_log.jsonl`` in the study folder, as soon as the run ends, stops at the
    deadline or is interrupted (Ctrl-C, SIGTERM), so a process killed later loses no earlier
    run's time; the report sums these lines."""
    study.out.mkdir(parents=True, exist_ok=True)
    record = {
        "run": name,
        "finished": finished,
        "wall_time_s": seconds,
        "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    append_line(study.out / STUDY_LOG, json.dumps(record))
