"""Every image recipe under configs/images builds valid runs (no data is read)."""

from __future__ import annotations

from pathlib import Path

import pytest

from contrastkit.cli import build_parser
from contrastkit.commands.compare import plan
from contrastkit.training import TrainConfig, load_yaml

CONFIGS = sorted((Path(__file__).parents[2] / "configs" / "images").glob("*.yaml"))


@pytest.mark.parametrize("config", CONFIGS, ids=lambda p: p.stem)
def test_image_configs_build_valid_runs(config: Path) -> None:
    values = load_yaml(config)
    if "runs" in values or "losses" in values:  # a `compare` recipe
        runs, seeds, _ = plan(build_parser().parse_args(["compare", "--config", str(config)]))
        assert runs and seeds
        assert all(cfg.backbone.startswith("resnet") for _, cfg in runs)
    else:  # a `train` config
        values.pop("out", None)
        assert TrainConfig.from_dict(values).backbone.startswith("resnet")
