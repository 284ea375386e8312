"""The traced search step (policy.actor_inference: traced) computes what the eager step does,
follows weight loads, gives the same search, and falls back to eager where it cannot be traced;
the frozen one (actor_inference: frozen) gives the same search and follows every weight change."""

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
    traced = NetworkSearch(net, 1, search_policy("puct"), inference="traced")
    eager = NetworkSearch(net, 1, search_policy("puct"))
    torch.manual_seed(5)
    first = _steps(traced, net, 5)
    assert traced.traced.graph.graph is not None  # it was traced, not skipped
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


@pytest.mark.parametrize("inference", ["traced", "frozen"])
@torch.no_grad()
def test_a_traced_search_chooses_what_the_eager_search_chooses(inference):
    net = _muzero(3)
    cfg = SearchConfig(num_simulations=30, discount=0.997)
    frames = np.random.default_rng(0).normal(size=(6, 1, 4)).astype(np.float32)
    mask = np.ones((6, 3), dtype=bool)
    results = []
    for mode in (inference, "eager"):
        search = NetworkSearch(net, 1, search_policy("puct"), inference=mode)
        for _ in range(2):  # the second search runs frozen where asked
            rng = np.random.default_rng(1)
            result = search.search(frames, mask, cfg, rng, ActingParams("collect", 1.0, 0.0))
        assert (getattr(search.traced, "frozen", None) is not None) == (mode == "frozen")
        results.append(result)
    a, b = (r.output for r in results)
    np.testing.assert_array_equal(a.action, b.action)
    np.testing.assert_array_equal(a.visit_counts, b.visit_counts)
    np.testing.assert_allclose(a.root_value, b.root_value, atol=1e-4)


def _random_muzero(seed: int) -> MuZeroNetwork:
    """A MuZero MLP with every weight drawn (the heads of `small` start at zero: its values
    would not tell two weight versions apart)."""
    net = _muzero(seed)
    with torch.no_grad():
        for param in net.parameters():
            param.normal_(0.0, 0.4)
    return net


def _root_values(search: NetworkSearch, frames: np.ndarray) -> np.ndarray:
    cfg = SearchConfig(num_simulations=12, discount=0.997)
    mask = np.ones((len(frames), 3), dtype=bool)
    rng = np.random.default_rng(0)
    return search.search(frames, mask, cfg, rng, ActingParams("eval")).output.root_value


def _load(net, other):
    net.load_state_dict(other.state_dict())  # a collector loads a snapshot


def _optimizer_step(net, other):
    for param in net.parameters():
        param.add_(0.2)  # in place, as an optimizer step writes


def _batch_norm_statistics(net, other):
    net.train()  # a learner's forward in train mode moves only batch norm's running statistics
    net.initial_inference(torch.rand(16, 4) * 5.0)


@pytest.mark.parametrize("change", [_load, _optimizer_step, _batch_norm_statistics])
@torch.no_grad()
def test_the_frozen_step_follows_every_change_of_the_weights(change):
    """The graph is frozen at the second search on the same weights; a weight change between
    searches drops it (the next search runs on the new weights, not the frozen old ones)."""
    net, other = _random_muzero(0), _random_muzero(1)
    frozen = NetworkSearch(net, 1, search_policy("puct"), inference="frozen")
    eager = NetworkSearch(net, 1, search_policy("puct"), inference="eager")
    frames = np.random.default_rng(2).normal(size=(5, 1, 4)).astype(np.float32)
    for _ in range(2):
        before = _root_values(frozen, frames)
    assert frozen.traced.frozen is not None
    np.testing.assert_allclose(before, _root_values(eager, frames), rtol=1e-4, atol=1e-4)
    change(net, other)
    after = _root_values(frozen, frames)
    want = _root_values(eager, frames)
    assert np.abs(want - before).max() > 0.01 * np.abs(want).max()  # the change moved them
    np.testing.assert_allclose(after, want, rtol=1e-4, atol=1e-4)
    assert frozen.traced.frozen is None  # dropped; frozen again at the next search
    np.testing.assert_allclose(_root_values(frozen, frames), want, rtol=1e-4, atol=1e-4)
    assert frozen.traced.frozen is not None


@torch.no_grad()
def test_a_restored_search_runs_frozen_where_the_saved_one_would_have():
    """Which graph the next search runs (frozen or the live trace, which round differently) is
    saved with the weights: a search restored from a state saved after two searches on the same
    weights runs the frozen graph at its first search, as the saved search's next one would."""
    frames = np.random.default_rng(2).normal(size=(5, 1, 4)).astype(np.float32)
    saved = NetworkSearch(_random_muzero(0), 1, search_policy("puct"), inference="frozen")
    assert saved.traced.state_dict() == {"frozen_next": False}  # never used
    _root_values(saved, frames)
    assert saved.traced.state_dict() == {"frozen_next": True}  # weights unchanged since
    for _ in range(2):
        want = _root_values(saved, frames)
    restored_net = _random_muzero(1)
    restored_net.load_state_dict(saved.network.state_dict())
    restored = NetworkSearch(restored_net, 1, search_policy("puct"), inference="frozen")
    restored.traced.load_state_dict(saved.traced.state_dict())
    np.testing.assert_array_equal(_root_values(restored, frames), want)
    assert restored.traced.frozen is not None
    _optimizer_step(saved.network, None)
    assert saved.traced.state_dict() == {"frozen_next": False}  # the next search runs live


class _BatchBaked(MuZeroNetwork):
    """A step whose reward reads the batch size as a Python number: a trace bakes it in."""

    def transition_reward(self, latent, out):
        return torch.full((latent.shape[0],), float(latent.shape[0]))


@torch.no_grad()
def test_a_trace_that_disagrees_with_eager_falls_back_to_eager(caplog):
    torch.manual_seed(0)
    net = _BatchBaked((4,), 3, small()).eval()
    search = NetworkSearch(net, 1, search_policy("puct"), inference="traced")
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
    search = NetworkSearch(net, 1, search_policy("puct"), inference="traced")
    state = net.initial_inference(torch.rand(2, 4)).latent
    with torch.no_grad():
        search._recurrent(state, np.zeros(2, dtype=np.int64))
    assert search.traced.graph.graph is None
