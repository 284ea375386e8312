"""Config loading, overrides and one-line errors."""

from __future__ import annotations

import pytest

from zeropipe.config import ConfigError, dump_config, load_config
from zeropipe.config.schema import AsyncPipelineConfig, ExperimentConfig


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
    from zeropipe.config.schema import PolicyConfig

    cfg = PolicyConfig.model_validate({"type": policy_type, "sampled": sampled})
    assert cfg.sampled.prior == want_prior
    assert cfg.sampled.num_of_sampled_actions == sampled.get("num_of_sampled_actions", 6)
