"""Every config setting is declared once (``contrastkit.training.settings``): the flags,
their ``--help`` and the per-field checks come from the declarations of ``TrainConfig``."""

from __future__ import annotations

import dataclasses

import pytest

from contrastkit.cli import build_parser
from contrastkit.commands.train_flags import BOOLEAN_FLAGS, FLAGS, overrides_from_args
from contrastkit.engine import OPTIMIZERS
from contrastkit.models import BACKBONES
from contrastkit.training import ENVIRONMENT_KEYS, TrainConfig, defaults
from contrastkit.training.settings import SECTIONS, declarations, listed, setting

DECLARED = {d.key: d for d in declarations(TrainConfig)}


def _overrides(*argv: str) -> dict:
    return overrides_from_args(build_parser().parse_args(["train", *argv]))


def test_every_field_is_declared_with_a_section_help_and_flag() -> None:
    decls = declarations(TrainConfig)
    assert [d.key for d in decls] == [f.name for f in dataclasses.fields(TrainConfig)]
    for d in decls:
        assert d.section in SECTIONS and d.help.strip(), d.key
        if d.cli and d.kind is bool:  # --x / --no-x, in its section's --help group
            assert BOOLEAN_FLAGS[d.flag] == (d.section, d.help)
        elif d.cli:
            assert (FLAGS[d.flag].key, FLAGS[d.flag].group) == (d.key, d.section)
    # --modality-arg KEY=VALUE, --loss-arg KEY=VALUE
    assert [d.key for d in decls if not d.cli] == ["modality_args", "loss_args"]
    assert set(ENVIRONMENT_KEYS) == {d.key for d in decls if d.environment}


def test_a_declaration_names_a_known_section() -> None:
    with pytest.raises(ValueError, match="unknown section 'gpu'; known: data, model"):
        setting(1, section="gpu", help="x")


def test_listed_names_the_values_as_a_sentence() -> None:
    assert listed(("a",)) == "a"
    assert listed(("sklearn", "pytorch")) == "sklearn or pytorch"
    assert listed({"fp32": "", "bf16": "autocast", "fp16": ""}) == "fp32, bf16 (autocast) or fp16"


def test_declared_choices_make_the_check_and_the_help() -> None:
    field = setting("b", section="data", choices=("a", "b"), help="one of {choices}")
    assert field.metadata["help"] == "one of a or b"
    field.metadata["check"]("x", "a")
    with pytest.raises(ValueError, match="x must be one of a, b, got 'c'"):
        field.metadata["check"]("x", "c")
    unset = setting(None, section="data", choices=("a",), help="{choices}")
    unset.metadata["check"]("x", None)  # a None default allows null
    with pytest.raises(ValueError, match=r"names \{choices\} but the setting declares none"):
        setting(1, section="data", help="one of {choices}")


def test_helps_read_the_names_and_defaults_from_the_tables_that_hold_them() -> None:
    """The optimisers, the per-optimiser and per-backbone defaults: each value in the table
    of :mod:`contrastkit.training.defaults` appears in the help of its setting."""
    assert DECLARED["optimizer"].help.startswith(listed(OPTIMIZERS))
    for key in ("lr", "weight_decay", "schedule", "lr_scaling"):
        for name, table in defaults.OPTIMIZER.items():
            assert f"{table[key].value}" in DECLARED[key].help, (key, name)
            assert name in DECLARED[key].help
    for name in BACKBONES:
        assert name in DECLARED["backbone"].help and name in DECLARED["width"].help
        assert f"{defaults.WIDTH[name].value}" in DECLARED["width"].help
    assert f"{defaults.LARS_WARMUP_EPOCHS:g}" in DECLARED["warmup_epochs"].help


@pytest.mark.parametrize(
    "argv,expected",
    [
        (["--views", "3"], {"num_views": 3}),
        (["--lr-milestones", "5,9"], {"lr_milestones": [5, 9]}),
        (["--jitter", "0.4,0.4,0.2,0.1"], {"jitter": [0.4, 0.4, 0.2, 0.1]}),
        (["--final-eval-at", "0.8,0.9"], {"final_eval_at": [0.8, 0.9]}),
        (
            ["--no-sync-batchnorm", "--channels-last"],
            {"sync_batchnorm": False, "channels_last": True},
        ),
        (["--no-joint-views", "--clip-grad", "1.5"], {"joint_views": False, "clip_grad": 1.5}),
    ],
)
def test_generated_flags_set_their_keys(argv: list[str], expected: dict) -> None:
    assert _overrides(*argv) == expected
    TrainConfig(**expected)  # and the values pass the declared checks


