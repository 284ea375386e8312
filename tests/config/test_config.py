"""Config loading, overrides and one-line errors."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from zeropipe.config import (
    AsyncPipelineConfig,
    ConfigError,
    ExperimentConfig,
    config_from_dict,
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
# Options added to a policy section after 0.1.0: an old file lacks them and gets their defaults.
ADDED_SINCE_V0_1 = {
    "policy": {
        "tie_break",
        "eval_tie_break",
        "actor_inference",
        "loss_weighting",
        "eval_grid",
        "bootstrap_values",
        "priority_td",
        "optimizer_groups",
        "n_step_horizon",
        "loss_masks",
        "kv_cache_clock",
        "policy_ls_eps_start",
        "policy_ls_eps_end",
        "policy_ls_eps_decay_steps",
        "use_encoder_clip_annealing",
        "encoder_clip_anneal_type",
        "encoder_clip_start_value",
        "encoder_clip_end_value",
        "encoder_clip_anneal_steps",
        "latent_norm_clip_threshold",
        "use_head_clip",
        "head_clip",
    },
    "async_pipeline": {
        "collect_freshness",
        "max_queued_evals",
        "request_deadline_factor",
        "min_request_deadline_s",
        "first_request_deadline_s",
        "collector_niceness",
    },
    "gumbel": {"prior_term", "collect_root_noise", "collect_action", "policy_loss"},
}


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
    added_options = ADDED_SINCE_V0_1["policy"]
    assert set(resolved["policy"]) - added_options < set(old["policy"])  # only the type's own
    for key in added_options:
        resolved["policy"].pop(key, None)  # loss_weighting: the MuZero family's only
    assert "stochastic" in old["policy"] and "stochastic" not in resolved["policy"]
    for key, value in resolved["policy"].items():
        if key == "model":
            continue
        if isinstance(value, dict):
            added = set(value) - set(old["policy"][key])
            assert added == ADDED_SINCE_V0_1.get(key, set()), key
            value = {k: v for k, v in value.items() if k not in added}
        assert old["policy"][key] == value, key


def test_another_types_option_in_an_old_file_that_is_not_its_default_is_refused(tmp_path):
    old = yaml.safe_load((FIXTURES / "v0_1_unizero_config.yaml").read_text())
    old["policy"]["gumbel"]["gumbel_scale"] = 10.0
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(old))
    with pytest.raises(ConfigError, match=r"policy\.gumbel is an option of policy\.type gumbel_mu"):
        load_config(path)


LIGHTZERO_KEYS = [
    "observation_shape",
    "action_space_size",
    "n_episode",
    "cuda",
    "model_type",
    "latent_state_dim",
    "piecewise_decay_lr_scheduler",
    "support_scale",
    "self_supervised_learning_loss",
    "random_collect_episode_num",
    "env_type",
    "mcts_ctree",
]


@pytest.mark.parametrize("key", LIGHTZERO_KEYS)
def test_a_lightzero_name_is_answered_with_the_name_to_use(cfg_file, key):
    for load in (
        lambda: load_config(cfg_file, [f"policy.{key}=1"]),
        lambda: config_from_dict({"env": {"env_id": "CartPole-v1"}, "policy": {key: 1}}),
    ):
        with pytest.raises(ConfigError) as info:
            load()
        message = str(info.value)
        assert key in message and "LightZero's name: " in message and "\n" not in message
        assert len(message) < 240


@pytest.mark.parametrize(
    ("overrides", "suggestion"),
    [
        (["policy.num_simulatons=3"], "did you mean 'num_simulations'?"),
        (["env.collector_env_nm=3"], "did you mean 'collector_env_num'?"),
        (["policy.model.latent_dm=3"], "did you mean 'latent_dim'?"),
    ],
)
def test_a_typo_answers_with_a_suggestion_in_one_short_line(cfg_file, overrides, suggestion):
    with pytest.raises(ConfigError) as info:
        load_config(cfg_file, overrides)
    assert str(info.value).endswith(suggestion) and len(str(info.value)) < 120
    key = overrides[0].split("=")[0]
    raw = {"env": {"env_id": "CartPole-v1"}, "policy": {}}
    node = raw
    for part in key.split(".")[:-1]:
        node = node.setdefault(part, {})
    node[key.split(".")[-1]] = 3
    with pytest.raises(ConfigError, match=suggestion.replace("?", r"\?")):
        config_from_dict(raw)


def test_a_key_given_twice_in_a_file_is_refused(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("env: {env_id: CartPole-v1}\npolicy: {batch_size: 8}\npolicy: {td_steps: 3}\n")
    with pytest.raises(ConfigError, match=r"duplicate key 'policy'.*line 3"):
        load_config(path)


def test_a_huge_offending_value_is_cut_short(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(f"env: {{env_id: CartPole-v1}}\nseed: '{'x' * 10_000}'\n")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert "seed" in str(info.value) and len(str(info.value)) < 300


def test_describe_shows_each_fields_description_and_changed_default(cfg_file):
    from zeropipe.config.describe import describe_config

    text = describe_config(load_config(cfg_file, ["policy.td_steps=7"]))
    assert "  td_steps: 7  # n of the n-step value target (T). (default: 5)" in text
    assert "  batch_size: 8  # Learner batch size. (default: 256)" in text
    assert "    latent_dim: 128  # mlp: latent state size.\n" in text
