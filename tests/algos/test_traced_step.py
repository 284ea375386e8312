"""The traced search step (policy.actor_inference: traced) computes what the eager step does,
follows weight loads, gives the same search, and falls back to eager where it cannot be traced."""

from __future__ import annotations

import logging

import numpy as np
import pytest
import torch

from tests.models.test_network import small
from zeropipe.algos.network_search import NetworkSearch
from zeropipe.config import ValuePrefixConfig
from zeropipe.mcts import ActingParams, SearchConfig, search_policy
from zeropipe.models import EfficientZeroNetwork, MuZeroNetwork


def _muzero(seed: int, kind: str = "mlp") -> MuZeroNetwork:
    torch.manual_seed(seed)
    shape = (4,) if kind == "mlp" else (2, 8, 8)
    return MuZeroNetwork(shape, 3, small(kind=kind, norm_type="BN")).eval()


def _efficientzero(seed: int) -> EfficientZeroNetwork:
    torch.manual_seed(seed)
    prefix = ValuePrefixConfig(lstm_hidden_size=6, lstm_horizon_len=3)
    return EfficientZeroNetwork((4,), 3, small(), prefix).eval()


def _steps(search: NetworkSearch, net, batch: int, depth: int = 4) -> list:
    """The search's step outputs along a `depth`-step path from random roots."""
    state = net.initial_inference(torch.rand(batch, *net.input_shape)).latent
    out = []
    for d in range(depth):
        step = search._recurrent(state, (np.arange(batch) + d) % 3)
        out.append(step)
        state = step.latent
    return out


def _assert_same_steps(got: list, want: list) -> None:
    for a, b in zip(got, want, strict=True):
        torch.testing.assert_close(a.latent, b.latent, atol=1e-5, rtol=1e-5)
        for name in ("reward", "value", "policy_logits"):
            np.testing.assert_allclose(getattr(a, name), getattr(b, name), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("build", [_muzero, _efficientzero, lambda s: _muzero(s, "conv")])
@torch.no_grad()
def test_the_traced_step_is_the_eager_step_and_follows_weight_loads(build):
    net, other = build(0), build(1)
    traced = NetworkSearch(net, 1, search_policy("puct"), traced=True)
    eager = NetworkSearch(net, 1, search_policy("puct"))
    torch.manual_seed(5)
    first = _steps(traced, net, 5)
    assert traced.traced.graph is not None  # it was traced, not skipped
    torch.manual_seed(5)
    _assert_same_steps(first, _steps(eager, net, 5))
    net.load_state_dict(other.state_dict())  # as a collector loads a snapshot
    for batch in (5, 2, 9):  # and other batch sizes than the traced one
        torch.manual_seed(batch)
        got = _steps(traced, net, batch)
        torch.manual_seed(batch)
        _assert_same_steps(got, _steps(eager, net, batch))
    torch.manual_seed(7)
    new_weights = _steps(traced, net, 3)
    torch.manual_seed(7)
    old = _steps(eager, build(0), 3)
    # it did see the load (the heads start at zero: the latents tell the weights apart)
    assert (new_weights[0].latent - old[0].latent).abs().max() > 1e-3


@torch.no_grad()
def test_a_traced_search_chooses_what_the_eager_search_chooses():
    net = _muzero(3)
    cfg = SearchConfig(num_simulations=30, discount=0.997)
    frames = np.random.default_rng(0).normal(size=(6, 1, 4)).astype(np.float32)
    mask = np.ones((6, 3), dtype=bool)
    results = []
    for traced in (True, False):
        search = NetworkSearch(net, 1, search_policy("puct"), traced=traced)
        rng = np.random.default_rng(1)
        results.append(search.search(frames, mask, cfg, rng, ActingParams("collect", 1.0, 0.0)))
    a, b = (r.output for r in results)
    np.testing.assert_array_equal(a.action, b.action)
    np.testing.assert_array_equal(a.visit_counts, b.visit_counts)
    np.testing.assert_allclose(a.root_value, b.root_value, atol=1e-4)


class _BatchBaked(MuZeroNetwork):
    """A step whose reward reads the batch size as a Python number: a trace bakes it in."""

    def transition_reward(self, latent, out):
        return torch.full((latent.shape[0],), float(latent.shape[0]))


@torch.no_grad()
def test_a_trace_that_disagrees_with_eager_falls_back_to_eager(caplog):
    torch.manual_seed(0)
    net = _BatchBaked((4,), 3, small()).eval()
    search = NetworkSearch(net, 1, search_policy("puct"), traced=True)
    state = net.initial_inference(torch.rand(4, 4)).latent
    with caplog.at_level(logging.WARNING, logger="zeropipe.search"):
        step = search._recurrent(state, np.zeros(4, dtype=np.int64))
    assert search.traced.enabled is False and "runs eagerly" in caplog.text
    np.testing.assert_array_equal(step.reward, np.full(4, 4.0, dtype=np.float32))
    state = net.initial_inference(torch.rand(2, 4)).latent
    assert search._recurrent(state, np.zeros(2, dtype=np.int64)).reward.tolist() == [2.0, 2.0]


def test_networks_with_caches_are_never_traced():
    class Cached(MuZeroNetwork):
        TRACEABLE_STEP = False

    net = Cached((4,), 3, small()).eval()
    search = NetworkSearch(net, 1, search_policy("puct"), traced=True)
    state = net.initial_inference(torch.rand(2, 4)).latent
    with torch.no_grad():
        search._recurrent(state, np.zeros(2, dtype=np.int64))
    assert search.traced.graph is None
