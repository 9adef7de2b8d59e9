"""The data-loading error boundary: what a damaged or mistyped data file raises becomes one
``ValueError`` naming the file and what was expected.

Decoding a file fails in many types that say nothing of the file: ``EOFError`` (a
truncated ``.gz`` / ``.tar.gz``), ``pickle.UnpicklingError`` (a refused global, a truncated
pickle), ``zlib.error``, ``gzip.BadGzipFile``, ``tarfile.TarError``, ``UnicodeDecodeError``,
``struct.error``, ``csv.Error``, and numpy's shape errors (``ValueError``, ``IndexError``).
Two layers turn them into :class:`DataFileError` (a ``ValueError``, so the command line
prints it as one ``contrastkit: error: ...`` line with exit status 2):

* :func:`reading` wraps the decoding of one file in a loader and names that file;
* :func:`dataset_boundary` wraps a whole loader call in
  :func:`~contrastkit.data.registry.load_dataset` and names the dataset and its
  ``data_root``, so every loader, including one registered later, is covered.

Example:
    >>> import gzip, tempfile
    >>> from pathlib import Path
    >>> p = Path(tempfile.mkdtemp()) / "x.gz"
    >>> _ = p.write_bytes(b"no")
    >>> try:
    ...     with reading(p, "a gzip file"):
    ...         gzip.decompress(p.read_bytes())
    ... except ValueError as exc:
    ...     print(str(exc).replace(str(p), "FILE"))
    FILE cannot be read as a gzip file (Not a gzipped file (b'no'))
"""

from __future__ import annotations

import contextlib
import csv
import gzip
import lzma
import pickle
import struct
import tarfile
import zlib
from collections.abc import Iterator
from pathlib import Path

# what decoding a damaged, truncated or mistyped file raises (none names the file)
DECODE_ERRORS: tuple[type[BaseException], ...] = (
    EOFError,
    pickle.UnpicklingError,
    zlib.error,
    gzip.BadGzipFile,
    lzma.LZMAError,
    tarfile.TarError,
    UnicodeDecodeError,
    struct.error,
    csv.Error,
)


class DataFileError(ValueError):
    """A data file that cannot be read as what its loader expects (names the file)."""


def _reason(exc: BaseException) -> str:
    """The first line of ``exc``'s message, shortened, or its type's name."""
    text = str(exc).strip()
    return text.splitlines()[0][:160] if text else type(exc).__name__


@contextlib.contextmanager
def reading(path: str | Path, expected: str) -> Iterator[None]:
    """Run the body, which decodes the file ``path``; a decoding error (:data:`DECODE_ERRORS`)
    or a raw shape error (``ValueError``, ``IndexError``) becomes a :class:`DataFileError`
    ``"<path> cannot be read as <expected> (<reason>)"``. Wrap only the decoding itself,
    not checks that raise messages of their own (those would be rewrapped)."""
    try:
        yield
    except DataFileError:
        raise
    except (*DECODE_ERRORS, ValueError, IndexError) as exc:
        raise DataFileError(f"{path} cannot be read as {expected} ({_reason(exc)})") from None


@contextlib.contextmanager
def dataset_boundary(name: str, data_root: object) -> Iterator[None]:
    """Run a loader of dataset ``name``; a decoding error that escapes it unnamed becomes a
    :class:`DataFileError` naming the dataset and ``data_root``."""
    try:
        yield
    except DECODE_ERRORS as exc:
        where = f" under {str(data_root)!r}" if data_root is not None else ""
        raise DataFileError(
            f"dataset {name!r}: a data file{where} is damaged or not in the expected format "
            f"({type(exc).__name__}: {_reason(exc)})"
        ) from None
