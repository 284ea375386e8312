"""The algorithm seam: policy.type → Algorithm, per-type options, and a search policy that plugs
in without any caller reading visit counts."""

from __future__ import annotations

import numpy as np
import pytest

from tests.tiny import tiny_config
from zeropipe.algos import registry
from zeropipe.algos.algorithm import Algorithm
from zeropipe.algos.muzero import MUZERO, MuZeroConfig
from zeropipe.config import ConfigError, config_from_dict, dump_config
from zeropipe.mcts import SEARCH_POLICIES, PolicyOutput
from zeropipe.pipeline.build import build_collector


def _with(cfg, **policy):
    raw = cfg.model_dump(mode="json")
    raw["policy"].update(policy)
    return config_from_dict(raw)


def test_every_registered_type_builds_with_its_own_options(tmp_path):
    for name, algo in registry.ALGORITHMS.items():
        cfg = tiny_config(tmp_path, type=name)
        assert registry.algorithm(cfg.policy.type) is algo
        assert type(cfg.policy) is algo.config


@pytest.mark.parametrize(
    ("policy_type", "policy", "key"),
    [
        ("muzero", {"gumbel": {"max_num_considered_actions": 8}}, "policy.gumbel"),
        ("unizero", {"gumbel": {"gumbel_scale": 2.0}}, "policy.gumbel"),
        ("gumbel_muzero", {"kv_cache_clear_interval": 10}, "policy.kv_cache_clear_interval"),
        ("muzero", {"context_length_init": 3}, "policy.context_length_init"),
        ("unizero", {"context_length_init": 3}, "policy.context_length_init"),
        ("muzero_context", {"gumbel": {"gumbel_scale": 2.0}}, "policy.gumbel"),
        ("muzero", {"stochastic": {"chance_space_size": 4}}, "policy.stochastic"),
    ],
)
def test_another_types_option_is_a_config_error_naming_the_key(tmp_path, policy_type, policy, key):
    with pytest.raises(ConfigError) as info:
        _with(tiny_config(tmp_path, type=policy_type), **policy)
    assert key in str(info.value) and policy_type in str(info.value)


def test_a_world_model_setting_on_a_muzero_config_is_refused(tmp_path):
    cfg = tiny_config(tmp_path)
    raw = cfg.model_dump(mode="json")
    raw["policy"]["model"]["world_model"] = {"embed_dim": 32}
    with pytest.raises(ConfigError, match=r"policy\.model\.world_model"):
        config_from_dict(raw)


@pytest.mark.parametrize("policy_type", ["muzero", "muzero_context"])
def test_a_gru_history_size_on_another_type_is_refused(tmp_path, policy_type):
    raw = tiny_config(tmp_path, type=policy_type).model_dump(mode="json")
    raw["policy"]["model"]["rnn_hidden_size"] = 32
    with pytest.raises(ConfigError, match=r"policy\.model\.rnn_hidden_size.*muzero_rnn_full_obs"):
        config_from_dict(raw)


def test_the_context_length_is_an_option_of_both_carried_root_types(tmp_path):
    for name in ("muzero_context", "muzero_rnn_full_obs"):
        cfg = tiny_config(tmp_path, type=name, context_length_init=3)
        assert cfg.policy.context_length_init == 3


def test_a_resolved_config_with_every_default_spelled_out_still_loads(tmp_path):
    import yaml

    for name in registry.ALGORITHMS:
        cfg = tiny_config(tmp_path, type=name)
        again = config_from_dict(yaml.safe_load(dump_config(cfg)))
        assert again == cfg


def test_an_unimplemented_type_is_a_config_error_listing_the_available():
    with pytest.raises(
        ConfigError, match=r"'no_such_type' is not a policy type.*available: .*muzero"
    ):
        registry.algorithm("no_such_type")


def _last_action_policy(roots, recurrent_fn, cfg, rng, acting):
    """A search policy that never searches: always the last legal action, one-hot target."""
    mask = roots.action_mask
    batch, num_actions = mask.shape
    action = num_actions - 1 - np.argmax(mask[:, ::-1], axis=1)
    target = np.zeros((batch, num_actions), dtype=np.float32)
    target[np.arange(batch), action] = 1.0
    return PolicyOutput(
        action=action.astype(np.int64),
        policy_target=target,
        root_value=np.full(batch, 7.0, dtype=np.float32),
        q_values=np.zeros((batch, num_actions), dtype=np.float32),
        visit_counts=np.zeros((batch, num_actions), dtype=np.int32),
    )


def test_a_new_search_policy_plugs_in_through_the_registry_alone(tmp_path, monkeypatch):
    """One search-policy function + one registry entry: the unchanged Collector plays its action
    and stores its policy target and root value."""
    monkeypatch.setitem(SEARCH_POLICIES, "last", _last_action_policy)
    monkeypatch.setitem(registry.ALGORITHMS, "muzero", Algorithm(MuZeroConfig, MUZERO, "last"))
    collector = build_collector(tiny_config(tmp_path))
    try:
        result = collector.collect(temperature=1.0, epsilon=0.0)
    finally:
        collector.close()
    segment = result.segments[0]
    assert (segment.actions == 1).all()  # the chain env has two actions
    assert (segment.child_visits[:, 1] == 1.0).all() and (segment.child_visits[:, 0] == 0).all()
    assert (segment.root_values == 7.0).all()


def test_action_kind_mismatches_are_config_errors_naming_the_fix(tmp_path):
    cfg = tiny_config(tmp_path).policy  # muzero, discrete
    with pytest.raises(ConfigError, match=r"'Pendulum-v1' has Box actions of 1 dim.*"
                       r"sampled_efficientzero / sampled_muzero / sampled_unizero"):  # fmt: skip
        registry.check_action_kind(cfg, "Pendulum-v1", True, 1)
    registry.check_action_kind(cfg, "CartPole-v1", False, 2)
    raw = tiny_config(tmp_path, type="sampled_muzero").model_dump(mode="json")
    raw["policy"]["model"]["continuous_action_space"] = True
    continuous = config_from_dict(raw).policy
    with pytest.raises(ConfigError, match=r"2 discrete actions; set policy\.model\.continuous"):
        registry.check_action_kind(continuous, "CartPole-v1", False, 2)
    registry.check_action_kind(continuous, "Pendulum-v1", True, 1)
