"""What a study's comparisons say read together (issue 40): arms that trained identically,
comparisons that repeat one another because of them, and the Holm correction of the
study's p-values (:func:`~.stats.holm`) for its exploratory and its pre-registered
(``primary``) comparisons.

Two arms are **identical** when, on every seed the later arm (in the config's order) ran,
the earlier ran too and every measured number matches bit for bit: the study's metric,
the ``also_report`` keys and the final encoder's geometry in ``final.json``, and the
convergence curve and the metric at every evaluated epoch. (The logged loss values may
differ: FlatNCE's loss is not DCL's, its gradient is.) The later arm is then reported once,
as "identical to" the earlier, and a comparison that becomes another one when each arm is
replaced by its earlier twin is not listed again (``duplicate_of``). Such a duplicate is
the same test on the same numbers, so the Holm family counts it once.
"""

from __future__ import annotations

from typing import Any

from .config import Study
from .records import RunRecord
from .stats import Paired, adjusted_verdict, holm

# final.json: Wang & Isola (2020) Eqs. 4-5; label-aware runs add LASCon §4.2's versions
GEOMETRY = ("alignment", "uniformity", "label_alignment", "label_uniformity")

# why two losses train identically, where a test of the package shows it
REASONS = {
    frozenset({"flatnce", "dcl"}): (
        "same gradients (FlatNCE's gradient is DCL's: tests/losses/test_infonce.py)"
    ),
}


def _measured(study: Study, run: RunRecord) -> tuple[Any, ...]:
    """Every number of ``run`` the report reads: final values and evaluated curves."""
    keys = (study.metric, *study.also_report, *GEOMETRY)
    curves = list(dict.fromkeys((study.convergence_settings()["metric"], study.metric)))
    return (
        tuple(run.final.get(k) for k in keys),
        tuple(tuple(sorted(run.series(k).items())) for k in curves),
    )


def identical_arms(study: Study, by_arm: dict[str, dict[int, RunRecord]]) -> dict[str, Any]:
    """``{later arm: {"same_as", "seeds", "reason"}}`` for every arm identical to an
    earlier one (see the module docstring); each points at the earliest such arm."""
    found: dict[str, Any] = {}
    labels = [arm.label for arm in study.arms]
    for i, label in enumerate(labels):
        runs = by_arm.get(label, {})
        if not runs:
            continue
        for earlier in labels[:i]:
            if earlier in found or not set(runs) <= set(by_arm.get(earlier, {})):
                continue
            if all(
                _measured(study, run) == _measured(study, by_arm[earlier][s])
                for s, run in runs.items()
            ):
                losses = frozenset({study.arm(label).config.loss, study.arm(earlier).config.loss})
                found[label] = {
                    "same_as": earlier,
                    "seeds": sorted(runs),
                    "reason": REASONS.get(losses, ""),
                }
                break
    return found


def mark_duplicates(comparisons: dict[str, Any], identical: dict[str, Any]) -> None:
    """Set ``duplicate_of`` on each comparison that repeats an earlier one once identical
    arms are replaced by their twins (``"identical arms"`` when it compares twins)."""
    twin = {label: entry["same_as"] for label, entry in identical.items()}
    seen: dict[tuple[str, str], str] = {}
    for name, comp in comparisons.items():
        key = (twin.get(comp["arm"], comp["arm"]), twin.get(comp["vs"], comp["vs"]))
        if key[0] == key[1]:
            comp["duplicate_of"] = "identical arms"
        elif key in seen:
            comp["duplicate_of"] = seen[key]
        else:
            seen[key] = name


def _p(comp: dict[str, Any]) -> float | None:
    return comp["paired"]["p"] if comp["paired"] else None


def holm_within(comparisons: dict[str, Any]) -> None:
    """Set ``holm_p``: each comparison's p adjusted over the study's distinct comparisons
    (a duplicate takes the value of the comparison it repeats)."""
    distinct = [name for name, c in comparisons.items() if "duplicate_of" not in c]
    for name, value in zip(distinct, holm([_p(comparisons[n]) for n in distinct]), strict=True):
        comparisons[name]["holm_p"] = value
    for comp in comparisons.values():
        other = comparisons.get(comp.get("duplicate_of", ""))
        if "duplicate_of" in comp:
            comp["holm_p"] = other["holm_p"] if other else None


def primary_results(
    study: Study, comparisons: dict[str, Any], paired_by_name: dict[str, Paired | None]
) -> list[dict[str, Any]]:
    """The study's pre-registered comparisons: raw p, p adjusted by Holm over the study's
    own primaries, and the verdict read from that adjusted p (:func:`~.stats.adjusted_verdict`)
    beside the interval's. The paper-level reading, over every confirmation study of the
    paper, is :mod:`.confirm`'s."""
    names = [f"{arm} vs {vs}" for arm, vs in study.primary]
    adjusted = holm([_p(comparisons[n]) for n in names])
    out = []
    for name, p_holm in zip(names, adjusted, strict=True):
        comp = comparisons[name]
        out.append(
            {
                "comparison": name,
                "arm": comp["arm"],
                "vs": comp["vs"],
                "p": _p(comp),
                "holm_p_study": p_holm,
                "converged": comp["converged"],
                "verdict": adjusted_verdict(
                    paired_by_name[name],
                    p_holm,
                    study.better,
                    comp["converged"],
                    study.min_seeds,
                    study.confidence,
                ),
                "interval_verdict": comp["interval_verdict"],
            }
        )
    return out
