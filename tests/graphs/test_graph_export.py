"""``contrastkit export`` of graph runs: the GIN of a TU run and the drug-target encoder of
a Davis run are registered architectures, rebuilt by ``load_encoder`` with the run's
features."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from contrastkit.cli import main
from contrastkit.graphs.dta import GraphDTAEncoder
from contrastkit.graphs.gin import GINEncoder
from contrastkit.models import load_encoder, save_encoder
from contrastkit.models.export import SPEC
from contrastkit.training import TrainConfig, trainer_class


def test_a_tu_run_exports_its_gin(two_class_tu: Path, tmp_path: Path) -> None:
    run, out = tmp_path / "run", tmp_path / "gin"
    values = {"dataset": "tu:RINGS", "data_root": str(two_class_tu), "epochs": 1}
    config = TrainConfig(**values, batch_size=16, width=8, feature_dim=16, proj_dim=8)
    trainer = trainer_class(config)(config, run, progress=False)
    trainer.fit()
    assert main(["export", str(run), "--out", str(out)]) == 0
    spec = json.loads((out / SPEC).read_text())
    assert spec["architecture"] == "gin"
    graphs = trainer.data.x_train
    assert spec["args"] == {"in_dim": graphs.num_features, "width": 8, "layers": 2}
    encoder = load_encoder(out)
    assert isinstance(encoder, GINEncoder)
    with torch.no_grad():
        assert torch.equal(encoder(graphs), trainer.model.encode(graphs))


def test_graph_dta_encoder_round_trip(tmp_path: Path) -> None:
    pytest.importorskip("rdkit")
    from contrastkit.graphs.davis import ATOM_FEATURES, load_davis

    from .test_graph_davis import write_davis

    torch.manual_seed(0)
    enc = GraphDTAEncoder(ATOM_FEATURES, feature_dim=16, width=8, layers=2, kernel=3)
    pairs = load_davis(write_davis(tmp_path / "davis")).x_train
    enc(pairs)  # move the batch-norm running statistics off their init
    enc.eval()
    spec_args = {"atom_features": ATOM_FEATURES, "feature_dim": 16, "width": 8, "layers": 2}
    out = save_encoder(enc, tmp_path / "dta")
    spec = json.loads((out / SPEC).read_text())
    assert spec["architecture"] == "graph_dta"
    assert spec["args"] == {**spec_args, "embed_dim": 32, "filters": 32, "kernel": 3}
    with torch.no_grad():
        assert torch.equal(load_encoder(out)(pairs), enc(pairs))
