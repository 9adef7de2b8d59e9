"""Every shipped study config loads, arms shared between studies (same runs directory and
label) have identical run configs, so a shared run means the same thing in each, and every
suite gathers shipped studies."""

from __future__ import annotations

from pathlib import Path

import pytest

from contrastkit.study import Suite, load_config, load_study

from .tiny import TINY, write_study

ALL = sorted((Path(__file__).parents[2] / "configs" / "studies").glob("*.yaml"))
SUITES = [p for p in ALL if isinstance(load_config(p), Suite)]
CONFIGS = [p for p in ALL if p not in SUITES]


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.stem)
def test_study_config_loads_with_a_claim_and_a_judged_arm(path: Path) -> None:
    study = load_study(path)
    assert study.claim and len(study.seeds) >= 3
    assert any(arm.judged for arm in study.arms)


def test_macl_table9_is_a_suite_of_the_three_batch_sizes() -> None:
    suite = load_config(ALL[0].parent / "macl_table9.yaml")
    assert isinstance(suite, Suite) and suite.claim
    assert [p.arms[0].config.batch_size for p in suite.parts] == [64, 256, 1024]
    assert all(source in CONFIGS for source in suite.sources)


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


def test_an_arm_s_mappings_add_to_the_base_s_key_by_key(tmp_path: Path) -> None:
    """``loss_args`` (and ``modality_args``): an arm's keys over the base's, the others kept."""
    base = {**TINY, "loss_args": {"temperature": 0.2}}
    arms = [{"label": "ntxent", "loss": "ntxent"},
            {"label": "macl", "loss": "macl", "loss_args": {"alpha": 0.3}}]  # fmt: skip
    study = load_study(write_study(tmp_path / "s.yaml", base=base, arms=arms, seeds=[0, 1, 2]))
    args = {arm.label: arm.config.loss_args for arm in study.arms}
    assert args == {"ntxent": {"temperature": 0.2}, "macl": {"temperature": 0.2, "alpha": 0.3}}
