"""The efficientzero family: value-prefix targets restart at the learner's LSTM resets for every
sample, its loss trains the prefix head, its options and defaults in the config."""

from __future__ import annotations

import pytest
import torch

from tests.tiny import tiny_config
from zeropipe.algos.efficientzero import EFFICIENTZERO, value_prefix_targets
from zeropipe.algos.losses import UnrollInputs
from zeropipe.config import ConfigError, config_from_dict


def test_value_prefix_targets_restart_at_the_same_positions_for_every_sample():
    torch.manual_seed(0)
    rewards = torch.randint(1, 5, (4, 8)).float()  # B = 4 samples, K = 8 steps
    prefix = value_prefix_targets(rewards, horizon=3)
    for b in range(4):
        running = 0.0
        for k in range(8):
            running = (0.0 if k % 3 == 0 else running) + float(rewards[b, k])
            assert float(prefix[b, k]) == running
    restarts = prefix == rewards  # positive rewards: the prefix equals the reward only at a restart
    assert restarts.all(dim=0).tolist() == [k % 3 == 0 for k in range(8)]
    assert (restarts == restarts[:1]).all()  # the same positions in every row


@torch.no_grad()
def test_target_restarts_are_where_the_learner_unroll_starts_from_a_zero_lstm_state(tmp_path):
    cfg = tiny_config(tmp_path, type="efficientzero", value_prefix={"lstm_horizon_len": 2})
    net = EFFICIENTZERO.build_network((4,), 2, cfg.policy).eval()
    k_steps = 5
    state = net.initial_inference(torch.rand(3, 4)).latent
    zero_before_step = []
    for _ in range(k_steps):
        zero_before_step.append(bool((net.layout.unpack(state).h == 0).all()))
        state = net.recurrent_inference(state, torch.zeros(3, dtype=torch.long)).latent
    ones = torch.ones(3, k_steps)
    restarts = (value_prefix_targets(ones, horizon=2) == 1).all(dim=0).tolist()
    assert zero_before_step == restarts == [True, False, True, False, True]


def _inputs(batch: int, k: int) -> UnrollInputs:
    torch.manual_seed(1)
    return UnrollInputs(
        root_obs=torch.rand(batch, 4),
        actions=torch.randint(0, 2, (batch, k)),
        value_target=torch.rand(batch, k + 1),
        reward_target=torch.ones(batch, k),
        policy_target=torch.softmax(torch.randn(batch, k + 1, 2), dim=-1),
        value_mask=torch.ones(batch, k + 1),
        reward_mask=torch.ones(batch, k),
        policy_mask=torch.ones(batch, k + 1),
        obs_seq=torch.rand(batch, k + 1, 4),
    )


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_the_loss_fits_the_prefix_head_to_value_prefixes(tmp_path):
    cfg = tiny_config(tmp_path, type="efficientzero", value_prefix={"lstm_horizon_len": 2})
    net = EFFICIENTZERO.build_network((4,), 2, cfg.policy)
    inputs = _inputs(16, 4)
    opt = torch.optim.Adam(net.parameters(), lr=1e-2)
    for _ in range(250):
        loss = EFFICIENTZERO.loss(net, net, inputs, cfg.policy, 0)
        opt.zero_grad()
        loss.per_sample.mean().backward()
        opt.step()
    assert {"value_prefix_loss", "ssl_loss"} <= set(loss.terms) and "reward_loss" not in loss.terms
    with torch.no_grad():  # batch statistics, as in training (running ones lag after few steps)
        state = net.initial_inference(inputs.root_obs).latent
        prefixes = []
        for k in range(4):
            state = net.recurrent_inference(state, inputs.actions[:, k]).latent
            prefixes.append(net.layout.unpack(state).prefix)
    # rewards of 1 with horizon 2: prefixes 1, 2, 1, 2 (not the per-step rewards 1, 1, 1, 1)
    mean = torch.stack(prefixes, 1).mean(0)
    torch.testing.assert_close(mean, torch.tensor([1.0, 2.0, 1.0, 2.0]), atol=0.15, rtol=0)


def test_efficientzero_defaults_are_the_references(tmp_path):
    policy = tiny_config(tmp_path, type="efficientzero").policy
    assert policy.ssl_loss_weight == 2.0 and policy.policy_entropy_weight == 0.0
    assert (policy.value_prefix.lstm_hidden_size, policy.value_prefix.lstm_horizon_len) == (512, 5)
    chosen = tiny_config(tmp_path, type="efficientzero", ssl_loss_weight=0.5).policy
    assert chosen.ssl_loss_weight == 0.5
    assert tiny_config(tmp_path).policy.ssl_loss_weight == 0.0  # muzero keeps its own default


@pytest.mark.parametrize("policy_type", ["muzero", "gumbel_muzero", "unizero"])
def test_a_value_prefix_setting_on_another_type_is_refused(tmp_path, policy_type):
    raw = tiny_config(tmp_path, type=policy_type).model_dump(mode="json")
    raw["policy"]["value_prefix"] = {"lstm_horizon_len": 3}
    with pytest.raises(ConfigError, match=r"policy\.value_prefix.*efficientzero"):
        config_from_dict(raw)
