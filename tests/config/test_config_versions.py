"""The config format's versions: an unstamped run's config.yaml (0.1.0's, stored) migrates to the
current version with the behaviour it started with; a current one passes unchanged; a newer or
broken version is one line."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from zeropipe.config import ConfigError, dump_config, load_config
from zeropipe.config.loader import config_from_dict, read_yaml
from zeropipe.config.versions import CONFIG_VERSION, migrate_config

FIXTURES = Path(__file__).parent / "fixtures"
ROOT = Path(__file__).resolve().parents[2]


def test_a_0_1_config_migrates_to_the_current_version_with_its_older_behaviour():
    raw = read_yaml(FIXTURES / "v0_1_unizero_config.yaml")
    assert "config_version" not in raw  # 0.1.0 wrote none: version 1
    notes = migrate_config(raw)
    cfg = config_from_dict(raw)
    assert cfg.config_version == CONFIG_VERSION == 2
    assert (cfg.policy.bootstrap_values, cfg.policy.priority_td) == ("per_observation", "root")
    assert cfg.policy.actor_inference == "eager" and cfg.policy.optimizer_groups == "one"
    assert cfg.policy.n_step_horizon == "per_step"
    assert len(notes) == 6 and all("written before the option existed" in n for n in notes)


def test_a_current_config_is_stamped_and_passes_unchanged():
    cfg = load_config(ROOT / "configs" / "cartpole_unizero.yaml")
    raw = yaml.safe_load(dump_config(cfg))
    assert raw["config_version"] == CONFIG_VERSION
    before = yaml.safe_dump(raw)
    assert migrate_config(raw) == [] and yaml.safe_dump(raw) == before


def test_a_stamped_config_missing_a_later_option_gets_its_older_value():
    # a version-2 config.yaml spells out every option of its time: one it lacks came later
    raw = yaml.safe_load(dump_config(load_config(ROOT / "configs" / "cartpole_unizero.yaml")))
    del raw["policy"]["optimizer_groups"], raw["policy"]["n_step_horizon"]
    notes = migrate_config(raw)
    cfg = config_from_dict(raw)
    assert (cfg.policy.optimizer_groups, cfg.policy.n_step_horizon) == ("one", "per_step")
    assert len(notes) == 2 and all("written before the option existed" in n for n in notes)


@pytest.mark.parametrize(
    ("version", "needle"),
    [(3, "written by a newer zeropipe"), (0, "is not a config version"), ("2", "not a config")],
)
def test_a_newer_or_broken_version_is_refused(version, needle: str):
    with pytest.raises(ConfigError, match=needle):
        migrate_config({"config_version": version})
