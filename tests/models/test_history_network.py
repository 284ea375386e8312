"""HistoryNetwork: the packed (latent, GRU history) a search node stores, stepped by the real
search, equals a fresh unroll of the network from the root along that node's path."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.learner.factories import OBS, A, tiny_policy
from zeropipe.algos.network_search import NetworkSearch
from zeropipe.mcts import ActingParams, SearchConfig, search_policy
from zeropipe.models import HistoryNetwork

MODEL = tiny_policy().model.model_copy(update={"latent_dim": 12, "rnn_hidden_size": 8})


def _network(seed: int = 0) -> HistoryNetwork:
    torch.manual_seed(seed)
    net = HistoryNetwork((OBS,), A, MODEL, with_projection=False)
    with torch.no_grad():  # zero-initialised heads and read-out would hide the history
        for p in net.parameters():
            torch.nn.init.normal_(p, std=0.3)
    return net.eval()


class _Recorder:
    """Wraps `recurrent_inference` and keeps every (packed input, action, packed output)."""

    def __init__(self, net: HistoryNetwork) -> None:
        self.inner = net.recurrent_inference
        self.calls: list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]] = []

    def __call__(self, latent: torch.Tensor, action: torch.Tensor):
        out = self.inner(latent, action)
        self.calls.append((latent.clone(), action.clone(), out.latent.clone()))
        return out


def _find(paths: list[tuple[torch.Tensor, list[int]]], latent: torch.Tensor) -> list[int]:
    for known, path in paths:
        if torch.equal(known, latent):
            return path
    raise AssertionError("the search stepped a latent that no node holds")


@torch.no_grad()
def _fresh(net: HistoryNetwork, obs: torch.Tensor, path: list[int]) -> torch.Tensor:
    """Unroll from the root along `path` with the latent and the history kept apart."""
    latent, history = net.encode(obs[None]), net.zero_history(1, obs[None])
    for action in path:
        latent, history = net.transition(latent, history, torch.tensor([action]))
    return net.layout.pack(latent, history)[0]


@pytest.mark.timeout(60)
def test_every_searched_node_equals_a_fresh_unroll_along_its_path():
    net = _network()
    recorder = _Recorder(net)
    net.recurrent_inference = recorder  # the search reaches the network only through this call
    search = NetworkSearch(net, 1, search_policy("puct"))
    frames = np.random.default_rng(0).normal(size=(2, 1, OBS)).astype(np.float32)
    cfg = SearchConfig(num_simulations=12, discount=0.9)
    search.search(
        frames, np.ones((2, A), bool), cfg, np.random.default_rng(0), ActingParams("eval")
    )
    obs = torch.from_numpy(frames[:, 0])
    root = net.initial_inference(obs).latent
    assert len(recorder.calls) == 12
    for b in range(2):
        paths = [(root[b], [])]
        for latent, action, out in recorder.calls:
            path = [*_find(paths, latent[b]), int(action[b])]
            assert torch.allclose(out[b], _fresh(net, obs[b], path), atol=1e-5)
            paths.append((out[b], path))
        assert max(len(p) for _, p in paths) >= 2  # some node is deeper than the root's children


@torch.no_grad()
def test_histories_of_siblings_differ_and_change_the_heads():
    net = _network()
    root = net.initial_inference(torch.ones(2, OBS)).latent
    out = net.recurrent_inference(root, torch.tensor([0, 1]))
    _, history = net.layout.unpack(out.latent)
    assert not torch.allclose(history[0], history[1])
    latent, _ = net.layout.unpack(out.latent)
    same = net.layout.pack(latent[:1].expand(2, -1), history)
    again = net.recurrent_inference(same, torch.tensor([0, 0]))
    assert not torch.allclose(again.value_logits[0], again.value_logits[1])


def test_a_fresh_network_with_an_empty_history_is_plain_muzero():
    torch.manual_seed(0)
    net = HistoryNetwork((OBS,), A, MODEL, with_projection=False).eval()
    obs = torch.randn(3, OBS)
    with torch.no_grad():
        mine, core = net.initial_inference(obs), net.core.initial_inference(obs)
    assert torch.equal(net.layout.unpack(mine.latent)[0], core.latent)
    assert torch.equal(mine.value_logits, core.value_logits)
    assert torch.equal(mine.policy_logits, core.policy_logits)
