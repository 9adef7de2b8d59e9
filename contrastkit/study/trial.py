"""A study's trial on this machine before its runs (``contrastkit study CONFIG --trial N``).

A study declared for a GPU can take a day; a wrong data path, an arm that does not fit in
memory or a pace ten times slower than expected should show in minutes. :func:`run_trial`
trains every arm once, on the study's first seed, for ``N`` epochs in a temporary folder
(nothing is written to the study's runs or folder), through the study's own trainer and
final evaluation, and measures three paces per arm:

* training: the median ``epoch_time_s`` of the trial's epochs after the first (the first
  also pays one-time costs: compilation, caches, allocator warm-up), of the only one when
  ``N = 1``;
* one evaluation after an epoch: the mean ``eval_time_s`` of the epochs that evaluated
  (every ``eval_every``-th and the last);
* the final evaluation: ``final_eval_time_s``.

The work the study has left (:func:`~.remaining.remaining`: partial runs from their last
epoch, finished and recorded runs not at all) is then priced per arm at that arm's paces.
An arm that fails is reported with its error, and the other arms still run.
"""

from __future__ import annotations

import dataclasses
import json
import statistics
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ..rundir import read_jsonl
from ..training import FINAL, METRICS, TrainConfig
from .config import Arm, Study
from .remaining import Remaining, format_seconds, remaining
from .runner import label_aware_study, seeded, survey, train


@dataclass(frozen=True)
class ArmTrial:
    """One arm's trial: its paces and the priced work it has left, or its error."""

    label: str
    left: Remaining | None = None  # the arm's remaining work at the trial's paces
    eval_once_s: float | None = None  # one evaluation after an epoch
    error: str | None = None

    def describe(self, pace: str = "this trial's pace") -> str:
        """One line: the error, or ``ok``, one evaluation's seconds and the work left."""
        if self.error is not None:
            return f"{self.label}: FAILED: {self.error}"
        assert self.left is not None
        once = self.eval_once_s
        once_text = "" if once is None else f", one evaluation {format_seconds(once)} s"
        return f"{self.label}: ok{once_text}; {self.left.describe(pace)}"


def evaluations(epochs: int, eval_every: int) -> int:
    """How many epochs of an ``epochs``-long run evaluate: every ``eval_every``-th, and the
    last."""
    return epochs // eval_every + (epochs % eval_every != 0)


def run_trial(
    study: Study, epochs: int, arms: list[str] | None = None, progress: bool = False
) -> list[ArmTrial]:
    """Train each arm (``arms``: a subset of labels) of ``study`` on its first seed for
    ``epochs`` epochs in a temporary folder and price its remaining work (module doc)."""
    if not isinstance(epochs, int) or epochs < 1:
        raise ValueError(f"--trial must be an integer number of epochs >= 1, got {epochs}")
    slots = survey(study)
    trials = []
    for arm in study.arms:
        if arms is not None and arm.label not in arms:
            continue
        left = remaining([s for s in slots if s.label == arm.label])
        try:
            trials.append(_trial(study, arm, epochs, left, progress))
        except Exception as exc:  # a trial reports every arm's failure, then goes on
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            trials.append(ArmTrial(arm.label, error=f"{type(exc).__name__}: {first}"))
    return trials


def _trial(study: Study, arm: Arm, epochs: int, left: Remaining, progress: bool) -> ArmTrial:
    config = TrainConfig.from_dict({**seeded(arm, study.seeds[0]).to_dict(), "epochs": epochs})
    with tempfile.TemporaryDirectory(prefix=f"contrastkit-trial-{arm.slug}-") as folder:
        directory = Path(folder) / "run"
        train(directory, config, "new", label_aware_study(study), None, progress)
        logged = read_jsonl(directory / METRICS)[0]
        final = json.loads((directory / FINAL).read_text())
    paces = [float(r["epoch_time_s"]) for r in logged if "epoch_time_s" in r]
    evaluated = [
        float(r["eval_time_s"])
        for r in logged
        if "eval_time_s" in r and (r["epoch"] % config.eval_every == 0 or r["epoch"] == epochs)
    ]
    once = statistics.fmean(evaluated) if evaluated else None
    study_epochs = arm.config.epochs
    priced = dataclasses.replace(  # a pace the trainer did not log stays unknown (named)
        left,
        epoch_s=statistics.median(paces[1:] or paces) if paces else None,
        eval_s=None
        if once is None
        else once * evaluations(study_epochs, arm.config.eval_every) / study_epochs,
        final_s=final.get("final_eval_time_s"),
    )
    return ArmTrial(arm.label, priced, once)
