"""Every YAML file under configs/ goes through the validation of the command that runs it
(``study``, ``compare`` or ``train``), so a renamed key or a bad value cannot rot in a
shipped recipe. No data is read and nothing is trained."""

from __future__ import annotations

from pathlib import Path

import pytest

from contrastkit.cli import build_parser
from contrastkit.commands.compare import plan
from contrastkit.commands.train import check_config
from contrastkit.study import Suite, load_config
from contrastkit.training import TrainConfig, load_yaml

ROOT = Path(__file__).parents[2] / "configs"
CONFIGS = sorted(ROOT.rglob("*.yaml"))


def _configs(path: Path) -> list[TrainConfig]:
    """The run configs ``path`` declares, validated as its command would."""
    if path.relative_to(ROOT).parts[0] == "studies":
        target = load_config(path)
        studies = target.parts if isinstance(target, Suite) else [target]
        return [arm.config for study in studies for arm in study.arms]
    values = load_yaml(path)
    if "runs" in values or "losses" in values:
        runs, seeds, _ = plan(build_parser().parse_args(["compare", "--config", str(path)]))
        assert seeds
        return [cfg for _, cfg in runs]
    values.pop("out", None)
    config = TrainConfig.from_dict(values)
    check_config(config, values)
    return [config]


def test_every_config_folder_is_covered() -> None:
    folders = {p.relative_to(ROOT).parts[0] if len(p.relative_to(ROOT).parts) > 1 else "."
               for p in CONFIGS}  # fmt: skip
    assert {".", "images", "graphs", "studies"} <= folders and len(CONFIGS) >= 30


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: str(p.relative_to(ROOT)))
def test_shipped_config_is_valid(path: Path) -> None:
    configs = _configs(path)
    assert configs
    if path.parent.name == "images":
        assert all(cfg.backbone.startswith("resnet") for cfg in configs)
        if path.read_text().startswith("# GPU recipe"):  # the paper's optimiser, spelt out
            text = load_yaml(path)
            assert {"optimizer", "lr", "schedule", "weight_decay"} <= set(text), path.name
