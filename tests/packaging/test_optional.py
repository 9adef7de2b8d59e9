"""Optional dependencies: the losses need only torch and numpy; a missing extra is one line."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

from contrastkit import losses
from contrastkit._optional import (
    DISTRIBUTIONS,
    EXTRAS,
    MissingExtraError,
    message,
    missing_extra,
    require,
)

ROOT = Path(__file__).resolve().parents[2]
EXTRAS_OF_PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
    "optional-dependencies"
]


@pytest.fixture(scope="module")
def only_core() -> dict[str, Any]:
    """What ``only_core.py`` saw with every optional package blocked (one subprocess)."""
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    proc = subprocess.run(
        [sys.executable, str(Path(__file__).with_name("only_core.py"))],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_every_registered_loss_computes_with_torch_and_numpy_only(only_core: dict) -> None:
    assert only_core["computed"] == losses.available()
    assert only_core["loaded_for_losses"] == []  # not even pyyaml or tqdm


def test_blocked_require_names_the_extra(only_core: dict) -> None:
    assert only_core["message"] == (
        "the image reader needs the optional package pillow: pip install 'contrastkit[images]'"
    )


def test_cli_prints_one_line_naming_the_extra(only_core: dict) -> None:
    assert only_core["cli_status"] == 2
    assert only_core["cli_stderr"] == (
        "contrastkit: error: the digits dataset needs the optional package scikit-learn: "
        "pip install 'contrastkit[train]'\n"
    )
    assert "yaml" in only_core["optional_loaded"]  # the CLI's own dependencies do load
    assert "sklearn" not in only_core["optional_loaded"]


def test_require_returns_the_module_and_reports_missing_dependencies() -> None:
    import json as json_module

    assert require("json") is json_module
    with pytest.raises(MissingExtraError, match=r"^x needs the optional package no_pkg_q: "):
        require("no_pkg_q.sub", "graph", "x")
    with pytest.raises(ImportError, match=r"pip install 'contrastkit\[graph\]'$"):
        require("no_pkg_q", "graph")
    with pytest.raises(ModuleNotFoundError, match=r"No module named 'json\.no_such_sub'"):
        require("json.no_such_sub", "train")  # a typo is not a missing extra


def test_missing_extra_maps_module_errors_of_listed_packages_only() -> None:
    assert missing_extra(ModuleNotFoundError("no", name="torch_geometric.data")) == (
        "this feature needs the optional package torch-geometric: pip install 'contrastkit[graph]'"
    )
    assert missing_extra(MissingExtraError("a line")) == "a line"
    assert missing_extra(ModuleNotFoundError("no", name="contrastkit_typo")) is None
    assert missing_extra(ImportError("cannot import name 'x'")) is None


@pytest.mark.parametrize("module", sorted(EXTRAS))
def test_every_mapped_package_is_in_its_extra(module: str) -> None:
    """The table the messages come from agrees with pyproject.toml."""
    extra = EXTRAS[module]
    distribution = message(module, extra).split("package ")[1].split(":")[0]
    names = [re.split(r"[<>=\[ ]", req, maxsplit=1)[0] for req in EXTRAS_OF_PYPROJECT[extra]]
    assert distribution in names, f"{distribution} not in the {extra!r} extra"


@pytest.mark.parametrize("extra", ["train", "images", "graph", "text", "umap"])
def test_every_package_of_an_extra_is_in_the_table(extra: str) -> None:
    """So the blocker of ``only_core.py`` blocks all of them and the CLI names the extra."""
    known = {DISTRIBUTIONS.get(m, m) for m in EXTRAS}
    for req in EXTRAS_OF_PYPROJECT[extra]:
        assert re.split(r"[<>=\[ ]", req, maxsplit=1)[0] in known, req


def test_torch_is_a_lower_bound_at_the_oldest_tested_release() -> None:
    """pyproject.toml asks for torch >= the release `make test-oldest-torch` tests, and the
    Makefile's development install pins the exact CPU wheel."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    torch_reqs = [r for r in project["dependencies"] if re.match(r"torch\b", r)]
    makefile = (ROOT / "Makefile").read_text()
    oldest = re.search(r"^OLDEST_TORCH := (\S+)$", makefile, re.M)
    assert oldest is not None and torch_reqs == [f"torch>={oldest.group(1)}"]
    assert "pip install --quiet torch==2.13.0\n" in makefile
