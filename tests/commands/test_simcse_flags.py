"""``contrastkit simcse``'s flags that set a TrainConfig field come from the field's
declaration (:mod:`contrastkit.training.settings`, via
:func:`contrastkit.commands.train_flags.add_config_argument`): type, help and check in one
place, and each default declared once (``presets.BUILTIN``, ``simcse.OWN_DEFAULTS`` or the
declaration). The configs a command line gives are pinned to what the command built
before its flags were generated."""

from __future__ import annotations

import argparse
from typing import Any

import pytest

from contrastkit.cli import build_parser, main
from contrastkit.commands import simcse
from contrastkit.commands.train_flags import DECLARATIONS, add_config_argument, with_notes
from contrastkit.text.presets import BUILTIN
from contrastkit.text.simcse_trainer import SimCSETrainer
from contrastkit.training import TrainConfig


class _BuiltError(Exception):
    """Raised in place of the run once the command has built its config."""

    def __init__(self, config: TrainConfig) -> None:
        super().__init__("built")
        self.config = config


def _simcse_parser() -> argparse.ArgumentParser:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices["simcse"]


def _actions() -> dict[str, argparse.Action]:
    return {a.option_strings[0]: a for a in _simcse_parser()._actions if a.option_strings}


def _config(monkeypatch: pytest.MonkeyPatch, argv: list[str]) -> TrainConfig:
    """The TrainConfig ``contrastkit simcse ARGV`` trains with (nothing read or written)."""

    def built(config: TrainConfig, out: object) -> None:
        raise _BuiltError(config)

    monkeypatch.setattr(SimCSETrainer, "check_paths", built)
    args = build_parser().parse_args(["simcse", "--out", "o", "--train-file", "t.txt", *argv])
    with pytest.raises(_BuiltError) as caught:
        simcse.run(args)
    return caught.value.config


def _recipe(**values: Any) -> TrainConfig:
    """The config the command built before (its former ``config_from_args``, defaults spelt
    out): SimCSE's recipe, updated by ``values``."""
    base: dict[str, Any] = {
        "framework": "simcse",
        "loss": "infonce",
        "loss_args": {},
        "dataset": "sentences",
        "data_root": "t.txt",
        "text_model": None,
        "pooling": None,
        "mlp_head": False,
        "dropout": 0.1,
        "max_length": 32,
        "sts_dev": None,
        "sts_format": "stsb",
        "eval_steps": None,
        "senteval": None,
        "senteval_tasks": None,
        "senteval_classifier": "sklearn",
        "senteval_jobs": 1,
        "batch_size": 64,
        "epochs": 1,
        "epoch_steps": None,
        "lr": 3e-5,
        "lr_scaling": "none",
        "optimizer": "adamw",
        "weight_decay": 0.0,
        "schedule": "linear",
        "clip_grad": 1.0,
        "seed": 42,
        "device": "auto",
        "precision": "fp32",
        "grad_accum": 1,
        "compile": False,
        "threads": None,
    }
    return TrainConfig(**{**base, **values})


EVERY_FLAG = [
    *("--model", "m", "--pooling", "mean", "--mlp-head", "--dropout", "0.3"),
    *("--batch-size", "16", "--lr", "1e-4", "--epochs", "1", "--max-steps", "5"),
    *("--max-length", "20", "--sts-dev", "d", "--sts-format", "tsv", "--eval-every", "3"),
    *("--senteval", "S", "--senteval-tasks", "MR,CR", "--senteval-classifier", "pytorch"),
    *("--senteval-jobs", "2", "--seed", "7", "--device", "cpu", "--precision", "bf16"),
    *("--grad-accum", "2", "--compile", "--loss", "macl", "--loss-arg", "alpha=1.5"),
]


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        ([], {}),
        (["--sts-dev", "d.tsv"], {"sts_dev": "d.tsv", "eval_steps": 125}),
        (["--eval-every", "9"], {}),  # eval_steps applies with --sts-dev only
        (["--epochs", "3", "--seed", "0"], {"epochs": 3, "seed": 0}),
        (
            ["--preset", "macl-roberta", "--sts-dev", "d", "--eval-every", "7"],
            {
                "loss": "macl",
                "loss_args": {"temperature": 0.05, "alpha": 2.0, "a0": 0.8, "reweight": False},
                "lr": 1e-5,
                "pooling": "cls",
                "mlp_head": True,
                "dropout": 0.2,
                "sts_dev": "d",
                "eval_steps": 7,
            },
        ),
        (
            ["--preset", "paradigm-mmhs-bert", "--batch-size", "8"],
            {
                "loss": "mmhs",
                "loss_args": {"margin": 0.3, "ratio": 1.75},
                "batch_size": 8,
                "lr": 1e-5,
                "pooling": "cls",
                "mlp_head": True,
            },
        ),
        (
            EVERY_FLAG,
            {
                "loss": "macl",
                "loss_args": {"alpha": 1.5},  # the framework adds its defaults in the run
                "text_model": "m",
                "pooling": "mean",
                "mlp_head": True,
                "dropout": 0.3,
                "batch_size": 16,
                "lr": 1e-4,
                "epoch_steps": 5,
                "max_length": 20,
                "sts_dev": "d",
                "sts_format": "tsv",
                "eval_steps": 3,
                "senteval": "S",
                "senteval_tasks": "MR,CR",
                "senteval_classifier": "pytorch",
                "senteval_jobs": 2,
                "seed": 7,
                "device": "cpu",
                "precision": "bf16",
                "grad_accum": 2,
                "compile": True,
            },
        ),
    ],
    ids=["defaults", "sts_dev", "eval_every_alone", "epochs_seed", "preset", "preset_bs", "all"],
)
def test_a_command_line_gives_the_config_it_gave_before(
    monkeypatch: pytest.MonkeyPatch, argv: list[str], expected: dict[str, Any]
) -> None:
    assert _config(monkeypatch, argv).to_dict() == _recipe(**expected).to_dict()


