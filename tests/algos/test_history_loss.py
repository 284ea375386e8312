"""muzero_rnn_full_obs's teacher-forced unroll loss: every step reads its own encoded observation,
masks stop what lies past the data, the SSL term compares predicted and encoded latents, and the
steps are summed with weight 1 as in the reference."""

from __future__ import annotations

import dataclasses

import torch

from tests.learner.factories import OBS, A, tiny_policy
from zeropipe.algos.losses import UnrollInputs
from zeropipe.algos.muzero_rnn_full_obs import MUZERO_RNN_FULL_OBS, history_loss
from zeropipe.models import scalar_to_two_hot

B, K = 4, 2


def _setup(ssl: float = 2.0):
    cfg = tiny_policy(type="muzero_rnn_full_obs", num_unroll_steps=K, ssl_loss_weight=ssl)
    torch.manual_seed(0)
    net = MUZERO_RNN_FULL_OBS.build_network((OBS,), A, cfg)
    with torch.no_grad():
        for p in net.parameters():
            torch.nn.init.normal_(p, std=0.2)
    obs = torch.randn(B, K + 1, OBS, requires_grad=True)
    inputs = UnrollInputs(
        root_obs=obs[:, 0],
        actions=torch.randint(0, A, (B, K)),
        value_target=torch.rand(B, K + 1),
        reward_target=torch.rand(B, K),
        policy_target=torch.softmax(torch.randn(B, K + 1, A), dim=-1),
        value_mask=torch.ones(B, K + 1),
        reward_mask=torch.ones(B, K),
        policy_mask=torch.ones(B, K + 1),
        obs_seq=obs,
    )
    return cfg, net.train(), obs, inputs


def test_every_unroll_step_reads_its_own_encoded_observation():
    cfg, net, obs, inputs = _setup(ssl=0.0)
    history_loss(net, inputs, cfg).per_sample.sum().backward()
    per_step = obs.grad.abs().sum(dim=(0, 2))  # [K+1]
    assert bool((per_step > 0).all())  # teacher forcing: no step's observation is ignored


def test_nothing_past_the_data_reaches_the_loss():
    # No SSL here: its projection's BatchNorm couples the samples of a batch, as in MuZero's.
    cfg, net, obs, inputs = _setup(ssl=0.0)
    live = torch.tensor([0.0, 1.0, 1.0, 1.0])[:, None].expand(B, K)  # sample 0 ends after o_0
    state_mask = torch.cat((torch.ones(B, 1), live), dim=1)  # [B, K+1]
    masked = dataclasses.replace(
        inputs, value_mask=state_mask, policy_mask=state_mask, reward_mask=live.clone()
    )
    history_loss(net, masked, cfg).per_sample.sum().backward()
    assert obs.grad[0, 1:].abs().sum() == 0
    assert obs.grad[1, 1:].abs().sum() > 0


def test_the_ssl_term_is_weighted_into_the_per_sample_loss():
    cfg, net, _, inputs = _setup(ssl=2.0)
    torch.manual_seed(1)
    with_ssl = history_loss(net, inputs, cfg)
    without = history_loss(net, inputs, cfg.model_copy(update={"ssl_loss_weight": 0.0}))
    ssl = with_ssl.terms["ssl_loss"]
    assert ssl != 0
    gap = (with_ssl.per_sample - without.per_sample).mean()
    assert torch.allclose(gap, 2.0 * ssl, atol=1e-5)


@torch.no_grad()
def test_every_step_is_summed_with_weight_one_and_the_reward_is_the_grus():
    # The reference sums the K+1 steps' terms with no 1/K scaling (policy file lines 449-455).
    cfg, net, obs, inputs = _setup(ssl=0.0)
    net.eval()  # BatchNorm in eval mode: the pieces below see the statistics the loss saw
    loss = history_loss(net, inputs, cfg)
    true = [net.encode(obs[:, k]) for k in range(K + 1)]
    history = torch.zeros(B, net.layout.history_size)
    value_cat = scalar_to_two_hot(inputs.value_target, net.value_support)
    reward_cat = scalar_to_two_hot(inputs.reward_target, net.reward_support)
    value, policy = net.prediction(true[0], history)
    pol, val = _ce(policy, inputs.policy_target[:, 0]), _ce(value, value_cat[:, 0])
    ent, rew = _entropy(policy), torch.zeros(B)
    for k in range(K):
        _, history, reward = net.dynamics(true[k], history, inputs.actions[:, k])
        value, policy = net.prediction(true[k + 1], history)
        pol = pol + _ce(policy, inputs.policy_target[:, k + 1])
        val = val + _ce(value, value_cat[:, k + 1])
        ent = ent + _entropy(policy)
        rew = rew + _ce(reward, reward_cat[:, k])
    assert torch.allclose(loss.terms["policy_loss"], pol.mean(), atol=1e-5)
    assert torch.allclose(loss.terms["value_loss"], val.mean(), atol=1e-5)
    assert torch.allclose(loss.terms["reward_loss"], rew.mean(), atol=1e-5)
    expected = 1.0 * pol + 0.25 * val + 1.0 * rew - cfg.policy_entropy_weight * ent
    assert torch.allclose(loss.per_sample, expected, atol=1e-5)


def _ce(logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    return -(target * torch.log_softmax(logits, dim=-1)).sum(dim=-1)


def _entropy(logits: torch.Tensor) -> torch.Tensor:
    return -(torch.softmax(logits, -1) * torch.log_softmax(logits, -1)).sum(-1)
