"""LightZero's key names are answered with what to write here (a rule table, written by hand)."""

from __future__ import annotations

import pytest

from zeropipe.config import ConfigError, config_from_dict

ENV = {"env_id": "CartPole-v1"}

# (where the LightZero key is written, the key) -> (words the one line must hold, words it must
# not hold; "" for none)
CASES = {
    ("policy", "model_path"): (["use train --init-from CKPT"], ""),
    ("policy.model", "lstm_hidden_size"): (["of efficientzero / sampled_efficientzero)"], "dim'"),
    ("policy", "lstm_hidden_size"): (["not used by policy.type 'muzero' (it has no LSTM"], "mean"),
    ("policy.model", "res_connection_in_dynamics"): (["policy.model.dynamics_residual"], ""),
    ("policy", "collector_env_num"): (["use env.collector_env_num"], ""),
    ("policy", "evaluator_env_num"): (["use env.evaluator_env_num"], ""),
    ("env", "manager"): (
        [
            "in LightZero, DI-engine's env manager (",
            "zeropipe does not need it (each collector steps",
        ],
        "LightZero's name",
    ),
    ("policy.model", "discrete_action_encoding_type"): (
        ["in LightZero, how a discrete action", "does not need it (a discrete action"],
        "",
    ),
    ("", "create_config"): (
        [
            "in LightZero, the DI-engine import names",
            "does not need it (policy.type and env.env_id pick",
        ],
        "",
    ),
}


def _raw(where: str, key: str) -> dict:
    raw: dict = {"env": dict(ENV), "policy": {"model": {}}}
    node = raw
    for part in filter(None, where.split(".")):
        node = node[part]
    node[key] = 1
    return raw


@pytest.mark.parametrize(("where", "key"), list(CASES))
def test_lightzero_key_gets_zeropipes_name(where, key):
    wants, not_want = CASES[where, key]
    with pytest.raises(ConfigError) as info:
        config_from_dict(_raw(where, key))
    (line,) = info.value.lines
    path = f"{where}.{key}".lstrip(".")
    assert f"unknown key '{path}'" in line, line
    assert [want for want in wants if want not in line] == [], line
    assert not not_want or not_want not in line, line


@pytest.mark.parametrize(
    ("policy_type", "want"),
    [
        (
            "efficientzero",
            "LightZero's name (the value-prefix LSTM): use policy.value_prefix.lstm_hidden_size",
        ),
        ("sampled_efficientzero", "use policy.value_prefix.lstm_hidden_size"),
        ("unizero", "not used by policy.type 'unizero' (it has no LSTM"),
        ("gumbel_muzero", "not used by policy.type 'gumbel_muzero' (it has no LSTM"),
    ],
)
def test_lstm_hidden_size_is_answered_for_the_configs_type(policy_type, want):
    raw = {"env": ENV, "policy": {"type": policy_type, "model": {"lstm_hidden_size": 64}}}
    with pytest.raises(ConfigError) as info:
        config_from_dict(raw)
    (line,) = info.value.lines
    assert "unknown key 'policy.model.lstm_hidden_size'" in line and want in line, line


def test_lstm_hidden_size_is_valid_where_the_value_prefix_types_read_it():
    raw = {
        "env": ENV,
        "policy": {"type": "efficientzero", "value_prefix": {"lstm_hidden_size": 64}},
    }
    assert config_from_dict(raw).policy.value_prefix.lstm_hidden_size == 64


# (policy.type, a key written directly in `policy`, the help the one line ends with)
FLAT_KEYS = [
    ("muzero", "latent_dim", "did you mean 'policy.model.latent_dim'?"),
    (
        "muzero",
        "max_num_considered_actions",
        "an option of policy.type gumbel_muzero ('policy.gumbel.max_num_considered_actions' there)",
    ),
    (
        "muzero",
        "lstm_horizon_len",
        "an option of policy.type efficientzero / sampled_efficientzero "
        "('policy.value_prefix.lstm_horizon_len' there)",
    ),
    ("gumbel_muzero", "gumbel_scale", "did you mean 'policy.gumbel.gumbel_scale'?"),
]


@pytest.mark.parametrize(("policy_type", "key", "want"), FLAT_KEYS)
def test_a_sections_key_written_flat_in_policy_names_its_section(policy_type, key, want):
    raw = {"env": ENV, "policy": {"type": policy_type, key: 1}}
    with pytest.raises(ConfigError) as info:
        config_from_dict(raw)
    assert info.value.lines == [f"<dict>: unknown key 'policy.{key}'; {want}"]
