"""The compiled search (`policy.actor_inference: compiled`): the MLP MuZero step as a numba
kernel computes the network's step, the search built on it has the eager search's visits and
root values (PUCT and Gumbel, with and without root noise), follows every weight change, and
networks the kernel cannot compute search as under `frozen`."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.algos.test_traced_step import _batch_norm_statistics, _efficientzero, _optimizer_step
from tests.models.test_network import small
from zeropipe.algos.network_search import NetworkSearch
from zeropipe.mcts import ActingParams, SearchConfig, search_policy
from zeropipe.models import MuZeroNetwork, logits_to_scalar
from zeropipe.models.compiled_step import export_mlp_step, mlp_step, scratch_rows

CFG = SearchConfig(num_simulations=25, discount=0.997)
VARIANTS = {
    "BN": {},
    "LN": {"norm_type": "LN"},
    "state_norm": {"state_norm": True},
    "two_layers_no_residual": {"num_layers": 2, "dynamics_residual": False},
}


def _network(seed: int, **overrides: object) -> MuZeroNetwork:
    """A MuZero MLP with every weight drawn and batch norm statistics of its own."""
    torch.manual_seed(seed)
    net = MuZeroNetwork((4,), 3, small(**{"norm_type": "BN", **overrides}))
    with torch.no_grad():
        for param in net.parameters():
            param.normal_(0.0, 0.4)
        _batch_norm_statistics(net, None)
    return net.eval()


def _frames(seed: int, batch: int) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(batch, 1, 4)).astype(np.float32)


def _search(net, inference: str, policy: str = "puct", frames=None, noise: bool = False):
    search = NetworkSearch(net, 1, search_policy(policy), inference=inference)
    frames = _frames(0, 7) if frames is None else frames
    mask = np.ones((len(frames), 3), dtype=bool)
    mask[::3, 1] = False  # some illegal root actions
    acting = ActingParams("collect", 1.0, 0.0) if noise else ActingParams("eval")
    return search.search(frames, mask, CFG, np.random.default_rng(5), acting).output


@pytest.mark.parametrize("variant", VARIANTS)
@torch.no_grad()
def test_the_kernel_computes_the_networks_step(variant):
    net = _network(1, **VARIANTS[variant])
    step = export_mlp_step(net)
    assert step is not None
    latent = net.initial_inference(torch.from_numpy(_frames(2, 9)[:, 0])).latent
    actions = np.arange(9, dtype=np.int64) % 3
    want = net.recurrent_inference(latent, torch.from_numpy(actions))
    got_latent = np.empty((9, latent.shape[1]), dtype=np.float32)
    rewards, values = np.empty(9, np.float32), np.empty(9, np.float32)
    logits = np.empty((9, 3), np.float32)
    mlp_step(
        step, latent.numpy(), actions, got_latent, rewards, values, logits, scratch_rows(step, 9)
    )
    want_value = logits_to_scalar(want.value_logits, net.value_support).numpy()
    assert np.abs(want_value).max() > 0.1  # values that tell a wrong decoding
    np.testing.assert_allclose(got_latent, want.latent.numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(logits, want.policy_logits.numpy(), rtol=1e-5, atol=1e-5)
    # decoded through h⁻¹, which about doubles the logits' relative rounding at |v| ~ 60
    np.testing.assert_allclose(values, want_value, rtol=1e-4, atol=1e-4)
    want_reward = logits_to_scalar(want.reward_logits, net.reward_support).numpy()
    np.testing.assert_allclose(rewards, want_reward, rtol=1e-4, atol=1e-4)


def _never(*args):
    raise AssertionError("the compiled search called the step through torch")


@pytest.mark.parametrize("policy", ["puct", "gumbel"])
@pytest.mark.parametrize("noise", [False, True])
@pytest.mark.parametrize("variant", VARIANTS)
@torch.no_grad()
def test_the_compiled_search_has_the_eager_searchs_visits_and_root_values(policy, noise, variant):
    net = _network(3, **VARIANTS[variant])
    compiled = NetworkSearch(net, 1, search_policy(policy), inference="compiled")
    compiled._recurrent = _never  # every simulation runs in the compiled loop
    eager = NetworkSearch(net, 1, search_policy(policy), inference="eager")
    for seed in range(3):
        frames = _frames(seed, 1 + 3 * seed)
        mask = np.ones((len(frames), 3), dtype=bool)
        mask[::2, 2] = False
        acting = ActingParams("collect", 1.0, 0.0) if noise else ActingParams("eval")
        got, want = (
            s.search(frames, mask, CFG, np.random.default_rng(seed), acting).output
            for s in (compiled, eager)
        )
        assert compiled.compiled.available
        np.testing.assert_array_equal(got.visit_counts, want.visit_counts)
        np.testing.assert_allclose(got.root_value, want.root_value, rtol=1e-4, atol=1e-4)
        np.testing.assert_array_equal(got.action, want.action)


@pytest.mark.parametrize("change", [_optimizer_step, _batch_norm_statistics])
@torch.no_grad()
def test_the_compiled_search_follows_every_change_of_the_weights(change):
    net = _network(4)
    compiled = NetworkSearch(net, 1, search_policy("puct"), inference="compiled")
    eager = NetworkSearch(net, 1, search_policy("puct"), inference="eager")
    frames, mask = _frames(5, 6), np.ones((6, 3), dtype=bool)

    def root_values(search):
        rng = np.random.default_rng(0)
        return search.search(frames, mask, CFG, rng, ActingParams("eval")).output.root_value

    before = root_values(compiled)
    change(net, None)
    net.eval()
    want = root_values(eager)
    assert np.abs(want - before).max() > 0.01 * np.abs(want).max()  # the change moved them
    np.testing.assert_allclose(root_values(compiled), want, rtol=1e-4, atol=1e-4)


@torch.no_grad()
def test_a_network_the_kernel_cannot_compute_searches_as_frozen():
    net = _efficientzero(6)
    assert export_mlp_step(net) is None
    compiled = NetworkSearch(net, 1, search_policy("puct"), inference="compiled")
    frozen = NetworkSearch(net, 1, search_policy("puct"), inference="frozen")
    frames, mask = _frames(7, 5), np.ones((5, 3), dtype=bool)
    for _ in range(2):  # the second search runs the frozen graph in both
        got, want = (
            s.search(frames, mask, CFG, np.random.default_rng(1), ActingParams("eval")).output
            for s in (compiled, frozen)
        )
    assert not compiled.compiled.available and compiled.traced.frozen is not None
    np.testing.assert_array_equal(got.visit_counts, want.visit_counts)
    np.testing.assert_array_equal(got.root_value, want.root_value)


class _OwnReward(MuZeroNetwork):
    """A subclass with a step of its own: the kernel would compute the base class's."""

    def transition_reward(self, latent, out):
        return torch.zeros(latent.shape[0])


