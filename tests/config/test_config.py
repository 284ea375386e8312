"""Config loading, overrides and one-line errors."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from zeropipe.config import (
    AsyncPipelineConfig,
    ConfigError,
    ExperimentConfig,
    dump_config,
    load_config,
)


@pytest.fixture
def cfg_file(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("exp_name: runs/x\nenv: {env_id: CartPole-v1}\npolicy: {batch_size: 8}\n")
    return path


def test_defaults_filled_and_override_typed(cfg_file):
    cfg = load_config(cfg_file, ["policy.batch_size=64", "policy.model.latent_dim=32"])
    assert cfg.policy.batch_size == 64 and isinstance(cfg.policy.batch_size, int)
    assert cfg.policy.model.latent_dim == 32
    assert cfg.policy.num_unroll_steps == 5
    assert "async_pipeline:" in dump_config(cfg)


@pytest.mark.parametrize(
    ("overrides", "needle"),
    [
        (["policy.batch_sise=3"], "batch_sise"),
        (["policy.batch_size=abc"], "policy.batch_size"),
        (["nope=1"], "nope"),
        (["policy.model.latent_dim.x=1"], "latent_dim"),
        (["policy.batch_size"], "KEY=VALUE"),
    ],
)
def test_bad_overrides_name_the_key(cfg_file, overrides, needle):
    with pytest.raises(ConfigError) as info:
        load_config(cfg_file, overrides)
    message = str(info.value)
    assert needle in message and "\n" not in message


def test_unknown_key_in_file(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("env: {env_id: CartPole-v1, colector_env_num: 2}\n")
    with pytest.raises(ConfigError, match=r"env\.colector_env_num"):
        load_config(path)


def test_every_field_has_a_description():
    def walk(model):
        for name, field in model.model_fields.items():
            assert field.description, f"{model.__name__}.{name} has no description"
            ann = field.annotation
            if isinstance(ann, type) and hasattr(ann, "model_fields"):
                walk(ann)

    walk(ExperimentConfig)


def test_async_defaults_derive_from_collectors():
    cfg = AsyncPipelineConfig(num_collector_actors=3)
    assert cfg.resolved_max_collect_inflight == 3
    assert cfg.resolved_max_train_budget_queue_size == 6
    assert AsyncPipelineConfig().resolved_max_train_budget_queue_size == 2


@pytest.mark.parametrize(
    ("policy_type", "sampled", "want_prior"),
    [
        ("sampled_efficientzero", {"num_of_sampled_actions": 2}, "density"),
        ("sampled_efficientzero", {"prior": "uniform"}, "uniform"),
        ("sampled_muzero", {"num_of_sampled_actions": 2}, "uniform"),
    ],
)
def test_a_types_nested_default_merges_with_the_given_section(policy_type, sampled, want_prior):
    from zeropipe.config import PolicyConfig

    cfg = PolicyConfig.model_validate({"type": policy_type, "sampled": sampled})
    assert cfg.sampled.prior == want_prior
    assert cfg.sampled.num_of_sampled_actions == sampled.get("num_of_sampled_actions", 6)


FIXTURES = Path(__file__).parent / "fixtures"


@pytest.mark.parametrize(
    ("name", "section"),
    [
        ("v0_1_unizero_config.yaml", "UniZeroConfig"),
        ("v0_1_gumbel_muzero_config.yaml", "GumbelMuZeroConfig"),
    ],
)
def test_a_config_yaml_of_the_previous_version_loads_as_its_types_section(name, section):
    """Before typed sections, a run's config.yaml spelled out every type's options at their
    defaults (these two were written by 0.1.0 at d79c6f5): they load, the other types' options
    are dropped, the type's own values are kept."""
    old = yaml.safe_load((FIXTURES / name).read_text())
    cfg = load_config(FIXTURES / name)
    assert type(cfg.policy).__name__ == section
    resolved = yaml.safe_load(dump_config(cfg))
    assert set(resolved["policy"]) < set(old["policy"])  # only the type's own fields are left
    assert "stochastic" in old["policy"] and "stochastic" not in resolved["policy"]
    for key, value in resolved["policy"].items():
        if key != "model":
            assert old["policy"][key] == value, key


def test_another_types_option_in_an_old_file_that_is_not_its_default_is_refused(tmp_path):
    old = yaml.safe_load((FIXTURES / "v0_1_unizero_config.yaml").read_text())
    old["policy"]["gumbel"]["gumbel_scale"] = 10.0
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(old))
    with pytest.raises(ConfigError, match=r"policy\.gumbel is an option of policy\.type gumbel_mu"):
        load_config(path)
