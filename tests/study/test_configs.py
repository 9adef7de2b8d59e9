"""Every shipped study config loads, and arms shared between studies (same runs directory
and label) have identical run configs, so a shared run means the same thing in each."""

from __future__ import annotations

from pathlib import Path

import pytest

from contrastkit.study import load_study

CONFIGS = sorted((Path(__file__).parents[2] / "configs" / "studies").glob("*.yaml"))


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.stem)
def test_study_config_loads_with_a_claim_and_a_judged_arm(path: Path) -> None:
    study = load_study(path)
    assert study.claim and len(study.seeds) >= 3
    assert any(arm.judged for arm in study.arms)


def test_shared_arms_have_identical_configs() -> None:
    seen: dict[tuple[str, str], tuple[dict, str]] = {}
    for path in CONFIGS:
        study = load_study(path)
        for arm in study.arms:
            key = (str(study.runs_dir), arm.slug)
            config = arm.config.to_dict()
            if key in seen:
                assert seen[key][0] == config, f"{arm.label}: {path.name} vs {seen[key][1]}"
            seen[key] = (config, path.name)
