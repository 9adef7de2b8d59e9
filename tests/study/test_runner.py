"""``contrastkit study``: resumable runs, the time limit, and the report files."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from pathlib import Path

import pytest

from contrastkit.cli import main
from contrastkit.study import claims, load_study, run_study, write_report
from contrastkit.study import runner as runner_module
from contrastkit.study.claims import claim_path
from contrastkit.study.remaining import duration, remaining
from contrastkit.study.report_text import _evaluation_time
from contrastkit.training import run_state

from .tiny import TINY, held_claim, write_study


def _study(tmp_path: Path, arms: list[dict], seeds: list[int], **extra: object) -> Path:
    return write_study(tmp_path / "study.yaml", arms=arms, seeds=seeds, **extra)


def test_finished_runs_are_skipped_and_the_report_is_written(tmp_path: Path) -> None:
    path = _study(tmp_path, [{"label": "ntxent", "loss": "ntxent"}], [0], min_seeds=1)
    study = load_study(path)
    first = run_study(study, log=False)
    assert first.finished == ["ntxent seed 0"] and not first.skipped
    final = study.runs_dir / "ntxent" / "seed0" / "final.json"
    stamp = final.stat().st_mtime_ns
    second = run_study(study, log=False)
    assert second.skipped == ["ntxent seed 0"] and not second.finished
    assert final.stat().st_mtime_ns == stamp  # not retrained
    results = write_report(study, "cmd")
    assert results["runs_finished"] == 1 and results["arms"]["ntxent"]["seeds"] == [0]
    for name in ("REPORT.md", "results.json", "curves.png", "differences.png"):
        assert (study.out / name).exists()
    assert "dcl beats ntxent" in (study.out / "REPORT.md").read_text()


def test_max_minutes_stops_between_epochs_and_the_rerun_continues_exactly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    arms = [{"label": "ntxent", "loss": "ntxent"}]
    straight = load_study(_study(tmp_path / "a", arms, [0]))
    run_study(straight, log=False)
    study = load_study(_study(tmp_path / "b", arms, [0]))
    clock = iter(range(0, 10_000, 60))  # every call to the clock advances one minute
    monkeypatch.setattr(runner_module.time, "monotonic", lambda: float(next(clock)))
    # start 0, deadline 150 s; run check 60, epoch 1 check 120, epoch 2 check 180: stop
    stopped = run_study(study, max_minutes=2.5, log=False)
    assert stopped.stopped == "ntxent seed 0" and stopped.pending == ["ntxent seed 0"]
    directory = study.runs_dir / "ntxent" / "seed0"
    assert not (directory / "final.json").exists()
    assert len((directory / "metrics.jsonl").read_text().splitlines()) == 1
    monkeypatch.undo()
    resumed = run_study(study, log=False)
    assert resumed.finished == ["ntxent seed 0"]
    a = json.loads((straight.runs_dir / "ntxent" / "seed0" / "final.json").read_text())
    b = json.loads((directory / "final.json").read_text())
    assert a["knn_accuracy"] == b["knn_accuracy"] and a["alignment"] == b["alignment"]
    # each part of the run logged its wall time as it ended; the report sums the parts
    log = [json.loads(x) for x in (study.out / "study_log.jsonl").read_text().splitlines()]
    parts = [(r["run"], r["finished"]) for r in log]
    assert parts == [("ntxent seed 0", False), ("ntxent seed 0", True)]
    assert all(r["wall_time_s"] > 0 for r in log)
    wall = write_report(study, "cmd")["wall_time"]
    assert wall["total_s"] == pytest.approx(log[0]["wall_time_s"] + log[1]["wall_time_s"])
    # evaluation: the seconds the run logged after each epoch and for its final evaluation
    logged = [json.loads(x) for x in (directory / "metrics.jsonl").read_text().splitlines()]
    evaluation = sum(r["eval_time_s"] for r in logged) + b["final_eval_time_s"]
    assert wall["eval_runs"] == 1 and wall["eval_s"] == pytest.approx(evaluation)
    assert (
        f"evaluation (after epochs and final): {evaluation / 60:.1f} min."
        in (study.out / "REPORT.md").read_text()
    )


def test_more_epochs_extend_finished_runs_and_other_configs_are_refused(tmp_path: Path) -> None:
    arms = [{"label": "ntxent", "loss": "ntxent"}]
    study = load_study(_study(tmp_path, arms, [0]))
    run_study(study, log=False)
    longer = load_study(_study(tmp_path, arms, [0], base={**TINY, "epochs": 3}))
    assert (
        run_state(longer.runs_dir / "ntxent" / "seed0", runner_module.seeded(longer.arms[0], 0))
        == "partial"
    )
    other = load_study(_study(tmp_path, [{"label": "ntxent", "loss": "dcl"}], [0]))
    with pytest.raises(ValueError, match="differs in: loss"):
        run_study(other, log=False)


def test_runs_under_a_length_dependent_schedule_are_not_extended(tmp_path: Path) -> None:
    arms = [{"label": "ntxent", "loss": "ntxent"}]
    cosine = {**TINY, "schedule": "warmup_cosine"}
    run_study(load_study(_study(tmp_path, arms, [0], base=cosine)), log=False)
    longer = load_study(_study(tmp_path, arms, [0], base={**cosine, "epochs": 3}))
    with pytest.raises(ValueError, match="cannot be continued to another number of epochs"):
        run_study(longer, log=False)
    assert runner_module.status(longer) == {("ntxent", 0): "other config"}


def test_bad_study_configs_are_one_line_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    path = _study(tmp_path, [{"label": "dcl", "loss": "dcl"}], [0])  # no baseline arm
    assert main(["study", str(path), "--report-only"]) == 2
    assert "'ntxent' is not an arm" in capsys.readouterr().err
    path = _study(tmp_path, [{"label": "ntxent", "loss": "ntxent"}], [0], colour="red")
    assert main(["study", str(path)]) == 2
    assert "unknown study key(s) colour" in capsys.readouterr().err
    path = _study(tmp_path, [{"label": "ntxent", "loss": "ntxent"}], [0])
    assert main(["study", str(path), "--seeds", "5"]) == 2
    assert main(["study", str(path), "--max-minutes", "0"]) == 2
    assert not (tmp_path / "out" / "runs").exists()  # nothing trained on bad input


def test_a_run_claimed_by_a_live_process_is_left_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _study(tmp_path, [{"label": "ntxent", "loss": "ntxent"}], [0, 1])
    study = load_study(path)
    busy = study.runs_dir / "ntxent" / "seed0"
    dead = study.runs_dir / "ntxent" / "seed1"
    with held_claim(busy, "1"):
        claim_path(dead).write_text("999999999")  # left by a process that has ended
        done = run_study(study, log=False)
        assert main(["study", str(path), "--no-report"]) == 0
    assert done.busy == ["ntxent seed 0"] and done.finished == ["ntxent seed 1"]
    assert not (busy / "final.json").exists() and not claim_path(dead).exists()
    assert "0 runs finished now, 1 already finished, 0 pending, 1 held by other processes" in (
        capsys.readouterr().out
    )


def test_a_run_held_at_the_first_ask_is_asked_for_again_after_the_pass(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    study = load_study(_study(tmp_path, [{"label": "ntxent", "loss": "ntxent"}], [0, 1]))
    first = study.runs_dir / "ntxent" / "seed0"
    real_train = runner_module.train
    with contextlib.ExitStack() as holder:
        holder.enter_context(held_claim(first, "1"))

        def holder_ends_during_seed_1(directory: Path, *args: object) -> None:
            holder.close()  # it was killed, or was a --status probe's instant
            real_train(directory, *args)

        monkeypatch.setattr(runner_module, "train", holder_ends_during_seed_1)
        done = run_study(study, log=False)
    assert done.finished == ["ntxent seed 1", "ntxent seed 0"] and not done.busy
    assert (first / "final.json").exists()


def test_also_report_tabulates_extra_metrics(tmp_path: Path) -> None:
    arms = [{"label": "ntxent", "loss": "ntxent"}]
    path = _study(tmp_path, arms, [0, 1], metric="linear_accuracy", also_report=["knn_accuracy"])
    study = load_study(path)
    run_study(study, log=False)
    results = write_report(study, "cmd")
    also = results["arms"]["ntxent"]["also"]["knn_accuracy"]
    finals = [
        json.loads((study.runs_dir / "ntxent" / f"seed{s}" / "final.json").read_text())
        for s in (0, 1)
    ]
    assert also["mean"] == pytest.approx(sum(f["knn_accuracy"] for f in finals) / 2)
    assert "knn_accuracy [95 % CI]" in (study.out / "REPORT.md").read_text()


def test_readme_rows_carry_interval_seeds_epochs_and_verdict() -> None:
    from contrastkit.study.report import readme_rows

    results = {
        "paper": "MACL",
        "table": "Table 9",
        "metric": "linear_accuracy",
        "epochs": 30,
        "comparisons": {
            "macl vs ntxent": {
                "paired": {
                    "seeds": [0, 1, 2],
                    "difference": {"mean": 0.01, "low": -0.002, "high": 0.022, "n": 3},
                    "p": 0.0712,
                },
                "holm_p": 0.1424,
                "verdict": "not converged",
                "interval_verdict": "within noise",
            },
            # no seed finished by both arms: no row
            "dcl vs ntxent": {"paired": None, "verdict": "too few seeds"},
        },
    }
    (row,) = readme_rows(results, "docs/studies/x")
    assert "[MACL Table 9](docs/studies/x/REPORT.md)" in row
    assert "| linear Δ 0.0100 [-0.0020, 0.0220] |" in row and "| 3 × 30 |" in row
    assert "| 0.071 | 0.142 |" in row  # raw p, then Holm p within the study
    assert "**not converged** (interval: within noise)" in row


def test_why_section_gives_geometry_and_the_losses_last_epoch_diagnostics(
    tmp_path: Path,
) -> None:
    from contrastkit.study.records import RunRecord
    from contrastkit.study.report import collect, markdown

    arms = [{"label": "ntxent", "loss": "ntxent"}, {"label": "macl", "loss": "macl"}]
    study = load_study(_study(tmp_path, arms, [0, 1], metric="linear_accuracy"))

    def run(seed: int, align: float, temps: tuple[float, float] | None) -> RunRecord:
        final = {"linear_accuracy": 0.9, "train_time_s": 1.0, "alignment": align}
        final["uniformity"] = -2.0 - seed
        history = [{"epoch": e, "loss": 1.0, "knn_accuracy": 0.8} for e in (1, 2)]
        if temps is not None:  # only the last epoch's diagnostics count
            history[0]["temperature"], history[1]["temperature"] = temps
            history[1]["tau_pos/head0"] = temps[1]  # a per-head breakdown: not tabulated
        return RunRecord(final, history)

    runs = {("ntxent", 0): run(0, 0.4, None), ("ntxent", 1): run(1, 0.6, None)}
    runs |= {("macl", 0): run(0, 0.5, (9.0, 0.12)), ("macl", 1): run(1, 0.5, (9.0, 0.14))}
    for seed, run_record in enumerate((runs["macl", 0], runs["macl", 1], runs["ntxent", 0])):
        run_record.final["label_alignment"] = 1.0 + seed  # LASCon §4.2, label-aware runs
    results = collect(study, runs)
    assert results["arms"]["macl"]["why"]["label_alignment"]["mean"] == pytest.approx(1.5)
    assert "label_alignment" not in results["arms"]["ntxent"]["why"]  # not every seed has it
    ntxent, macl = results["arms"]["ntxent"]["why"], results["arms"]["macl"]["why"]
    assert set(ntxent) == {"alignment", "uniformity"}  # no loss, epoch or kNN columns
    assert ntxent["alignment"]["mean"] == pytest.approx(0.5)
    assert ntxent["uniformity"]["mean"] == pytest.approx(-2.5)
    assert macl["temperature"]["mean"] == pytest.approx(0.13) and "tau_pos/head0" not in macl
    assert macl["alignment"]["low"] == macl["alignment"]["high"] == pytest.approx(0.5)
    text = markdown(results, "cmd", {})
    assert "| arm | alignment | uniformity | label_alignment | temperature |" in text
    assert "| ntxent | 0.5000 [" in text and "| 0.1300 [" in text and "| - |" in text


def test_status_names_every_runs_state_and_trains_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    arms = [{"label": "ntxent", "loss": "ntxent"}]
    path = _study(tmp_path, arms, [0, 1, 2])
    study = load_study(path)
    run_study(study, log=False, seeds=[0, 1])
    write_report(study, "cmd")  # seeds 0 and 1 go to runs.jsonl
    shutil.rmtree(study.runs_dir / "ntxent" / "seed1")
    with held_claim(study.runs_dir / "ntxent" / "seed2", "1"):
        assert runner_module.status(study) == {
            ("ntxent", 0): "finished",
            ("ntxent", 1): "finished (runs.jsonl)",
            ("ntxent", 2): "new, claimed by pid 1",
        }
    assert main(["study", str(path), "--status"]) == 0
    out = capsys.readouterr().out
    assert "[study] tiny: 2 of 3 runs finished; 2 epochs and 1 final evaluations left: " in out
    assert " at the pace logged so far (training " in out
    for seeds in (["1,2"], ["1", "2"], ["1,", "2"]):
        assert main(["study", str(path), "--status", "--seeds", *seeds]) == 0
        out = capsys.readouterr().out
        assert "seed 0" not in out and "[study] tiny: 1 of 2 runs finished" in out
    assert main(["study", str(path), "--status", "--seeds", "1", "x"]) == 2
    assert "--seeds must be integers (commas or spaces), got '1 x'" in capsys.readouterr().err
    assert main(["study", str(path), "--status", "--arms", "dcl"]) == 2  # not an arm
    assert main(["study", str(path), "--report-only", "--seeds", "1"]) == 2
    assert "--seeds and --arms choose the runs" in capsys.readouterr().err
    assert not (study.runs_dir / "ntxent" / "seed2").exists()  # nothing trained
    longer = load_study(_study(tmp_path, arms, [0, 1, 2], base={**TINY, "epochs": 3}))
    states = runner_module.status(longer)
    assert states[("ntxent", 0)] == "epoch 2 of 3" and states[("ntxent", 1)] == "new"
    # seed 0 continues from epoch 2; seed 1 (a 2-epoch record only) and seed 2 start over
    left = remaining(runner_module.survey(longer))
    metrics = (study.runs_dir / "ntxent" / "seed0" / "metrics.jsonl").read_text().split("\n")
    times = [json.loads(line)["epoch_time_s"] for line in metrics if line]
    assert (left.epochs, left.runs) == (1 + 3 + 3, 3) and left.final_s is None
    assert len(times) == 2 and left.epoch_s == pytest.approx(sum(times) / 2)


def test_status_divides_the_time_left_among_the_processes_at_work(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _study(tmp_path, [{"label": "ntxent", "loss": "ntxent"}], [0, 1, 2])
    study = load_study(path)
    run_study(study, log=False, seeds=[0])
    seed1, seed2 = (study.runs_dir / "ntxent" / f"seed{k}" for k in (1, 2))
    asked: list[Path] = []

    def holder(directory: Path) -> int | None:
        asked.append(directory)
        return claims.holder(directory)

    monkeypatch.setattr(runner_module, "holder", holder)
    with held_claim(seed1, "1"):
        claim_path(seed2).write_text("999999999")  # left by a process that has ended
        assert main(["study", str(path), "--status"]) == 0
        assert "processes at work" not in capsys.readouterr().out  # one live holder
        assert sorted(asked) == sorted(study.runs_dir / "ntxent" / f"seed{k}" for k in range(3))
        with held_claim(seed2, str(os.getpid())):
            assert main(["study", str(path), "--status"]) == 0
            seconds = remaining(runner_module.survey(study)).seconds
    out = capsys.readouterr().out
    assert f"; 2 processes at work now: about {duration(seconds / 2)}\n" in out


def test_only_label_aware_arms_make_a_study_label_aware(tmp_path: Path) -> None:
    from contrastkit.images import ImageTrainer
    from contrastkit.training import trainer_class

    ntxent = {"label": "ntxent", "loss": "ntxent"}
    images = load_study(_study(tmp_path / "a", [ntxent], [0], base={**TINY, "dataset": "cifar10"}))
    assert not runner_module.label_aware_study(images)  # kept its image protocol
    assert trainer_class(images.arms[0].config) is ImageTrainer
    supcon = {"label": "supcon", "framework": "supervised", "loss": "supcon"}
    mixed = load_study(_study(tmp_path / "b", [ntxent, supcon], [0]))
    assert runner_module.label_aware_study(mixed)


def test_the_wall_time_line_says_how_many_runs_logged_their_evaluation() -> None:
    assert _evaluation_time({"eval_runs": 0, "eval_s": 0.0}, 3) == "."  # runs before the field
    part = _evaluation_time({"eval_runs": 1, "eval_s": 120.0}, 3)
    assert part == "; evaluation (after epochs and final): 2.0 min (1 of 3 runs logged it)."
    assert _evaluation_time({"eval_runs": 3, "eval_s": 30.0}, 3).endswith(": 0.5 min.")


def test_a_partial_study_has_no_verdict_and_best_dev_selection_is_reported(
    tmp_path: Path,
) -> None:
    """REPORT.md of a partial study reads its comparisons as interim (as the README and
    CLAIMS.md do); runs that keep their best dev model report its step, and a step 0 (the
    untrained encoder selected) is called out."""
    from contrastkit.study.records import RunRecord
    from contrastkit.study.report import collect, markdown

    arms = [{"label": "ntxent", "loss": "ntxent"}, {"label": "macl", "loss": "macl"}]
    settings = {"metric": "linear_accuracy", "min_seeds": 2, "convergence": {"window": 1.0}}
    study = load_study(_study(tmp_path, arms, [0, 1, 2], **settings))

    def run(value: float, best_step: int) -> RunRecord:
        final = {"linear_accuracy": value, "train_time_s": 1.0, "best_step": best_step}
        return RunRecord(final, [{"epoch": e, "knn_accuracy": 0.8} for e in (1, 2)])

    runs = {("ntxent", s): run(0.80 + 0.01 * s, 0) for s in (0, 1)}
    runs |= {("macl", s): run(0.85 + 0.01 * s, 16 * (s + 1)) for s in (0, 1)}
    text = markdown(collect(study, runs), "cmd", {})
    assert "| interim: 4 of 6 runs, no verdict |" in text and "**holds**" not in text
    assert "its step per seed: ntxent 0, 0; macl 16, 32." in text
    assert "**ntxent: the untrained encoder was selected in 2 of 2 seeds**" in text
    assert "macl: the untrained" not in text
    runs |= {("ntxent", 2): run(0.82, 0), ("macl", 2): run(0.87, 48)}
    text = markdown(collect(study, runs), "cmd", {})
    assert "interim" not in text and "**holds**" in text
