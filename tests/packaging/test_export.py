"""``contrastkit export`` and ``contrastkit.models.load_encoder``: the encoder of a run,
alone, gives exactly the run's features; bad input is one line and destroys nothing."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest
import torch

from contrastkit.cli import main
from contrastkit.models import ConvEncoder, load_encoder, save_encoder
from contrastkit.models.export import SPEC, WEIGHTS, architectures
from contrastkit.tabular import MLPEncoder
from contrastkit.training import TrainConfig, Trainer


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> tuple[Trainer, Path]:
    """One small epoch of SimCLR on the digits, in a run directory."""
    run = tmp_path_factory.mktemp("run")
    config = TrainConfig(
        dataset="digits", epochs=1, batch_size=128, feature_dim=16, width=4, proj_dim=8
    )
    trainer = Trainer(config, run, progress=False)
    trainer.fit()
    return trainer, run


def test_exported_encoder_gives_the_runs_features(
    trained: tuple[Trainer, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trainer, run = trained
    out = tmp_path / "exported"
    assert main(["export", str(run), "--out", str(out)]) == 0
    assert "load_encoder" in capsys.readouterr().out
    assert sorted(p.name for p in out.iterdir()) == [SPEC, WEIGHTS]
    spec = json.loads((out / SPEC).read_text())
    assert spec["architecture"] == "conv"
    assert spec["args"] == {"kind": "2d", "input_shape": [1, 8, 8], "feature_dim": 16, "width": 4}
    assert spec["source"]["epoch"] == 1 and spec["source"]["config"]["loss"] == "ntxent"
    encoder = load_encoder(out)
    assert not encoder.training
    x = trainer.data.x_test
    with torch.no_grad():
        assert torch.equal(encoder(x), trainer.model.encode(x))
    # only the encoder: no projection head, no optimiser state
    assert set(encoder.state_dict()) == set(trainer.model.encoder.state_dict())


def test_mlp_encoder_round_trip(tmp_path: Path) -> None:
    torch.manual_seed(0)
    enc = MLPEncoder(in_dim=10, feature_dim=6, width=12)
    enc(torch.randn(32, 10))  # move the batch-norm running statistics off their init
    enc.eval()
    x = torch.randn(5, 10)
    loaded = load_encoder(save_encoder(enc, tmp_path / "mlp"))
    assert isinstance(loaded, MLPEncoder) and torch.equal(loaded(x), enc(x))


def export_error(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert main(["export", *argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("contrastkit: error: ")
    return err


def test_export_errors_are_one_line(
    trained: tuple[Trainer, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, run = trained
    out = str(tmp_path / "out")
    assert "does not exist" in export_error(capsys, str(tmp_path / "missing"), "--out", out)
    assert "not a run directory" in export_error(capsys, str(tmp_path), "--out", out)
    full = tmp_path / "full"
    full.mkdir()
    (full / "keep.txt").write_text("mine")
    assert "not empty" in export_error(capsys, str(run), "--out", str(full))
    assert (full / "keep.txt").read_text() == "mine" and not Path(out).exists()


def test_checkpoint_with_objects_is_refused_not_unpickled(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "run"
    run.mkdir()
    torch.save({"model": {}, "config": argparse.Namespace(a=1)}, run / "checkpoint.pt")
    err = export_error(capsys, str(run), "--out", str(tmp_path / "out"))
    assert "cannot be loaded" in err and "Weights only load failed" in err


def test_a_checkpoint_whose_content_does_not_match_its_digest_is_refused(
    trained: tuple[Trainer, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, run = trained
    altered = tmp_path / "altered"
    altered.mkdir()
    state = torch.load(run / "checkpoint.pt", weights_only=True)
    key = next(k for k, v in state["model"].items() if v.is_floating_point())
    state["model"][key] = state["model"][key] + 1.0  # the digest stays the original's
    torch.save(state, altered / "checkpoint.pt")
    err = export_error(capsys, str(altered), "--out", str(tmp_path / "out"))
    assert "is corrupt: its content does not match its SHA-256" in err
    assert not (tmp_path / "out").exists()


def test_load_encoder_errors(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=f"expected {SPEC} and {WEIGHTS}"):
        load_encoder(tmp_path)
    enc = ConvEncoder("1d", (1, 12), feature_dim=4, width=2)
    out = save_encoder(enc, tmp_path / "enc")
    spec = json.loads((out / SPEC).read_text())
    (out / SPEC).write_text(json.dumps({**spec, "args": {**spec["args"], "width": 3}}))
    with pytest.raises(ValueError, match="does not fit its architecture"):
        load_encoder(out)
    (out / SPEC).write_text(json.dumps({**spec, "architecture": "vit"}))
    registered = ["conv", "gin", "graph_dta", "image", "mlp", "resnet"]
    assert architectures() == registered
    with pytest.raises(
        ValueError, match=f"unknown architecture 'vit'; registered: {', '.join(registered)}"
    ):
        load_encoder(out)
    with pytest.raises(ValueError, match="not empty"):
        save_encoder(enc, out)
    # hand-edited or foreign files name the file instead of a library's traceback
    (out / SPEC).write_text(json.dumps({**spec, "args": {**spec["args"], "depth": 9}}))
    with pytest.raises(ValueError, match=rf"{SPEC}: its args do not build the encoder"):
        load_encoder(out)
    (out / SPEC).write_text(json.dumps(spec))
    (out / WEIGHTS).write_bytes((out / WEIGHTS).read_bytes()[:40])  # truncated
    with pytest.raises(ValueError, match=rf"{WEIGHTS} is not a readable safetensors file"):
        load_encoder(out)
    (out / SPEC).write_bytes(b"\xff\xfe{")
    with pytest.raises(ValueError, match=rf"{SPEC} is not valid JSON"):
        load_encoder(out)


def test_image_resnet_encoder_round_trip(tmp_path: Path) -> None:
    """An image run's encoder (uint8 input layer + ResNet) exports and rebuilds exactly."""
    from contrastkit.models import build_encoder

    torch.manual_seed(0)
    enc = build_encoder(
        "image", (3, 16, 16), backbone="resnet18", width=4, mean=[0.5, 0.4, 0.3], std=[0.2] * 3
    )
    x = torch.randint(0, 256, (6, 3, 16, 16), dtype=torch.uint8)
    enc(x)  # move the batch-norm running statistics off their init
    enc.eval()
    out = save_encoder(enc, tmp_path / "img")
    spec = json.loads((out / SPEC).read_text())
    assert spec["architecture"] == "image"
    assert spec["args"]["backbone"] == {
        "architecture": "resnet",
        "args": {"depth": "resnet18", "stem": "cifar", "width": 4, "in_channels": 3},
    }
    loaded = load_encoder(out)
    with torch.no_grad():
        assert torch.equal(loaded(x), enc(x))
