"""One validation layer for loss hyper-parameters and framework options (issue 17 item 3,
issue 12 item 4): declared once, used by the registry, the modules and the CLI."""

from __future__ import annotations

import ast
import math
from pathlib import Path

import pytest
import torch
import yaml
from torch import nn

import contrastkit
from contrastkit import losses
from contrastkit.cli import main
from contrastkit.frameworks import build_framework, check_run
from contrastkit.losses.hparams import Param
from contrastkit.losses.registry import register
from contrastkit.models import build_encoder

BAD_REALS = (float("nan"), float("inf"), -float("inf"), "abc", True, None)


def _declared_reals() -> list[tuple[str, str, Param]]:
    return [
        (name, key, param)
        for name in losses.available()
        for key, param in losses.info(name).params.items()
        if param.kind == "real"
    ]


@pytest.mark.parametrize(("name", "key", "param"), _declared_reals())
def test_every_real_hyper_parameter_refuses_non_finite_and_out_of_range(
    name: str, key: str, param: Param
) -> None:
    kwargs = {"in_dim": 8} if name == "amcl" else {}
    bad = [v for v in BAD_REALS if not (v is None and param.optional)]
    if param.low is not None:
        bad.append(param.low - 1.0)
        if param.low_open:
            bad.append(param.low)
    for value in bad:
        with pytest.raises(ValueError, match=rf"loss '{name}': {key} must be"):
            losses.get(name, **kwargs, **{key: value})
        with pytest.raises(ValueError, match=rf"{key} must be"):
            losses.check_args(name, {key: value})


@pytest.mark.parametrize(
    ("name", "key", "value"),
    [
        ("supcon", "temperature", -0.5),
        ("lascon", "temperature", 0.0),
        ("lascon", "c", math.nan),
        ("macl", "alpha", -1.0),
        ("barlow_twins", "lambd", -0.1),
        ("vicreg", "std_coeff", math.inf),
        ("align_uniform", "weight", -1.0),
        ("hcl", "beta", -1.0),
        ("hcl", "tau_plus", 1.0),
        ("ntxent", "block_size", 0),
        ("amcl", "heads", 0),
    ],
)
def test_issue_table_of_bad_hyper_parameters(name: str, key: str, value: object) -> None:
    with pytest.raises(ValueError, match=key):
        losses.check_args(name, {key: value})


def test_every_constructor_argument_has_a_declared_range() -> None:
    class Undeclared(nn.Module):
        def __init__(self, temperature: float = 0.1) -> None:
            super().__init__()

    with pytest.raises(TypeError, match="no declared range for temperature"):
        register("_undeclared_test_loss", "pair", "test")(Undeclared)
    assert "_undeclared_test_loss" not in losses.available()


def test_declared_capability_must_exist() -> None:
    class NoQueue(nn.Module):
        pass

    with pytest.raises(TypeError, match="queue_loss"):
        register("_noqueue_test_loss", "views", "test", queue_form=True)(NoQueue)


def test_unknown_loss_argument_names_the_known_ones() -> None:
    with pytest.raises(ValueError, match=r"no argument 'temprature'.*temperature"):
        losses.check_args("ntxent", {"temprature": 0.1})
    losses.check_args("amcl", {"heads": 2}, provided=("in_dim",))


def test_framework_options_checked_and_unused_options_refused() -> None:
    with pytest.raises(ValueError, match="momentum must be"):
        check_run("moco", "infonce", {}, {"momentum": 1.5})
    with pytest.raises(ValueError, match="queue_size is not used by framework 'simclr'"):
        check_run("simclr", "ntxent", {}, {"queue_size": 8}, given=["queue_size"])
    # a key shared by runs of several frameworks is fine when one of them uses it
    check_run("simclr", "ntxent", {}, {"queue_size": 8}, ["queue_size"], used=["simclr", "moco"])


def test_compare_fails_on_fifth_run_before_training(tmp_path: Path, capsys) -> None:
    cfg = tmp_path / "c.yaml"
    runs = [{"label": f"r{i}", "loss": "ntxent"} for i in range(4)]
    runs.append({"label": "r4", "loss": "ntxent", "loss_args": {"temprature": 0.2}})
    cfg.write_text(yaml.safe_dump({"runs": runs, "epochs": 1}))
    out = tmp_path / "cmp"
    assert main(["compare", "--config", str(cfg), "--out", str(out), "--no-progress"]) == 2
    assert "temprature" in capsys.readouterr().err
    assert not out.exists() or not any(out.iterdir())


def test_capabilities_replace_probing_and_concrete_imports() -> None:
    moco_source = Path(contrastkit.__file__).parent / "frameworks" / "moco.py"
    imported = {
        alias.name
        for node in ast.walk(ast.parse(moco_source.read_text()))
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }
    assert not imported & {"AMCL", "CACR"}
    assert losses.info("cacr").queue_form and losses.info("amcl").queue_form
    assert not losses.info("cmc").queue_form
    with_diagnostics = {n for n in losses.available() if losses.info(n).diagnostics}
    assert with_diagnostics == {"macl", "cacr", "amcl", "tau_uncertainty", "cosine_temperature"}
    encoder = build_encoder("2d", (1, 8, 8), 16, 4)
    model = build_framework("multiview", encoder, "cacr", {}, num_views=3, proj_dim=8)
    views = [torch.randn(6, 1, 8, 8) for _ in range(3)]
    model(views).backward()
    assert set(model.step_logs()) == {"attraction", "repulsion"}
