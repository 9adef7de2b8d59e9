"""Run directories and crash-safe files: the guard every command runs before any work and
atomic writes (checksummed checkpoints: :mod:`contrastkit.checkpoint_file`).

* :func:`prepare_run_dir` checks an output directory before any training: ``--out`` must
  be a directory that can be created and written, and a directory that already holds
  files is refused unless the run resumes it (``resume``) or replaces it (``overwrite``,
  only a contrastkit run: :func:`is_run_dir`), so nothing already written is destroyed or
  mixed by mistake. What ``overwrite`` replaces is moved aside first and deleted only when
  the new run has written its first files or the command succeeded.
  :func:`removed_if_unused` takes back the folders a failed command created, and what it
  set aside when no new run got going (bad input found once work began).
* :func:`atomic_write_text` / :func:`atomic_write_bytes` / :func:`atomic_file` write a
  temporary file of a unique name in the same directory, ``fsync`` it, rename it over the
  target and ``fsync`` the directory: a reader (or a run killed at any instant) sees the
  old file or the new one, never a part.

Example:
    >>> import tempfile
    >>> d = prepare_run_dir(tempfile.mkdtemp() + "/run")
    >>> atomic_write_text(d / "note.txt", "done")
    >>> (d / "note.txt").read_text()
    'done'
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
import tempfile
from collections.abc import Collection, Iterator
from pathlib import Path
from typing import Any, BinaryIO

# test hook: "NAME:K" kills the process (os._exit(137)) in the K-th write of the file NAME
# (atomic write or appended line), half-way through: the crash tests' "kill inside a write"
FAULT_ENV = "CONTRASTKIT_FAULT_WRITE"
# what marks a folder as a contrastkit run (:func:`is_run_dir`): the per-epoch record and
# checkpoint every training run writes, SimCSE's dev-score history (written between epochs),
# and the summary of a ``compare`` folder
RUN_FILES = ("metrics.jsonl", "checkpoint.pt", "history.json")
COMPARE_SUMMARY = "summary.json"
COMPARE_FILES = (COMPARE_SUMMARY, "table.md", "accuracy.png", "temperature.png")
# run folder -> the hidden sibling holding what ``overwrite`` replaced (:func:`removed_if_unused`)
_SET_ASIDE: dict[Path, Path] = {}


def prepare_run_dir(path: str | Path, resume: bool = False, overwrite: bool = False) -> Path:
    """Create (or accept) the run directory ``path`` and check it can be written.

    Raises ``ValueError`` with one line naming ``path`` when it is empty, is a file, lies
    under a file, cannot be created or written, or already holds files while neither
    ``resume`` nor ``overwrite`` is set. ``overwrite`` empties the directory, and only a
    contrastkit run (:func:`is_run_dir`; never the current directory, its parents or the
    home directory): its files move to a hidden sibling, which :func:`removed_if_unused`
    deletes or puts back when the command ends; ``resume`` keeps it.
    Under ``torchrun`` (``RANK`` set) only rank 0 checks for and clears existing files.
    """
    if resume and overwrite:
        raise ValueError("--resume and --overwrite exclude each other")
    if not str(path).strip():
        raise ValueError("--out must name a directory, got an empty string")
    path = Path(path).expanduser()
    for parent in (path, *path.parents):
        if parent.exists() and not parent.is_dir():
            where = "is" if parent == path else f"lies under {str(parent)!r}, which is"
            raise ValueError(f"--out {str(path)!r} {where} a file, not a directory")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ValueError(f"--out {str(path)!r} cannot be created: {exc.strerror}") from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise ValueError(f"--out {str(path)!r} is not writable")
    # under torchrun only rank 0 judges and clears the directory (it writes the run files)
    entries = sorted(p.name for p in path.iterdir()) if os.environ.get("RANK", "0") == "0" else []
    if entries and overwrite:
        _set_aside(path)
    elif entries and not resume:
        shown = ", ".join(entries[:4]) + (", ..." if len(entries) > 4 else "")
        raise ValueError(
            f"--out {str(path)!r} already holds files ({shown}); pass --resume to continue "
            "that run, --overwrite to replace it, or choose another --out"
        )
    return path


@contextlib.contextmanager
def removed_if_unused(path: str | Path | None) -> Iterator[None]:
    """Run the body; if it raises, remove again the folders on the way to ``path`` (``path``
    included; ``None``: none) that did not exist when it began and are still empty,
    deepest first.

    A command whose input turns out bad only once its work starts (a dataset too small
    for the batch, a data file missing) then leaves no empty output folder behind.
    ``rmdir`` removes empty folders only: nothing written is ever deleted, and a folder
    that has gained a file (a checkpoint, another process's claim) stays."""
    new: list[Path] = []
    target = None if path is None else Path(path).expanduser().absolute()
    if target is not None:
        new = [p for p in (target, *target.parents) if not p.exists()]  # deepest first
    try:
        yield
    except BaseException:
        if target is not None:
            _settle_aside(target, succeeded=False)
        for folder in new:
            try:
                folder.rmdir()
            except FileNotFoundError:  # never made (the body failed before it)
                continue
            except OSError:  # no longer empty: neither it nor its parents are taken back
                break
        raise
    if target is not None:
        _settle_aside(target, succeeded=True)


def check_output_file(
    path: str | Path, flag: str = "--out", keys: Collection[str] | None = None
) -> Path:
    """Check, before any work, that the file ``path`` can be written: not empty, not a
    directory, not under a file; its parent is created and must be writable. An existing
    file is replaced only when it is one this command wrote: a JSON object holding every
    key of ``keys`` (none is replaced when ``keys`` is ``None``), so a data file or a file
    of the user's given by mistake is never overwritten."""
    if not str(path).strip():
        raise ValueError(f"{flag} must name a file, got an empty string")
    path = Path(path).expanduser()
    if path.is_dir():
        raise ValueError(f"{flag} {str(path)!r} is a directory, not a file")
    for parent in path.parents:
        if parent.exists() and not parent.is_dir():
            raise ValueError(f"{flag} {str(path)!r} lies under {str(parent)!r}, which is a file")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ValueError(
            f"{flag} {str(path)!r}: cannot create its folder: {exc.strerror}"
        ) from None
    if not os.access(path.parent, os.W_OK | os.X_OK) or (
        path.exists() and not os.access(path, os.W_OK)
    ):
        raise ValueError(f"{flag} {str(path)!r} is not writable")
    if path.exists() and not _written_by(path, keys):
        raise ValueError(
            f"{flag} {str(path)!r} exists and is not a result this command wrote; "
            "choose another file or remove it"
        )
    return path


def _written_by(path: Path, keys: Collection[str] | None) -> bool:
    """Whether the file ``path`` is a JSON object with every key of ``keys``."""
    if keys is None:
        return False
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return False
    return isinstance(value, dict) and all(key in value for key in keys)


def is_run_dir(path: str | Path) -> bool:
    """Whether the folder ``path`` holds a contrastkit run: at its top a ``metrics.jsonl`` or
    ``checkpoint.pt`` (written after every epoch by ``train``, ``simcse`` and each run of a
    study) or SimCSE's ``history.json`` (:data:`RUN_FILES`); or a ``compare`` folder, whose
    top holds nothing but :data:`COMPARE_FILES` and ``<label>/`` folders of ``seed<k>``
    runs (at least one run, or its ``summary.json``). A folder of other files (a data set,
    someone else's results, runs kept deeper inside) is not, and ``--overwrite`` leaves it
    alone. A SimCSE run killed before its first checkpoint (its ``best/`` model alone) is one."""
    path = Path(path)
    if any((path / name).is_file() for name in RUN_FILES):
        return True
    if (path / "best" / "modules.json").is_file():  # a SimCSE run killed in its first epoch
        return all(
            e.name in ("best", "tensorboard") or e.name.startswith(".") for e in path.iterdir()
        )
    runs = False
    for entry in path.iterdir():
        if entry.is_file() and entry.name in COMPARE_FILES:
            continue
        if not entry.is_dir() or entry.is_symlink():
            return False
        for seed in entry.iterdir():
            name = seed.name.removesuffix(".claimed.pid")
            if not (name.startswith("seed") and name[4:].isdigit()):
                return False
            runs = runs or any((seed / run_file).is_file() for run_file in RUN_FILES)
    return runs or (path / COMPARE_SUMMARY).is_file()


def _set_aside(path: Path) -> None:
    """Move what ``path`` holds to a new hidden sibling (``.<name>.replaced-*``), after
    checking that it is a contrastkit run that may be replaced."""
    resolved = path.resolve()
    protected = {Path.home().resolve(), *Path.cwd().resolve().parents, Path.cwd().resolve()}
    if resolved in protected:
        raise ValueError(f"--overwrite refuses to empty {str(path)!r} (home or current directory)")
    if not is_run_dir(path):
        raise ValueError(
            f"--overwrite refuses to empty {str(path)!r}: it holds files but no contrastkit run "
            f"(no {', '.join(RUN_FILES)}); remove them yourself or choose another --out"
        )
    try:
        aside = Path(tempfile.mkdtemp(prefix=f".{path.name}.replaced-", dir=path.parent))
    except OSError as exc:
        raise ValueError(f"--overwrite cannot write beside {str(path)!r}: {exc.strerror}") from None
    for child in path.iterdir():
        os.replace(child, aside / child.name)  # one file system: renames, nothing copied
    _SET_ASIDE[path.absolute()] = aside


def _settle_aside(path: Path, succeeded: bool) -> None:
    """Delete what :func:`_set_aside` moved from ``path`` once a new run holds it (the
    command succeeded, or the run wrote its first files before failing); else put it back."""
    aside = _SET_ASIDE.pop(path, None)
    if aside is None:
        return
    started = path.is_dir() and any((path / name).exists() for name in RUN_FILES)
    if not succeeded and not started and path.is_dir():
        for child in path.iterdir():  # what the failed start made (an empty log folder)
            shutil.rmtree(child) if child.is_dir() and not child.is_symlink() else child.unlink()
        for child in aside.iterdir():
            os.replace(child, path / child.name)
    shutil.rmtree(aside)


_fault_counts: dict[str, int] = {}


def _maybe_fault(name: str) -> bool:
    spec = os.environ.get(FAULT_ENV)
    if not spec:
        return False
    target, _, count = spec.partition(":")
    if target != name:
        return False
    _fault_counts[name] = _fault_counts.get(name, 0) + 1
    return _fault_counts[name] == int(count or 1)


def atomic_write_bytes(path: str | Path, data: bytes) -> None:
    """Replace ``path`` by ``data`` atomically (temp file + fsync + rename + dir fsync)."""
    with atomic_file(path) as fh:
        _write_synced(fh, data, Path(path).name)


@contextlib.contextmanager
def atomic_file(path: str | Path) -> Iterator[BinaryIO]:
    """A binary handle on a new temporary file beside ``path``, synced and renamed over
    ``path`` when the block ends (removed if it raises). Its name is unique to the call,
    so processes that write the same ``path`` at once (two runs filling one cache) each
    rename a whole file of their own: the last one wins, and no rename finds its file gone.

    Example:
        >>> import tempfile
        >>> p = Path(tempfile.mkdtemp()) / "a.bin"
        >>> with atomic_file(p) as fh:
        ...     _ = fh.write(b"xy")
        >>> p.read_bytes()
        b'xy'
    """
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            # mkstemp makes the file private (0600); give it the mode open() would have
            os.chmod(tmp, 0o666 & ~_umask())
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    _fsync_dir(path.parent)


def _umask() -> int:
    mask = os.umask(0)  # reading the mask means setting it: put it back at once
    os.umask(mask)
    return mask


@contextlib.contextmanager
def atomic_dir(out: str | Path, replace: bool = False) -> Iterator[Path]:
    """A temporary sibling directory to fill, renamed to the new or empty directory ``out``
    when the block ends (removed if it raises), so ``out`` is never left half-written.
    ``replace``: a filled ``out`` is swapped out first (renamed, then deleted), so a crash
    leaves the old folder whole, the new one, or the old one under ``.<name>.old-*``."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        yield tmp
        old = None
        if out.exists() and replace and any(out.iterdir()):
            old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old-", dir=out.parent))
            os.replace(out, old / out.name)
        elif out.exists():
            out.rmdir()
        os.replace(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    if old is not None:
        shutil.rmtree(old)


def atomic_write_text(path: str | Path, text: str) -> None:
    """:func:`atomic_write_bytes` of ``text`` in UTF-8."""
    atomic_write_bytes(path, text.encode("utf-8"))


def strict_json(obj: Any) -> str:
    """``obj`` as strict JSON text, indented by 2, with a final newline: NaN and ±Inf floats
    become ``null``, never the non-standard ``NaN`` / ``Infinity`` tokens (finite content is
    written exactly as ``json.dumps(obj, indent=2)`` writes it)."""

    def finite(node: Any) -> Any:
        if isinstance(node, float):
            return node if math.isfinite(node) else None
        if isinstance(node, dict):
            return {key: finite(value) for key, value in node.items()}
        if isinstance(node, list | tuple):
            return [finite(value) for value in node]
        return node

    return json.dumps(finite(obj), indent=2, allow_nan=False) + "\n"


def append_line(path: str | Path, line: str) -> None:
    """Append one text line to ``path`` and ``fsync`` it (a crash can at worst leave a
    partial last line, which :func:`read_jsonl` readers of this project reject by line)."""
    path = Path(path)
    text = line.rstrip("\n") + "\n"
    with path.open("ab") as fh:
        _write_synced(fh, text.encode("utf-8"), path.name)


def _write_synced(fh: Any, data: bytes, name: str) -> None:
    """Write ``data`` to the binary file ``fh`` and ``fsync`` it; under the test fault
    hook for ``name``, write half of it and die instead (as a kill mid-write would)."""
    if _maybe_fault(name):
        fh.write(data[: len(data) // 2])
        fh.flush()
        os._exit(137)
    fh.write(data)
    fh.flush()
    os.fsync(fh.fileno())


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:  # not supported on this platform (Windows)
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def read_jsonl(path: str | Path, limit: int | None = None) -> tuple[list[dict[str, Any]], int]:
    """The JSON records of the first ``limit`` lines of ``path`` (all without ``limit``)
    and the number of lines; ``ValueError`` naming the file and the line of the first
    record that is not a JSON object. Lines after ``limit`` are counted, not parsed (a
    line a crash left half written after the last checkpoint)."""
    path = Path(path)
    records: list[dict[str, Any]] = []
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"{str(path)!r} is not UTF-8 text") from None
    lines = text.splitlines()
    for number, line in enumerate(lines[:limit], start=1):
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            record = None
        if not isinstance(record, dict):
            raise ValueError(f"{str(path)!r} line {number} is not a JSON record: {line[:60]!r}")
        records.append(record)
    return records, len(lines)