def test_a_list_flag_that_does_not_parse_is_one_error_naming_it() -> None:
    with pytest.raises(
        ValueError, match="--jitter must be four comma-separated numbers, got '1,2'"
    ):
        _overrides("--jitter", "1,2")
    with pytest.raises(ValueError, match="--final-eval-at must be comma-separated fractions"):
        _overrides("--final-eval-at", "0.8,x")


@pytest.mark.parametrize(
    "values,message",
    [
        ({"workers": -1}, "workers must be an integer >= 0, got -1"),
        ({"stem": "wide"}, "stem must be one of cifar, imagenet or null, got 'wide'"),
        ({"optimizer": "rmsprop", "lr": -1}, "optimizer must be one of sgd, adam"),  # first
        ({"sgd_momentum": 1.0}, r"sgd_momentum must be a number in \[0, 1\), got 1.0"),
        ({"device": "tpu"}, "device must be auto, cpu, cuda, cuda:N or mps, got 'tpu'"),
        ({"framework": "byol"}, "unknown framework 'byol'; available: simclr, moco"),
        ({"lr_milestones": [9, 5]}, "lr_milestones must be increasing positive epoch numbers"),
    ],
)
def test_declared_checks_name_the_field(values: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        TrainConfig(**values)


def test_a_config_may_group_its_keys_in_sections_and_flags_still_override(tmp_path) -> None:
    """YAML configs may nest settings under their sections (flat keys, as in every older
    config and final.json, still load); a flag overrides a nested key as a flat one."""
    from contrastkit.commands.train import run
    from contrastkit.training import flatten, load_yaml

    path = tmp_path / "run.yaml"
    path.write_text("loss: macl\nengine: {precision: bf16}\noptimisation: {epochs: 3}\n")
    assert flatten(load_yaml(path)) == {"loss": "macl", "precision": "bf16", "epochs": 3}
    config = TrainConfig.from_dict(load_yaml(path))
    assert (config.loss, config.precision, config.epochs) == ("macl", "bf16", 3)
    for bad, message in (
        ({"engine": {"epochs": 3}}, "section 'engine' has no setting 'epochs' .*'optimisation'"),
        ({"epochs": 2, "optimisation": {"epochs": 3}}, "config key 'epochs' is given twice"),
    ):
        with pytest.raises(ValueError, match=message):
            TrainConfig.from_dict(bad)
    args = build_parser().parse_args(["train", "--config", str(path), "--precision", "fp32",
                                      "--epochs", "1", "--dataset", "digits", "--out",
                                      str(tmp_path / "out"), "--no-progress", "--eval-every", "1",
                                      "--batch-size", "256", "--epoch-steps", "1"])  # fmt: skip
    assert run(args) == 0
    final = (tmp_path / "out" / "final.json").read_text()
    assert '"precision": "fp32"' in final and '"loss": "macl"' in final


@pytest.mark.parametrize(
    "key,bad,message",
    [
        ("senteval_classifier", "svm", "senteval_classifier must be sklearn or pytorch, got 'svm'"),
        ("sts_format", "csv", "sts_format must be stsb or tsv, got 'csv'"),
        ("pooling", "max", "pooling must be cls, mean or null, got 'max'"),
    ],
)
def test_the_text_names_are_checked_by_the_text_modality(key: str, bad: str, message: str) -> None:
    """``senteval_classifier``, ``sts_format`` and ``pooling`` are the text modality's
    names, which training must not import (``lint-imports``): its config check, run by every
    validate, refuses a bad one in one message naming the field and the values from their
    single constants (``pooling`` applies to text data only)."""
    data = {"dataset": "sentences"} if key == "pooling" else {}
    with pytest.raises(ValueError) as caught:
        TrainConfig(**data, **{key: bad})
    assert str(caught.value) == message
    TrainConfig(**data, **{key: DECLARED[key].default})  # the declared default passes


def test_a_help_shows_its_declared_default() -> None:
    """``{default}`` in a declaration's help is written as the default, so the text does not
    repeat it as a literal (``train --help`` unchanged)."""
    assert all("{default}" not in d.help for d in DECLARED.values())
    assert DECLARED["knn_k"].help == "k of the weighted kNN evaluation (200)"
    assert DECLARED["max_length"].help == "text data: truncation length in tokens (64)"
    assert DECLARED["threads"].help.startswith("torch threads (default 1: ")
    assert FLAGS["--sgd-momentum"].help == "sgd/lars momentum (0.9)"
    declared = setting(7, section="data", help="x ({default})")
    assert declared.metadata["help"] == "x ({default})"  # written out by declarations()
