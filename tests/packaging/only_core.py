"""Run as a script: contrastkit with only torch and numpy importable.

A meta-path finder refuses every optional package (and pyyaml and tqdm, which only the
command line needs); the script then computes every registered loss, calls ``require`` on
a blocked package and runs ``contrastkit train`` on the digits (which need scikit-learn),
and prints what happened as one JSON line for ``test_optional.py`` to check.
"""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.util
import io
import json
import sys
from pathlib import Path


def extras() -> tuple[str, ...]:
    """The packages of the extras, read from ``contrastkit/_optional.py`` without importing
    contrastkit: importing it (and torch with it) must happen under the blocker."""
    package = importlib.util.find_spec("contrastkit")
    assert package is not None and package.submodule_search_locations
    path = Path(next(iter(package.submodule_search_locations))) / "_optional.py"
    spec = importlib.util.spec_from_file_location("optional_table", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return tuple(module.EXTRAS)


# every package of an extra (the table of contrastkit._optional), plus the command line's own
BLOCKED = (*extras(), "yaml", "tqdm")


class Blocker(importlib.abc.MetaPathFinder):
    """Makes ``import X`` fail as if X were not installed, for X in :attr:`blocked`."""

    def __init__(self) -> None:
        self.blocked = set(BLOCKED)

    def find_spec(self, name: str, path: object = None, target: object = None) -> None:
        if name.partition(".")[0] in self.blocked:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


def inputs(kind: str, n: int = 6, d: int = 8) -> list:
    import torch

    g = torch.Generator().manual_seed(0)
    z1, z2 = torch.randn(n, d, generator=g), torch.randn(n, d, generator=g)
    return {
        "pair": [z1, z2],
        "features": [z1, z2],
        "query_key": [z1, z2],
        "labeled": [z1, z2, torch.arange(n) % 2],
        "views": [torch.stack([z1, z2, z1 + 0.1])],
        "predictor": [z1, z2, z1 + 0.1, z2 + 0.1],
    }[kind]


def main() -> None:
    blocker = Blocker()
    sys.meta_path.insert(0, blocker)
    import torch

    import contrastkit
    import contrastkit.frameworks
    import contrastkit.models  # noqa: F401
    from contrastkit import losses
    from contrastkit._optional import MissingExtraError, require

    torch.set_num_threads(1)
    computed = []
    for name in losses.available():
        info = losses.info(name)
        loss = info.cls(in_dim=8) if info.inputs == "features" else info.cls()
        args = [t.requires_grad_(True) if t.is_floating_point() else t for t in inputs(info.inputs)]
        value = loss(*args)
        value.backward()
        if value.dim() == 0 and torch.isfinite(value) and args[0].grad is not None:
            computed.append(name)
    try:
        require("PIL.Image", "images", "the image reader")
        message = None
    except MissingExtraError as exc:
        message = str(exc)
    loaded_for_losses = sorted(m for m in BLOCKED if m in sys.modules)
    blocker.blocked -= {"yaml", "tqdm"}  # the command line itself needs pyyaml and tqdm
    from contrastkit.cli import main as cli

    stderr = io.StringIO()
    with contextlib.redirect_stderr(stderr):
        status = cli(["train", "--dataset", "digits", "--epochs", "1", "--no-progress"])
    loaded = sorted(m for m in BLOCKED if m in sys.modules)
    report = {
        "computed": computed,
        "loaded_for_losses": loaded_for_losses,
        "message": message,
        "cli_status": status,
        "cli_stderr": stderr.getvalue(),
        "optional_loaded": loaded,
    }
    print(json.dumps(report))


if __name__ == "__main__":
    main()
