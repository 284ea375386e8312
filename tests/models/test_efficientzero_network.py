"""EfficientZeroNetwork: the packed search state stepped k times equals a fresh unroll of its parts,
LSTM state zeroed at the horizon, and the search's reward from prefixes across a reset."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.models.test_network import small
from zeropipe.algos.network_search import NetworkSearch
from zeropipe.config import ValuePrefixConfig
from zeropipe.mcts import search_policy
from zeropipe.models import EfficientZeroNetwork, logits_to_scalar, scalar_to_two_hot

HORIZON = 3


@pytest.fixture(autouse=True)
def one_torch_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def _network(kind: str = "mlp", hidden: int = 6) -> EfficientZeroNetwork:
    torch.manual_seed(0)
    shape = (4,) if kind == "mlp" else (2, 8, 8)
    net = EfficientZeroNetwork(
        shape,
        3,
        small(kind=kind),
        ValuePrefixConfig(lstm_hidden_size=hidden, lstm_horizon_len=HORIZON),
    )
    last = net.reward_head.out[-1].layers[-1]
    with torch.no_grad():  # zero-initialised, it would predict prefix 0 everywhere
        torch.nn.init.normal_(last.weight, std=2.0)
        torch.nn.init.normal_(last.bias, std=2.0)
    return net.eval()


def _fresh_unroll(net: EfficientZeroNetwork, obs: torch.Tensor, actions: torch.Tensor):
    """The unroll recomputed from the network's parts: h, then g + LSTM (reset every H) and f."""
    latent = net.representation(obs)
    h = torch.zeros(obs.shape[0], net.lstm_hidden_size)
    c = torch.zeros_like(h)
    steps = []
    for k in range(actions.shape[1]):
        if k % HORIZON == 0:
            h, c = torch.zeros_like(h), torch.zeros_like(c)
        latent = net.dynamics(latent, actions[:, k])
        h, c = net.reward_head.lstm(net.reward_head.features(latent), (h, c))
        prefix_logits = net.reward_head.out(h)
        value_logits, policy_logits = net.prediction(latent)
        steps.append((latent, prefix_logits, value_logits, policy_logits))
    return steps


@pytest.mark.parametrize("kind", ["mlp", "conv"])
@torch.no_grad()
def test_stepping_the_packed_state_equals_a_fresh_unroll_with_resets(kind):
    net = _network(kind)
    obs = torch.rand(5, *net.input_shape)
    actions = torch.randint(0, 3, (5, 7))
    state = net.initial_inference(obs).latent
    expected = _fresh_unroll(net, obs, actions)
    for k, (latent, prefix_logits, value_logits, policy_logits) in enumerate(expected):
        out = net.recurrent_inference(state, actions[:, k])
        state = out.latent
        unpacked = net.layout.unpack(state)
        torch.testing.assert_close(unpacked.latent, latent)
        torch.testing.assert_close(out.reward_logits, prefix_logits)
        torch.testing.assert_close(out.value_logits, value_logits)
        torch.testing.assert_close(out.policy_logits, policy_logits)
        assert torch.equal(unpacked.depth, torch.full((5,), float(k + 1)))
        prefix = logits_to_scalar(prefix_logits, net.reward_support)
        torch.testing.assert_close(unpacked.prefix, prefix)
        # the state the children start from is zero exactly at depths that are multiples of H
        assert bool((unpacked.h == 0).all()) == ((k + 1) % HORIZON == 0)


@torch.no_grad()
def test_a_batch_of_nodes_at_different_depths_steps_like_each_node_alone():
    net = _network()
    obs = torch.rand(1, 4)
    states = [net.initial_inference(obs).latent]
    for a in (0, 1, 2, 1, 0):
        states.append(net.recurrent_inference(states[-1], torch.tensor([a])).latent)
    batch = torch.cat(states)  # depths 0..5, as the search gathers leaves' parents
    actions = torch.tensor([2, 0, 1, 1, 2, 0])
    together = net.recurrent_inference(batch, actions)
    rewards = net.transition_reward(batch, together)
    for i, state in enumerate(states):
        alone = net.recurrent_inference(state, actions[i : i + 1])
        torch.testing.assert_close(together.latent[i : i + 1], alone.latent)
        alone_reward = net.transition_reward(state, alone)
        torch.testing.assert_close(rewards[i : i + 1], alone_reward, rtol=1e-5, atol=1e-4)


def _constant_prefix_network(prefix: int) -> EfficientZeroNetwork:
    """A network whose value-prefix head always puts all its mass on `prefix`."""
    net = _network()
    last = net.reward_head.out[-1].layers[-1]
    two_hot = scalar_to_two_hot(torch.tensor(float(prefix)), net.reward_support)
    with torch.no_grad():
        last.weight.zero_()
        last.bias.copy_(two_hot.log().clamp_min(-1e4))
    return net


@torch.no_grad()
def test_search_reward_is_the_prefix_difference_across_a_horizon_reset():
    net = _constant_prefix_network(2)
    search = NetworkSearch(net, 1, search_policy("puct"))
    state = net.initial_inference(torch.rand(1, 4)).latent
    rewards = []
    for _ in range(8):  # depths 1..8 with H = 3: resets at depths 3 and 6
        step = search._recurrent(state, np.array([1]))
        rewards.append(float(step.reward[0]))
        state = step.latent
    # prefix 2 at every node: the first step after the root or a reset earns it, the others 0
    assert rewards == pytest.approx([2, 0, 0, 2, 0, 0, 2, 0], abs=1e-4)


@torch.no_grad()
def test_search_reward_matches_hand_computed_prefix_differences():
    net = _network()
    search = NetworkSearch(net, 1, search_policy("puct"))
    state = net.initial_inference(torch.rand(2, 4)).latent
    prefixes, rewards = [np.zeros(2)], []
    for depth in range(1, 8):
        step = search._recurrent(state, np.array([depth % 3, (depth + 1) % 3]))
        out = net.recurrent_inference(state, torch.tensor([depth % 3, (depth + 1) % 3]))
        prefixes.append(logits_to_scalar(out.reward_logits, net.reward_support).numpy())
        parent = 0.0 if (depth - 1) % HORIZON == 0 else prefixes[depth - 1]
        rewards.append((step.reward, prefixes[depth] - parent))
        state = step.latent
    assert np.abs(prefixes[2] - prefixes[1]).max() > 1e-3  # the prefixes do differ
    for got, want in rewards:
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)
