"""LightZero's key names are answered with what to write here (a rule table, written by hand)."""

from __future__ import annotations

import pytest

from zeropipe.config import ConfigError, config_from_dict

ENV = {"env_id": "CartPole-v1"}

# (where the LightZero key is written, the key, words the one line must hold, words it must not)
CASES = [
    ("policy", "model_path", "use train --init-from CKPT", ""),
    ("policy.model", "lstm_hidden_size", "policy.value_prefix.lstm_hidden_size", "hidden_dim'"),
    ("policy", "lstm_hidden_size", "the other types have no LSTM to size", "did you mean"),
    ("policy.model", "res_connection_in_dynamics", "policy.model.dynamics_residual", ""),
    ("policy", "collector_env_num", "use env.collector_env_num", ""),
    ("policy", "evaluator_env_num", "use env.evaluator_env_num", ""),
    ("env", "manager", "not needed: there is no DI-engine env manager", ""),
    ("policy.model", "discrete_action_encoding_type", "not needed: a discrete action", ""),
    ("", "create_config", "not needed: policy.type and env.env_id pick", ""),
]


def _raw(where: str, key: str) -> dict:
    raw: dict = {"env": dict(ENV), "policy": {"model": {}}}
    node = raw
    for part in filter(None, where.split(".")):
        node = node[part]
    node[key] = 1
    return raw


@pytest.mark.parametrize(("where", "key", "want", "not_want"), CASES)
def test_lightzero_key_gets_zeropipes_name(where, key, want, not_want):
    with pytest.raises(ConfigError) as info:
        config_from_dict(_raw(where, key))
    (line,) = info.value.lines
    path = f"{where}.{key}".lstrip(".")
    assert f"unknown key '{path}'" in line and want in line, line
    assert not not_want or not_want not in line, line


def test_lstm_hidden_size_is_valid_where_the_value_prefix_types_read_it():
    raw = {
        "env": ENV,
        "policy": {"type": "efficientzero", "value_prefix": {"lstm_hidden_size": 64}},
    }
    assert config_from_dict(raw).policy.value_prefix.lstm_hidden_size == 64
