"""Other types' options in a `policy` mapping: dropped at their defaults, else one error each,
reported together with the section's own errors."""

from __future__ import annotations

import pytest

from zeropipe.config import ConfigError, config_from_dict


def test_every_other_types_option_and_own_error_is_one_line():
    policy = {
        "gumbel": {"gumbel_scale": 5},
        "model": {"rnn_hidden_size": 3},
        "batch_sise": 3,
    }
    with pytest.raises(ConfigError) as info:
        config_from_dict({"env": {"env_id": "CartPole-v1"}, "policy": policy}, source="c.yaml")
    assert info.value.lines == [
        "c.yaml: policy.gumbel is an option of policy.type gumbel_muzero, not of 'muzero'; "
        "remove it or change policy.type",
        "c.yaml: policy.model.rnn_hidden_size is an option of policy.type muzero_rnn_full_obs, "
        "not of 'muzero'; remove it or change policy.type",
        "c.yaml: unknown key 'policy.batch_sise'; did you mean 'batch_size'?",
    ]


def test_other_types_options_at_their_defaults_are_dropped():
    policy = {"model": {"rnn_hidden_size": 512}, "batch_size": 16}
    cfg = config_from_dict({"env": {"env_id": "CartPole-v1"}, "policy": policy})
    assert (
        cfg.policy.batch_size == 16 and "rnn_hidden_size" not in type(cfg.policy.model).model_fields
    )
