"""What part of a study is left and how long it should take at the pace its runs have
logged so far (``contrastkit study --status``).

The estimate adds three costs, each measured on the machines that ran the study's runs:

* training: epochs left × the median ``epoch_time_s`` of every logged epoch;
* evaluation after epochs (kNN, the online probe): epochs left × the mean ``eval_time_s``
  per logged epoch (about zero on epochs that do not evaluate, so the mean spreads the
  ``eval_every`` cadence over the epochs);
* the final evaluation (linear probe, geometry, a modality's own tasks): unfinished runs ×
  the median ``final_eval_time_s`` of the finished runs' ``final.json``.

A cost no run has logged yet (no finished run, or runs written before these fields
existed) is named as unknown instead of guessed.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass
from typing import Any

from ..training import FINAL
from .runner import Slot


@dataclass(frozen=True)
class Remaining:
    """The work left in some slots of a study, and the logged pace of each kind of work
    (seconds; ``None`` when no run has logged it)."""

    epochs: int
    runs: int  # unfinished runs: one final evaluation each
    epoch_s: float | None  # median training seconds per epoch
    eval_s: float | None  # mean evaluation seconds per epoch
    final_s: float | None  # median seconds of a final evaluation

    def _costs(self) -> list[tuple[int, float | None, str, str]]:
        return [
            (self.epochs, self.epoch_s, "training", "per epoch"),
            (self.epochs, self.eval_s, "evaluation", "per epoch"),
            (self.runs, self.final_s, "final evaluation", "per run"),
        ]

    @property
    def seconds(self) -> float:
        """The seconds the known paces add up to (the unknown ones count nothing)."""
        return sum(count * pace for count, pace, _, _ in self._costs() if pace is not None)

    def describe(self, pace: str = "the pace logged so far") -> str:
        """One line: what is left, the hours it should take at ``pace``, and what they
        leave out."""
        if not self.runs:
            return "nothing left"
        text = f"{self.epochs} epochs and {self.runs} final evaluations left"
        costs = self._costs()
        known = [(count, rate, name, per) for count, rate, name, per in costs if rate is not None]
        if known:
            paces = ", ".join(
                f"{name} {format_seconds(rate)} s {per}" for _, rate, name, per in known
            )
            text += f": {duration(self.seconds)} at {pace} ({paces})"
        unknown = [name for _, rate, name, _ in costs if rate is None]
        if unknown:
            text += f"; not logged yet, so not counted: {', '.join(unknown)}"
        return text


def remaining(slots: list[Slot]) -> Remaining:
    """The work ``slots`` still have (a partial run from its last logged epoch; a run of
    another config counts whole) and the pace their logged epochs and finished runs set."""
    epochs = runs = 0
    epoch_s: list[float] = []
    eval_s: list[float] = []
    final_s: list[float] = []
    for slot in slots:
        done = slot.logged
        epoch_s += [float(r["epoch_time_s"]) for r in done if "epoch_time_s" in r]
        eval_s += [float(r["eval_time_s"]) for r in done if "eval_time_s" in r]
        if slot.state in ("finished", "recorded"):
            final = slot.record.final if slot.record else _final(slot)
            if "final_eval_time_s" in final:
                final_s.append(float(final["final_eval_time_s"]))
            continue
        reached = done[-1]["epoch"] if slot.state == "partial" and done else 0
        epochs += slot.config.epochs - reached
        runs += 1
    return Remaining(
        epochs,
        runs,
        statistics.median(epoch_s) if epoch_s else None,
        statistics.fmean(eval_s) if eval_s else None,
        statistics.median(final_s) if final_s else None,
    )


def _final(slot: Slot) -> dict[str, Any]:
    return json.loads((slot.directory / FINAL).read_text())


def duration(seconds: float) -> str:
    """``seconds`` in h, min or s, as its size asks."""
    if seconds >= 3600:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 60:.1f} min" if seconds >= 60 else f"{seconds:.0f} s"


def format_seconds(pace: float) -> str:
    """A pace in seconds: one decimal from 1 s up, two significant digits below."""
    return f"{pace:.1f}" if pace >= 1 else f"{pace:.2g}"
