"""Presets carry the papers' numbers, build valid losses, and merge with explicit options."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from contrastkit.cli import main
from contrastkit.frameworks import SimCSE
from contrastkit.text.presets import BUILTIN, PRESETS, get_preset, resolve_options
from contrastkit.text.simcse_trainer import loss_hyperparameters


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_every_preset_builds_its_loss_with_exactly_its_arguments(name: str) -> None:
    preset = PRESETS[name]
    loss = SimCSE.make_loss(preset.loss, preset.loss_args, 8)
    hp = loss_hyperparameters(loss)
    assert all(hp[k] == v for k, v in preset.loss_args.items())
    assert preset.train["epochs"] == 1 and preset.train["max_length"] == 32
    assert preset.train["pooling"] == "cls" and preset.train["mlp_head"] is True


def test_preset_values_are_the_papers() -> None:
    assert get_preset("simcse-unsup-bert").train["lr"] == 3e-5
    assert get_preset("simcse-unsup-roberta").train["lr"] == 1e-5
    macl = get_preset("macl-roberta")
    assert macl.loss_args == {"temperature": 0.05, "alpha": 2.0, "a0": 0.8, "reweight": False}
    assert macl.train["batch_size"] == 64 and macl.train["lr"] == 1e-5
    # gradient-paradigm App. A.4, Table 4 (BERT) and Table 5 (RoBERTa)
    assert get_preset("paradigm-mmhe-bert").loss_args == {
        "margin": 0.30,
        "ratio": 1.75,
        "temperature": 0.05,
    }
    assert get_preset("paradigm-mmhs-roberta").loss_args == {"margin": 0.27, "ratio": 1.0}
    rob = get_preset("paradigm-mvicreg-roberta")
    assert rob.loss_args["margin"] == 0.37 and rob.train["batch_size"] == 512
    assert get_preset("paradigm-mbarlow-bert").train["batch_size"] == 128
    with pytest.raises(ValueError, match="--preset must be one of"):
        get_preset("simcse-sup")


def test_explicit_options_beat_the_preset_which_beats_the_builtin() -> None:
    given = dict.fromkeys(BUILTIN)
    options, args, _ = resolve_options({**given, "lr": 5e-5}, "paradigm-mmhe-roberta")
    assert options["lr"] == 5e-5 and options["batch_size"] == 512 and options["loss"] == "mmhe"
    assert args["ratio"] == 1.25
    options, args, preset = resolve_options(given, None)
    assert options == BUILTIN and args == {} and preset is None
    with pytest.raises(ValueError, match="conflicts with --preset"):
        resolve_options({**given, "loss": "infonce"}, "macl-bert")


def test_simcse_preset_prints_what_it_sets_and_trains(
    tmp_path: Path, tiny_bert: Path, sentences: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    train = tmp_path / "train.txt"
    train.write_text("\n".join(sentences) + "\n")
    out = tmp_path / "run"
    argv = ["simcse", "--model", str(tiny_bert), "--train-file", str(train), "--out", str(out)]
    argv += ["--preset", "macl-bert", "--batch-size", "4", "--max-steps", "1", "--no-progress"]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "preset macl-bert (MACL App. B.4)" in printed and "alpha=2.0" in printed
    assert "--dropout=0.2" in printed and "cls pooling, dropout 0.2" in printed
    history = json.loads((out / "history.json").read_text())
    assert history["config"]["batch_size"] == 4 and history["config"]["lr"] == 3e-5
    # per-step diagnostics are logged and plotted
    assert len(history["diagnostics"]["hardest_share"]) == history["steps"] == 1
    assert (out / "diagnostics.png").read_bytes()[:4] == b"\x89PNG"
