"""Which process trains a study's run: claims that several processes can race for.

Several processes may run one study at once (``contrastkit study --jobs N`` starts N of
them together, all walking the runs in the same order). A process claims a run with the
file ``<run>.claimed.pid`` beside its directory and trains it only while it holds the
claim. The claim is a ``flock(2)`` lock on that file (POSIX systems), not just the file:

* the kernel drops the lock when the holder ends, however it ends (``kill -9``, a crash,
  a lost node), so a claim left behind is free for the next process to take, and a pid
  the system has since given to another program cannot keep a run locked;
* the file is published whole: the claimer writes its pid to a private file, locks it and
  hard-links it to the claim's name (``link(2)`` fails if the name exists), so no reader
  ever finds a claim without its pid;
* a left-behind claim is taken over by locking it, then atomically renaming the claimer's
  own locked file over it; every claimer checks, once it holds a lock, that the claim's
  name still points at the file it locked, so two racing takeovers cannot both win.

The file holds the holder's pid for ``contrastkit study --status``. Where there is no
``flock(2)`` (Windows), or the runs folder's file system refuses locks or hard links (an
old Lustre mount without ``-o flock``, FAT, some FUSE mounts), claiming a run is an error
that says so; nothing else needs it.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

try:
    import fcntl
except ImportError:  # Windows: no flock(2); the rest of contrastkit does not need it
    fcntl = None

CLAIM = "claimed.pid"

_held: dict[Path, int] = {}  # claim file → the descriptor whose lock this process holds


def claim_path(directory: Path) -> Path:
    """The claim file of run ``directory``: beside it, so the run directory holds only
    the trainer's files (the trainer refuses to start in a non-empty directory)."""
    return directory.parent / f"{directory.name}.{CLAIM}"


def _locked(fd: int, mode: int) -> bool:
    """Take lock ``mode`` on ``fd`` without waiting; whether it was granted."""
    try:
        fcntl.flock(fd, mode | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _unsupported(directory: Path, call: str, exc: OSError) -> OSError:
    """The error for a file system that cannot hold claims (``flock`` or ``link`` refused)."""
    return OSError(
        f"cannot claim runs in {directory}: {call} failed ({exc.strerror}); a study's runs "
        "need a file system with flock(2) and hard links (a local disk, NFS, Lustre mounted "
        "with -o flock): choose one with --runs-dir"
    )


def _names(path: Path, fd: int) -> bool:
    """Whether ``path`` still names the file open as ``fd``."""
    try:
        return os.path.samestat(path.stat(), os.fstat(fd))
    except FileNotFoundError:
        return False


def holder(directory: Path) -> int | None:
    """The pid of the process that holds ``directory``'s claim; ``None`` if none does
    (no claim file, or one whose holder has ended). It asks with a shared lock held for an
    instant: a claimer trying that same instant reads the run as held, and asks again at
    the end of its pass (:func:`.runner.run_study`)."""
    if fcntl is None:
        return None  # no claims without flock(2)
    path = claim_path(directory)
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        if _locked(fd, fcntl.LOCK_SH):
            return None  # nobody holds it; closing drops the probe's shared lock
        text = os.read(fd, 32).decode(errors="replace").strip()
        return int(text) if text.isdigit() else None
    finally:
        os.close(fd)


def claim(directory: Path) -> bool:
    """Claim ``directory`` for this process until :func:`release`; ``False`` if another
    process holds it (see the module docstring for how racing claimers settle)."""
    if fcntl is None:
        raise OSError("contrastkit study needs flock(2) to claim runs (Linux, macOS, BSD)")
    path = claim_path(directory)
    if path in _held:
        return True
    path.parent.mkdir(parents=True, exist_ok=True)
    private = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    fd = os.open(private, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
    won = False
    try:
        os.write(fd, str(os.getpid()).encode())
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)  # a private file: granted at once where supported
        except OSError as exc:
            raise _unsupported(path.parent, "flock(2)", exc) from None
        while True:
            try:
                os.link(private, path)
                break
            except FileExistsError:
                pass
            except OSError as exc:
                raise _unsupported(path.parent, "link(2)", exc) from None
            try:
                other = os.open(path, os.O_RDWR)  # NFS grants exclusive locks to writers
            except FileNotFoundError:
                continue  # released as we looked: link again
            try:
                if not _locked(other, fcntl.LOCK_EX):
                    return False  # a live process holds it
                if _names(path, other):  # not replaced or released while we locked it
                    os.replace(private, path)  # take over a claim whose holder has ended
                    break
            finally:
                os.close(other)
        won = True
    finally:
        private.unlink(missing_ok=True)
        if won:
            _held[path] = fd
        else:
            os.close(fd)
    return True


def release(directory: Path) -> None:
    """Give up this process's claim on ``directory`` (nothing if it holds none)."""
    path = claim_path(directory)
    fd = _held.pop(path, None)
    if fd is not None:
        path.unlink(missing_ok=True)  # while still locked: see the module docstring
        os.close(fd)


@contextlib.contextmanager
def claimed(directory: Path) -> Iterator[bool]:
    """:func:`claim` ``directory`` for the body and :func:`release` it after; yields
    whether this process holds it (``False``: another process does)."""
    held = claim(directory)
    try:
        yield held
    finally:
        if held:
            release(directory)
