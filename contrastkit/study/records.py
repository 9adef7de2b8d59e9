"""A study's finished runs, kept in the study folder so a later session reuses them.

Run directories hold checkpoints (megabytes each) and are not committed; a study folder
is. :func:`write_records` copies what the report needs of every finished run into
``<study folder>/runs.jsonl``, one line per run::

    {"arm": "<label>", "seed": 0, "final": {...final.json...},
     "history": [{"epoch": 1, "loss": ..., "knn_accuracy": ...}, ...]}

``history`` keeps the scalar fields of each ``metrics.jsonl`` record; per-step traces are
dropped, their spread kept (:func:`_scalars`). A run whose line is there, with the study's
config and epochs (its data paths and execution, :data:`ENVIRONMENT_KEYS`, aside),
counts as finished even when its run directory is gone (:meth:`RunRecord.matches`): the
runner skips it and the report reads it from the line.
Raising a study's epochs needs the checkpoint, so a run that exists only as a line is
trained again from the start.
"""

from __future__ import annotations

import json
import statistics
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..rundir import atomic_write_text
from ..training import FINAL, METRICS, RUN_IGNORED, TRACE_SUFFIX, TrainConfig

RECORDS = "runs.jsonl"


@dataclass(frozen=True)
class RunRecord:
    """What a finished run left: its ``final.json`` and its per-epoch history."""

    final: dict[str, Any]
    history: list[dict[str, Any]]

    @classmethod
    def from_directory(cls, directory: Path) -> RunRecord:
        final = json.loads((directory / FINAL).read_text())
        lines = (directory / METRICS).read_text().splitlines()
        history = [_scalars(json.loads(line)) for line in lines if line.strip()]
        return cls(final, history)

    def series(self, key: str) -> dict[int, float]:
        """``key`` by epoch over the run's history; the final evaluation's value counts as
        the last epoch's when the history did not log ``key`` then (a metric measured at
        ``final_eval_at``'s epochs and at the end, such as the linear probe)."""
        out = {int(r["epoch"]): float(r[key]) for r in self.history if key in r}
        last = int(self.final.get("epochs", 0))
        value = self.final.get(key)
        if last not in out and isinstance(value, int | float) and not isinstance(value, bool):
            out[last] = float(value)
        return out

    def matches(self, config: TrainConfig) -> bool:
        """Whether this run is ``config``'s run: same config and epochs."""
        return int(self.final["epochs"]) == config.epochs and not config.differences(
            self.final["config"], RUN_IGNORED
        )


def code_versions(runs: Iterable[RunRecord]) -> dict[str, int]:
    """How many of ``runs`` each code trained (:func:`contrastkit.provenance.code_info` in
    their ``final.json``): ``<commit, 10 digits>``, with ``+ changes`` when the package
    differed from it; ``contrastkit <version>`` without a commit; ``not recorded`` for runs
    from before ``final.json`` carried it. Most runs first."""
    names = []
    for run in runs:
        commit, version = run.final.get("git_commit"), run.final.get("contrastkit_version")
        if commit:
            names.append(f"{commit[:10]}" + (" + changes" if run.final.get("git_dirty") else ""))
        else:
            names.append(f"contrastkit {version}" if version else "not recorded")
    return dict(Counter(names).most_common())


def _scalars(record: dict[str, Any]) -> dict[str, Any]:
    """The scalar fields of one ``metrics.jsonl`` record, plus the spread of each per-step
    trace as ``<name>_step_sd`` (population standard deviation over the epoch's steps):
    how much, e.g., MACL's temperature moves from batch to batch, which its epoch mean hides."""
    out = {k: v for k, v in record.items() if isinstance(v, int | float | str | None)}
    for key, trace in record.items():
        if key.endswith(TRACE_SUFFIX) and isinstance(trace, list) and len(trace) > 1:
            out[f"{key.removesuffix(TRACE_SUFFIX)}_step_sd"] = statistics.pstdev(trace)
    return out


def load_records(folder: Path) -> dict[tuple[str, int], RunRecord]:
    """The runs recorded in ``folder/runs.jsonl`` by (arm label, seed); ``{}`` if none."""
    path = folder / RECORDS
    if not path.exists():
        return {}
    out = {}
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            out[(str(row["arm"]), int(row["seed"]))] = RunRecord(row["final"], row["history"])
        except (ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"{path}:{number}: not a run record ({exc})") from None
    return out


def write_records(folder: Path, runs: dict[tuple[str, int], RunRecord]) -> Path:
    """Write ``runs`` to ``folder/runs.jsonl`` (atomically), sorted by arm and seed."""
    lines = [
        json.dumps(
            {"arm": label, "seed": seed, "final": run.final, "history": run.history},
            allow_nan=True,
        )
        for (label, seed), run in sorted(runs.items())
    ]
    path = folder / RECORDS
    atomic_write_text(path, "".join(line + "\n" for line in lines))
    return path
