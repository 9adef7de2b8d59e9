"""Claims on a study's runs: one holder however processes race, none left by the dead."""

from __future__ import annotations

import errno
import fcntl
import multiprocessing
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from contrastkit.cli import main
from contrastkit.study import claims

from .tiny import held_claim, write_study


def test_a_held_claim_is_refused_until_its_holder_ends(tmp_path: Path) -> None:
    run = tmp_path / "arm" / "seed0"
    assert claims.holder(run) is None  # no claim file
    with held_claim(run, "4242") as path:
        assert claims.holder(run) == 4242
        assert not claims.claim(run)
        assert path.read_text() == "4242"  # the refused claimer wrote nothing there
    assert claims.holder(run) is None  # the file is left, its lock is gone
    assert claims.claim(run)
    assert claims.claim(run)  # this process holds it already
    assert claims.holder(run) == os.getpid() and claims.claim_path(run).read_text().isdigit()
    assert not list(run.parent.glob("*.tmp"))  # the claimer's private file is gone
    claims.release(run)
    assert not claims.claim_path(run).exists() and claims.holder(run) is None
    claims.release(run)  # holding nothing: nothing happens


def test_a_claim_of_a_killed_process_is_free(tmp_path: Path) -> None:
    run = tmp_path / "arm" / "seed0"
    code = (
        "import sys, time; from pathlib import Path; from contrastkit.study import claims; "
        "print(claims.claim(Path(sys.argv[1])), flush=True); time.sleep(600)"
    )
    child = subprocess.Popen([sys.executable, "-c", code, str(run)], stdout=subprocess.PIPE)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == b"True"
        assert claims.holder(run) == child.pid and not claims.claim(run)
    finally:
        child.send_signal(signal.SIGKILL)  # no release, no clean-up
        child.wait(timeout=30)
    assert claims.claim_path(run).read_text() == str(child.pid)  # left behind
    assert claims.holder(run) is None
    assert claims.claim(run) and claims.holder(run) == os.getpid()
    claims.release(run)


def test_a_left_claim_naming_a_live_pid_does_not_lock_the_run(tmp_path: Path) -> None:
    """A claim file left by a crash whose pid the system has given to another program."""
    run = tmp_path / "arm" / "seed0"
    run.parent.mkdir(parents=True)
    claims.claim_path(run).write_text("1")  # pid 1 is alive, and holds no lock
    assert claims.holder(run) is None
    assert claims.claim(run) and claims.claim_path(run).read_text() == str(os.getpid())
    claims.release(run)


def test_a_takeover_that_finds_the_claim_replaced_as_it_locked_backs_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two processes find the same left-behind claim; the other one locks it first and
    replaces it with its own, then this one is granted the old file's lock. It must see
    that the claim's name now points elsewhere, and leave the run to the other."""
    run = tmp_path / "arm" / "seed0"
    run.parent.mkdir(parents=True)
    path = claims.claim_path(run)
    path.write_text("999999999")  # left behind, unlocked
    rival: list[int] = []
    granted = claims._locked

    def racing(fd: int, mode: int) -> bool:
        if not rival:  # the rival's takeover lands between our open and our lock
            private = path.with_name("rival.tmp")
            rival.append(os.open(private, os.O_RDWR | os.O_CREAT))
            os.write(rival[0], b"4242")
            fcntl.flock(rival[0], fcntl.LOCK_EX)
            os.replace(private, path)
        return granted(fd, mode)

    monkeypatch.setattr(claims, "_locked", racing)
    try:
        assert not claims.claim(run)
        assert claims.holder(run) == 4242
    finally:
        os.close(rival[0])


def _contend(runs: list[Path], start: multiprocessing.Barrier, out: multiprocessing.Queue) -> None:
    won = []
    for run in runs:
        start.wait()
        won.append(claims.claim(run))
    out.put((os.getpid(), won))
    start.wait()  # hold every claim won until all processes have tried every run


@pytest.mark.parametrize("left_behind", [False, True], ids=["no-claim", "claim-of-a-dead-process"])
def test_processes_racing_for_runs_settle_on_one_holder_each(
    tmp_path: Path, left_behind: bool
) -> None:
    """What ``study --jobs`` does: processes started together claim the same runs in the
    same order. Each run must end with exactly one winner, the pid in its file."""
    runs = [tmp_path / "arm" / f"seed{k}" for k in range(40)]
    runs[0].parent.mkdir(parents=True)
    if left_behind:
        for run in runs:
            claims.claim_path(run).write_text("999999999")
    context = multiprocessing.get_context("fork")
    start, out = context.Barrier(6, timeout=120), context.Queue()  # a stuck worker fails the rest
    workers = [context.Process(target=_contend, args=(runs, start, out)) for _ in range(6)]
    for worker in workers:
        worker.start()
    results = dict(out.get(timeout=120) for _ in workers)
    for worker in workers:
        worker.join(timeout=60)
    for k, run in enumerate(runs):
        winners = [pid for pid, won in results.items() if won[k]]
        assert len(winners) == 1, f"run {k}: winners {winners}"
        assert claims.claim_path(run).read_text() == str(winners[0])


def test_without_flock_the_command_line_loads_and_a_study_refuses_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """What Windows has: no ``fcntl``. ``contrastkit`` must still start; a study says why
    it cannot claim runs, and trains nothing."""
    code = (
        "import sys; sys.modules['fcntl'] = None; from contrastkit.cli import build_parser; "
        "build_parser(); from contrastkit.study import claims; assert claims.fcntl is None"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
    monkeypatch.setattr(claims, "fcntl", None)
    arms = [{"label": "ntxent", "loss": "ntxent"}]
    path = write_study(tmp_path / "study.yaml", arms=arms, seeds=[0], min_seeds=1)
    run = tmp_path / "out" / "runs" / "ntxent" / "seed0"
    assert claims.holder(run) is None
    assert main(["study", str(path)]) == 2
    message = "contrastkit study needs flock(2) to claim runs (Linux, macOS, BSD)"
    assert capsys.readouterr().err == f"contrastkit: error: {message}\n"
    assert not run.exists()


@pytest.mark.parametrize(
    ("call", "target", "errno_"),
    [("flock(2)", "flock", errno.ENOSYS), ("link(2)", "link", errno.EPERM)],
    ids=["lustre-without-flock", "no-hard-links"],
)
def test_a_file_system_that_cannot_hold_claims_is_one_clear_line(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    call: str,
    target: str,
    errno_: int,
) -> None:
    """Old Lustre mounts refuse flock(2) (ENOSYS); FAT and some FUSE mounts refuse hard
    links (EPERM). The study names the folder, the call and what to do, and trains nothing."""

    def refused(*_: object) -> None:
        raise OSError(errno_, os.strerror(errno_))

    monkeypatch.setattr(claims.fcntl if target == "flock" else claims.os, target, refused)
    arms = [{"label": "ntxent", "loss": "ntxent"}]
    path = write_study(tmp_path / "study.yaml", arms=arms, seeds=[0], min_seeds=1)
    assert main(["study", str(path)]) == 2
    err = capsys.readouterr().err
    folder = tmp_path / "out" / "runs" / "ntxent"
    assert err.startswith(f"contrastkit: error: cannot claim runs in {folder}: {call} failed (")
    assert err.endswith("choose one with --runs-dir\n") and err.count("\n") == 1
    assert not (folder / "seed0").exists() and not list(folder.glob("*.tmp"))