def test_every_config_flag_is_generated_from_its_declaration() -> None:
    """Type, help and check come from the field's declaration; the parser holds no default
    (``None``: not given), so no default is declared a second time on a flag."""
    actions = _actions()
    for flag, key in simcse.CONFIG_FLAGS.items():
        d, action = DECLARATIONS[key], actions[flag]
        assert action.default is None, f"{flag} declares its own default"
        if d.kind is bool:
            assert action.nargs == 0 and action.type is None, flag
        else:
            assert action.type is d.kind, f"{flag} declares its own type"
        text = simcse.OWN_HELP.get(flag, d.help)
        assert action.help is not None and action.help.startswith(text), flag
        assert action.help == with_notes(key, simcse.flag_help(flag))


def test_simcse_defaults_are_declared_once() -> None:
    """simcse's own defaults differ from the declarations' (a copy would be a second
    declaration) and are not the preset options' (``BUILTIN``'s)."""
    dests = {flag[2:].replace("-", "_"): key for flag, key in simcse.CONFIG_FLAGS.items()}
    for key, value in simcse.OWN_DEFAULTS.items():
        assert key in simcse.CONFIG_FLAGS.values()
        assert value != DECLARATIONS[key].default, f"{key}: the declaration's default, again"
    assert not {dests.get(name) for name in BUILTIN} & set(simcse.OWN_DEFAULTS)


def test_help_shows_the_defaults_from_where_they_are_declared(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert "(default 64, or the --preset's)" in simcse.flag_help("--batch-size")
    assert "(default 42)" in simcse.flag_help("--seed")
    monkeypatch.setitem(BUILTIN, "batch_size", 99)
    monkeypatch.setitem(simcse.OWN_DEFAULTS, "seed", 5)
    assert "(default 99, or the --preset's)" in simcse.flag_help("--batch-size")
    assert "(default 5)" in simcse.flag_help("--seed")
    # TrainConfig's default is the declaration's own text's business: nothing added
    assert simcse.flag_help("--grad-accum") == DECLARATIONS["grad_accum"].help


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--epochs", "0"], "--epochs must be a positive integer, got 0"),
        (["--batch-size", "0"], "--batch-size must be a positive integer, got 0"),
        (["--max-length", "-1"], "--max-length must be a positive integer, got -1"),
        (["--eval-every", "0"], "--eval-every must be a positive integer"),
        (["--max-steps", "0"], "--max-steps must be a positive integer"),
        (["--seed", "-1"], "--seed must be an integer in [0, 2**32)"),
        (["--lr", "0"], "--lr must be > 0"),
        (["--device", "tpu"], "--device must be auto, cpu, cuda, cuda:N or mps"),
        (["--grad-accum", "0"], "--grad-accum must be a positive integer, got 0"),
        (["--max-steps", "2", "--epochs", "2"], "--max-steps caps a one-epoch run"),
    ],
)
def test_bad_values_are_one_line_errors_naming_the_flag(
    tmp_path: Any, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    out = tmp_path / "run"
    assert main(["simcse", "--train-file", str(tmp_path / "t.txt"), "--out", str(out), *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("contrastkit: error: ") and err.count("\n") == 1, err
    assert message in err, err
    assert not out.exists()


def test_the_train_file_is_required(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simcse", "--out", "nowhere"]) == 2
    assert "--train-file is required" in capsys.readouterr().err


def test_add_config_argument_renames_and_rewords() -> None:
    parser = argparse.ArgumentParser()
    add_config_argument(parser, "epochs")
    add_config_argument(parser, "epoch_steps", "--max-steps", help="a cap", dest="cap")
    add_config_argument(parser, "compile")
    args = parser.parse_args(["--epochs", "3", "--max-steps", "4", "--no-compile"])
    assert (args.epochs, args.cap, args.compile) == (3, 4, False)
    assert parser.parse_args([]).epochs is None
    helps = {a.dest: a.help for a in parser._actions}
    assert helps["epochs"] == DECLARATIONS["epochs"].help and helps["cap"] == "a cap"
    with pytest.raises(KeyError):
        add_config_argument(parser, "loss_args")  # no flag of its own (cli=False)
