"""Run directories, atomic files and checksummed checkpoints (issue 17 items 1, 2, 4, 7)."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from contrastkit.checkpoint_file import CheckpointError, atomic_torch_save, load_checkpoint
from contrastkit.cli import main
from contrastkit.rundir import (
    FAULT_ENV,
    atomic_dir,
    atomic_write_text,
    check_output_file,
    is_run_dir,
    prepare_run_dir,
    read_jsonl,
    removed_if_unused,
)
from contrastkit.training import (
    CHECKPOINT,
    FINAL,
    METRICS,
    TIMING_KEYS,
    TrainConfig,
    Trainer,
    run_state,
)

TINY = dict(dataset="digits", batch_size=256, feature_dim=8, width=2, proj_dim=8, knn_k=20)
TINY_FLAGS = [f"--{k.replace('_', '-')}={v}" for k, v in TINY.items()] + ["--no-progress"]


def test_prepare_run_dir_refuses_non_empty_and_bad_paths(tmp_path: Path) -> None:
    run = prepare_run_dir(tmp_path / "a" / "run")
    assert run.is_dir()
    (run / "history.json").write_text("{}")
    with pytest.raises(ValueError, match=r"already holds files .*history.json.*--overwrite"):
        prepare_run_dir(run)
    assert prepare_run_dir(run, resume=True) == run and (run / "history.json").exists()
    prepare_run_dir(run, overwrite=True)
    assert not any(run.iterdir())
    afile = tmp_path / "f"
    afile.write_text("x")
    with pytest.raises(ValueError, match="is a file"):
        prepare_run_dir(afile)
    with pytest.raises(ValueError, match=r"lies under .* which is a file"):
        prepare_run_dir(afile / "sub")
    with pytest.raises(ValueError, match="empty string"):
        prepare_run_dir("")
    with pytest.raises(ValueError, match="is a directory"):
        check_output_file(tmp_path)
    with pytest.raises(ValueError, match="which is a file"):
        check_output_file(afile / "out.json")


def test_a_failed_body_takes_back_only_the_empty_folders_it_found_missing(
    tmp_path: Path,
) -> None:
    kept = tmp_path / "kept"
    kept.mkdir()
    with pytest.raises(RuntimeError), removed_if_unused(kept / "a" / "b" / "run"):
        prepare_run_dir(kept / "a" / "b")  # the body made part of the path, then failed
        raise RuntimeError
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["kept"]

    with pytest.raises(RuntimeError), removed_if_unused(kept / "a" / "run"):
        (kept / "a" / "run").mkdir(parents=True)
        (kept / "a" / "note.txt").write_text("x")  # a parent gained a file: it stays
        raise RuntimeError
    assert sorted(p.name for p in kept.rglob("*")) == ["a", "note.txt"]

    with removed_if_unused(kept / "ok"):  # no error: what the body made stays
        (kept / "ok").mkdir()
    with pytest.raises(RuntimeError), removed_if_unused(None):
        raise RuntimeError
    assert (kept / "ok").is_dir()


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes anywhere")
def test_unwritable_out(tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    with pytest.raises(ValueError, match=r"not writable|cannot be created"):
        prepare_run_dir(locked / "run")


def _state() -> dict:
    rng = torch.zeros(5, dtype=torch.uint8)
    return {"model": {"w": torch.arange(64.0)}, "epoch": 3, "rng": rng}


@pytest.mark.parametrize("damage", ["empty", "truncated", "garbage", "flipped", "foreign", "keys"])
def test_damaged_checkpoints_give_one_line(tmp_path: Path, damage: str) -> None:
    path = tmp_path / "checkpoint.pt"
    atomic_torch_save(_state(), path)
    assert load_checkpoint(path, required=("model", "epoch"))["epoch"] == 3
    assert torch.load(path, weights_only=True)["epoch"] == 3  # still a plain torch file
    data = path.read_bytes()
    if damage == "empty":
        path.write_bytes(b"")
    elif damage == "truncated":
        path.write_bytes(data[: len(data) // 2])
    elif damage == "garbage":
        path.write_bytes(b"not a checkpoint at all\n" * 80)
    elif damage == "flipped":  # flip bytes inside the tensor data, keep the zip valid
        raw = bytearray(data)
        at = bytes(raw).find(torch.arange(64.0)[10:12].numpy().tobytes())
        raw[at : at + 8] = bytes(b ^ 0xFF for b in raw[at : at + 8])
        path.write_bytes(bytes(raw))
    elif damage == "foreign":
        torch.save([1, 2, 3], path)
    else:
        torch.save({"model": {}}, path)
    with pytest.raises(CheckpointError) as info:
        load_checkpoint(path, required=("model", "epoch"))
    assert str(path) in str(info.value) and "\n" not in str(info.value)


def test_kill_inside_an_atomic_write_keeps_the_old_file(tmp_path: Path) -> None:
    target = tmp_path / "final.json"
    target.write_text('{"old": true}')
    code = (
        "from contrastkit.rundir import atomic_write_text as w; import sys;"
        "w(sys.argv[1], '{\"new\": true}' * 1000)"
    )
    env = {**os.environ, FAULT_ENV: "final.json:1"}
    proc = subprocess.run([sys.executable, "-c", code, str(target)], env=env, check=False)
    assert proc.returncode == 137
    assert json.loads(target.read_text()) == {"old": True}


@pytest.mark.parametrize("mask", [0o022, 0o077])
def test_atomic_writes_get_the_mode_a_plain_write_gets(tmp_path: Path, mask: int) -> None:
    """Run files and caches are readable by whoever could read a file opened plainly (a
    shared cache, a colleague's final.json), not private to the writer."""
    old = os.umask(mask)
    try:
        (tmp_path / "plain.json").write_text("{}")
        atomic_write_text(tmp_path / "final.json", "{}")
    finally:
        os.umask(old)

    def mode(name: str) -> int:
        return (tmp_path / name).stat().st_mode & 0o777

    assert mode("final.json") == mode("plain.json") == 0o666 & ~mask


def test_read_jsonl_names_bad_line(tmp_path: Path) -> None:
    path = tmp_path / METRICS
    path.write_text('{"epoch": 1}\n{"epo')
    with pytest.raises(ValueError, match="line 2"):
        read_jsonl(path)
    assert read_jsonl(path, limit=1) == ([{"epoch": 1}], 2)


def _strip(recs: list[dict]) -> list[dict]:
    return [{k: v for k, v in r.items() if k not in TIMING_KEYS} for r in recs]


def test_kill_after_metrics_before_first_checkpoint_restarts_cleanly(tmp_path: Path) -> None:
    straight = Trainer(TrainConfig(**TINY, epochs=1), tmp_path / "a", False).fit()
    run = tmp_path / "b"
    Trainer(TrainConfig(**TINY, epochs=1), run, False).fit()
    (run / CHECKPOINT).unlink()  # the state a kill between the two writes leaves
    (run / FINAL).unlink()
    resumed = Trainer(TrainConfig(**TINY, epochs=1), run, False).fit(resume=True)
    assert [r["epoch"] for r in read_jsonl(run / METRICS)[0]] == [1]
    assert {k: v for k, v in resumed.items() if k not in TIMING_KEYS} == {
        k: v for k, v in straight.items() if k not in TIMING_KEYS
    }


def test_a_simcse_run_killed_in_its_first_epoch_restarts_and_can_be_replaced(
    tmp_path: Path,
) -> None:
    """Its best/ model and history.json, written before the first checkpoint, are what such
    a kill leaves: --resume restarts at epoch 1 (it refused), --overwrite replaces it."""
    run = tmp_path / "run"
    (run / "best").mkdir(parents=True)
    (run / "best" / "modules.json").write_text("[]")
    (run / "history.json").write_text("{}")
    Trainer(TrainConfig(**TINY, epochs=1), run, False).fit(resume=True)
    assert [r["epoch"] for r in read_jsonl(run / METRICS)[0]] == [1]
    killed = tmp_path / "killed"
    (killed / "best").mkdir(parents=True)
    (killed / "best" / "modules.json").write_text("[]")
    assert is_run_dir(killed) and not is_run_dir(killed / "best")
    (killed / "notes.txt").write_text("mine")  # anything else: not such a run
    assert not is_run_dir(killed)


@pytest.mark.parametrize(
    ("final", "match"),
    [
        ({"config": {}}, "'epochs' must be a count, got None"),
        ({"epochs": None, "config": {}}, "'epochs' must be a count, got None"),
        ({"epochs": 2}, "holds no 'config' mapping"),
    ],
)
def test_a_hand_edited_final_json_is_one_line(tmp_path: Path, final: dict, match: str) -> None:
    (tmp_path / FINAL).write_text(json.dumps(final))
    with pytest.raises(ValueError, match=match):
        run_state(tmp_path, TrainConfig(**TINY, epochs=1))


def test_resume_never_shortens_a_run(tmp_path: Path) -> None:
    """A checkpoint beyond --epochs trained nothing and rewrote final.json under the
    shorter config."""
    Trainer(TrainConfig(**TINY, epochs=2), tmp_path, False).fit()
    before = (tmp_path / FINAL).read_text()
    with pytest.raises(ValueError, match="checkpoint is at epoch 2, beyond --epochs 1"):
        Trainer(TrainConfig(**TINY, epochs=1), tmp_path, False).fit(resume=True)
    assert (tmp_path / FINAL).read_text() == before


@pytest.mark.parametrize("fails", [False, True])
def test_atomic_dir_replaces_a_filled_folder_whole(tmp_path: Path, fails: bool) -> None:
    """SimCSE's best/ model: a save that fails half-way keeps the last one whole."""
    best = tmp_path / "best"
    best.mkdir()
    (best / "model.bin").write_text("old")
    with contextlib.suppress(RuntimeError), atomic_dir(best, replace=True) as tmp:
        (tmp / "model.bin").write_text("new")
        if fails:
            raise RuntimeError("killed half-way")
    assert (best / "model.bin").read_text() == ("old" if fails else "new")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["best"]


def test_resume_needs_metrics_and_drops_records_after_checkpoint(tmp_path: Path) -> None:
    Trainer(TrainConfig(**TINY, epochs=1), tmp_path, False).fit()
    with (tmp_path / METRICS).open("a") as fh:
        fh.write('{"epoch": 2, "loss": 1.0}\n{"epo')  # a later epoch and a torn line
    Trainer(TrainConfig(**TINY, epochs=1), tmp_path, False).fit(resume=True)
    assert [r["epoch"] for r in read_jsonl(tmp_path / METRICS)[0]] == [1]
    (tmp_path / METRICS).unlink()
    with pytest.raises(ValueError, match=r"metrics\.jsonl' is missing"):
        Trainer(TrainConfig(**TINY, epochs=1), tmp_path, False).fit(resume=True)


def test_compare_resume_refuses_stale_final(tmp_path: Path, capsys) -> None:
    out = str(tmp_path / "C")
    base = ["compare", "--losses", "ntxent", "--out", out, *TINY_FLAGS]
    assert main([*base, "--epochs", "1"]) == 0
    summary = (tmp_path / "C" / "summary.json").read_text()
    capsys.readouterr()
    assert main([*base, "--epochs", "3", "--temperature", "0.5", "--resume"]) == 2
    err = capsys.readouterr().err
    assert "different config" in err and "loss_args" in err
    assert (tmp_path / "C" / "summary.json").read_text() == summary
    assert main([*base, "--epochs", "1"]) == 2  # no --resume: the directory is refused
    assert "already holds files" in capsys.readouterr().err
    final = (tmp_path / "C" / "ntxent" / "seed0" / FINAL).read_text()
    # run elsewhere (other device name, workers): the finished run is reused, not retrained
    assert main([*base, "--epochs", "1", "--device", "cpu", "--workers", "0", "--resume"]) == 0
    assert (tmp_path / "C" / "ntxent" / "seed0" / FINAL).read_text() == final


def test_compare_resume_does_not_extend_a_linear_decay_run(tmp_path: Path, capsys) -> None:
    base = ["compare", "--losses", "ntxent", "--out", str(tmp_path), *TINY_FLAGS]
    assert main([*base, "--epochs", "1", "--schedule", "linear"]) == 0
    capsys.readouterr()
    assert main([*base, "--epochs", "2", "--schedule", "linear", "--resume"]) == 2
    assert "schedule 'linear' sets the learning rate" in capsys.readouterr().err
    assert main([*base, "--epochs", "1", "--schedule", "linear", "--resume"]) == 0  # reused


def test_train_refuses_run_dir_without_checkpoint(tmp_path: Path, capsys) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / FINAL).write_text('{"kept": 1}')
    assert main(["train", "--epochs", "1", "--out", str(run), *TINY_FLAGS]) == 2
    assert "already holds files" in capsys.readouterr().err
    assert json.loads((run / FINAL).read_text()) == {"kept": 1}


def test_simcse_refuses_existing_run_before_loading_anything(tmp_path: Path, capsys) -> None:
    run = tmp_path / "run"
    (run / "best").mkdir(parents=True)
    (run / "history.json").write_text("{}")
    argv = ["simcse", "--train-file", str(tmp_path / "missing.txt"), "--out", str(run)]
    assert main(argv) == 2
    assert "already holds files" in capsys.readouterr().err
    assert (run / "history.json").read_text() == "{}"
