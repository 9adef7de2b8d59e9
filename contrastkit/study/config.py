"""A study: one paper table as arms × seeds, with its claim and verdict rule declared up
front in a YAML file (``configs/studies/*.yaml``).

Keys:

* ``name``, ``paper``, ``table``: identify the study; ``claim``: the paper's claim in one line;
* ``out``: the study folder (``REPORT.md``, ``results.json``, plots); runs go to
  ``<out>/runs`` unless ``runs_dir`` (or ``--runs-dir``) says otherwise;
* ``base``: :class:`~contrastkit.training.TrainConfig` fields shared by every arm
  (``epochs`` included: chosen so that the baseline's curve is flat);
* ``arms``: a list of mappings with a ``label`` and the config fields that differ, plus
  optionally ``vs`` (the arm or list of arms it is compared with; default ``baseline``)
  and ``claim``
  (``false``: reported, not judged, e.g. the baseline itself or an extra reference row);
* ``baseline``: the label of the arm every claim is measured against;
* ``seeds``; ``metric`` (a ``final.json`` key, default ``knn_accuracy``) and ``better``
  (``higher``/``lower``); ``confidence`` (0.95); ``min_seeds`` (3);
* ``also_report``: further ``final.json`` keys tabulated (mean and interval), not judged;
  ``metric`` and ``also_report`` must name numbers ``final.json`` holds (declared by the
  trainers and the registered modalities: :mod:`contrastkit.training.metrics`),
  and every arm's config, loss arguments and framework options are checked, before any run;
* ``primary``: the pre-registered comparison(s), ``{arm: A, vs: B}`` or a list of them,
  each one of the judged comparisons; a confirmation study declares it (with fresh seeds
  and one schedule) before any of its runs, and its verdict is read after a Holm
  correction across the primary comparisons of the same paper (issue 40);
* ``convergence``: ``metric`` (per-epoch key of ``metrics.jsonl``, default
  ``knn_accuracy``), ``window`` (0.2 = last 20 % of epochs), ``tolerance`` (0.005 =
  0.5 points), ``relative`` (for losses: the change as a share of the mean curve's range
  over the run, :data:`~.stats.RANGE`) and ``min_points`` (evaluations the window must
  hold; default 2, or what the curve's modality declares:
  :func:`contrastkit.training.metrics.min_points`, e.g. 4 for the STS-B dev curve of
  sentence runs).
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..training import ENVIRONMENT_KEYS, TrainConfig, flatten, load_yaml, merge_config
from ..training.metrics import final_metric_keys, is_final_metric, min_points
from .stats import ABSOLUTE, RANGE

KNOWN_KEYS = {
    "name",
    "paper",
    "table",
    "claim",
    "out",
    "runs_dir",
    "base",
    "arms",
    "baseline",
    "seeds",
    "metric",
    "better",
    "confidence",
    "min_seeds",
    "convergence",
    "notes",
    "also_report",
    "primary",
}


@dataclass
class Arm:
    """One row of the table: a label, its full run config and what it is compared with."""

    label: str
    config: TrainConfig
    vs: list[str]
    judged: bool

    @property
    def slug(self) -> str:
        return "".join(c if c.isalnum() or c in "-_." else "_" for c in self.label).strip("_")


@dataclass
class Study:
    """A validated study (see the module docstring for the keys)."""

    name: str
    paper: str
    table: str
    claim: str
    out: Path
    runs_dir: Path
    arms: list[Arm]
    baseline: str
    seeds: list[int]
    metric: str = "knn_accuracy"
    better: str = "higher"
    confidence: float = 0.95
    min_seeds: int = 3
    convergence: dict[str, Any] = field(default_factory=dict)
    notes: str = ""
    also_report: list[str] = field(default_factory=list)
    primary: list[tuple[str, str]] = field(default_factory=list)
    source: Path | None = None  # the config file, for its declaration dates (.declared)

    @property
    def epochs(self) -> int:
        return max(arm.config.epochs for arm in self.arms)

    def arm(self, label: str) -> Arm:
        for arm in self.arms:
            if arm.label == label:
                return arm
        raise KeyError(label)

    def rule(self) -> str:
        """The verdict rule, in words, as declared by the config."""
        side = "above" if self.better == "higher" else "below"
        other = "below" if side == "above" else "above"
        pct = f"{100 * self.confidence:g} %"
        conv = self.convergence_settings()
        unit = (
            "change (as a share of the curve's range over the run)"
            if conv["scale"] == RANGE
            else "change"
        )
        few = (
            f" or its window holds fewer than {conv['min_points']} evaluations"
            if conv["min_points"] > 2
            else ""
        )
        return (
            f"`holds` if the paired {pct} t-interval of ({self.metric}: arm − compared arm) "
            f"over the seeds both finished lies {side} 0; `reversed` if it lies {other} 0; "
            f"`within noise` otherwise; `not converged` if the {unit} of the mean "
            f"{conv['metric']} curve of either arm over the last {100 * conv['window']:g} % "
            f"of epochs (least-squares line) is not below {conv['tolerance']:g} in magnitude{few}; "
            f"`too few seeds` below {self.min_seeds} paired seeds."
        )

    def convergence_settings(self) -> dict[str, Any]:
        """The declared convergence keys with their defaults; ``scale`` says how the
        change is measured (:func:`~.stats.convergence`)."""
        conv = {
            "metric": "knn_accuracy",
            "window": 0.2,
            "tolerance": 0.005,
            "relative": False,
            **self.convergence,
        }
        conv.setdefault("min_points", min_points(conv["metric"]))
        conv["scale"] = RANGE if conv["relative"] else ABSOLUTE
        return conv


def check_final_key(key: str, where: str) -> None:
    """``ValueError`` (``where``: the config and field) unless ``key`` is a number
    ``final.json`` can hold, as the trainers and the registered modalities declare it
    (:func:`contrastkit.training.metrics.is_final_metric`); it suggests the closest
    declared keys."""
    if is_final_metric(key):
        return
    close = difflib.get_close_matches(key, sorted(final_metric_keys()), n=3)
    hint = f"; did you mean {' or '.join(close)}?" if close else ""
    raise ValueError(f"{where} {key!r} is not a number final.json holds{hint}")


def _require(data: dict[str, Any], key: str, kind: type, path: Path) -> Any:
    if key not in data:
        raise ValueError(f"study config {str(path)!r} needs {key!r}")
    if not isinstance(data[key], kind):
        raise ValueError(f"study config {str(path)!r}: {key!r} must be a {kind.__name__}")
    return data[key]


def check_settings(settings: Mapping[str, object] | None) -> dict[str, object]:
    """Machine settings for every arm (``--set``): only :data:`ENVIRONMENT_KEYS`."""
    settings = dict(settings or {})
    protocol = sorted(set(settings) - set(ENVIRONMENT_KEYS))
    if protocol:
        raise ValueError(
            f"--set {', '.join(protocol)}: a study's protocol is its config's; --set takes "
            f"where the data is and how runs execute: {', '.join(ENVIRONMENT_KEYS)}"
        )
    return settings


def load_study(
    path: str | Path,
    runs_dir: str | Path | None = None,
    out: str | Path | None = None,
    settings: Mapping[str, object] | None = None,
) -> Study:
    """Read and validate a study config; every arm's TrainConfig is built (and checked
    against its framework) before anything runs. ``settings`` (:func:`check_settings`)
    replace those fields in every arm: this machine's data paths, device, threads."""
    from ..frameworks import FRAMEWORK_OPTIONS, check_run

    settings = check_settings(settings)
    path = Path(path)
    data = load_yaml(path)
    unknown = sorted(set(data) - KNOWN_KEYS)
    if unknown:
        raise ValueError(
            f"unknown study key(s) {', '.join(unknown)}; known: {', '.join(sorted(KNOWN_KEYS))}"
        )
    base = flatten(dict(data.get("base") or {}))
    specs = _require(data, "arms", list, path)
    baseline = str(_require(data, "baseline", str, path))
    seeds = [int(s) for s in _require(data, "seeds", list, path)]
    if not seeds or len(set(seeds)) != len(seeds):
        raise ValueError(f"study config {str(path)!r}: seeds must be non-empty and unique")
    arms = []
    for spec in specs:
        if not isinstance(spec, dict) or "label" not in spec:
            raise ValueError(f"study config {str(path)!r}: every arm needs a 'label'")
        spec = flatten(dict(spec))
        label = str(spec.pop("label"))
        vs = spec.pop("vs", None)
        vs = [baseline] if vs is None else [str(v) for v in (vs if isinstance(vs, list) else [vs])]
        judged = bool(spec.pop("claim", label != baseline))
        values = {**merge_config(base, spec), **settings}
        try:
            config = TrainConfig.from_dict(values)
            options = {key: getattr(config, key) for key in FRAMEWORK_OPTIONS}
            check_run(config.framework, config.loss, config.loss_args, options)
        except ValueError as exc:  # every arm is checked before the first run trains
            raise ValueError(f"study config {str(path)!r}, arm {label!r}: {exc}") from None
        arms.append(Arm(label, config, vs, judged))
    labels = [a.label for a in arms]
    if len(set(labels)) != len(labels):
        raise ValueError(f"study config {str(path)!r}: arm labels must be unique, got {labels}")
    if len({a.slug for a in arms}) != len(arms):
        raise ValueError(f"study config {str(path)!r}: arm labels collide as directory names")
    for target in [baseline, *(v for arm in arms for v in arm.vs)]:
        if target not in labels:
            raise ValueError(f"study config {str(path)!r}: compared arm {target!r} is not an arm")
    better = str(data.get("better", "higher"))
    if better not in ("higher", "lower"):
        raise ValueError(f"study config {str(path)!r}: better must be 'higher' or 'lower'")
    metric = str(data.get("metric", "knn_accuracy"))
    also_report = [str(k) for k in data.get("also_report", [])]
    for key, what in [(metric, "metric"), *((k, "also_report") for k in also_report)]:
        check_final_key(key, f"study config {str(path)!r}: {what}")
    folder = Path(out or data.get("out") or Path("runs/studies") / path.stem)
    conv = dict(data.get("convergence") or {})
    bad = sorted(set(conv) - {"metric", "window", "tolerance", "relative", "min_points"})
    if bad:
        raise ValueError(f"study config {str(path)!r}: unknown convergence key(s) {bad}")
    primary = _primary(data.get("primary"), arms, path)
    return Study(
        name=str(data.get("name", path.stem)),
        paper=str(data.get("paper", "")),
        table=str(data.get("table", "")),
        claim=str(_require(data, "claim", str, path)),
        out=folder,
        runs_dir=Path(runs_dir or data.get("runs_dir") or folder / "runs"),
        arms=arms,
        baseline=baseline,
        seeds=seeds,
        metric=metric,
        better=better,
        confidence=float(data.get("confidence", 0.95)),
        min_seeds=int(data.get("min_seeds", 3)),
        convergence=conv,
        notes=str(data.get("notes", "")),
        also_report=also_report,
        primary=primary,
        source=path,
    )


def _primary(value: object, arms: list[Arm], path: Path) -> list[tuple[str, str]]:
    """The ``primary`` comparisons as (arm, compared arm) pairs, each a judged comparison."""
    if value is None:
        return []
    entries = value if isinstance(value, list) else [value]
    judged = {(a.label, v) for a in arms if a.judged for v in a.vs}
    out = []
    for entry in entries:
        pair = (
            (str(entry.get("arm")), str(entry.get("vs")))
            if isinstance(entry, dict) and set(entry) == {"arm", "vs"}
            else None
        )
        if pair is None or pair not in judged:
            raise ValueError(
                f"study config {str(path)!r}: primary must name judged comparisons as "
                f"{{arm: A, vs: B}} (A's 'vs' lists B), got {entry!r}"
            )
        out.append(pair)
    if len(set(out)) != len(out):
        raise ValueError(f"study config {str(path)!r}: primary lists a comparison twice")
    return out