def test_a_subclass_with_its_own_step_is_not_exported():
    torch.manual_seed(0)
    assert export_mlp_step(_OwnReward((4,), 3, small()).eval()) is None
    assert export_mlp_step(MuZeroNetwork((2, 8, 8), 3, small(kind="conv")).eval()) is None


@torch.no_grad()
def test_a_search_the_loop_cannot_run_is_the_frozen_search():
    """A sampled search of an MLP the kernel can compute (its slots are not the loop's) runs
    the frozen graph step by step, frozen from the second search on, as under `frozen`."""
    net = _network(8)
    compiled = NetworkSearch(net, 1, search_policy("sampled"), inference="compiled")
    frozen = NetworkSearch(net, 1, search_policy("sampled"), inference="frozen")
    frames, mask = _frames(9, 5), np.ones((5, 3), dtype=bool)
    cfg = SearchConfig(num_simulations=25, discount=0.997, num_sampled_actions=2)
    for _ in range(3):
        got, want = (
            s.search(frames, mask, cfg, np.random.default_rng(2), ActingParams("eval")).output
            for s in (compiled, frozen)
        )
        np.testing.assert_array_equal(got.visit_counts, want.visit_counts)
        np.testing.assert_array_equal(got.root_value, want.root_value)
    assert compiled.compiled.available and compiled.traced.frozen is not None
