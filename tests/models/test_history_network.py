"""HistoryNetwork: the GRU sits inside the dynamics (the reference's `MuZeroRNNFullObsModel`), so
the next latent and the reward come from the GRU's output and depend on the history; the packed
(latent, GRU history) a search node stores, stepped by the real search, equals a fresh unroll of
the network from the root along that node's path."""

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
        latent, history, _ = net.transition(latent, history, torch.tensor([action]))
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


@torch.no_grad()
def test_the_next_latent_and_the_reward_depend_on_the_history():
    net = _network()
    latent = net.encode(torch.ones(1, OBS)).expand(3, -1)
    history = torch.stack((torch.zeros(8), torch.ones(8), -torch.ones(8)))  # [3, H]
    out = net.recurrent_inference(net.layout.pack(latent, history), torch.tensor([1, 1, 1]))
    next_latent, _ = net.layout.unpack(out.latent)
    for a, b in ((0, 1), (0, 2), (1, 2)):  # same latent and action, histories differ
        assert not torch.allclose(next_latent[a], next_latent[b], atol=1e-4)
        assert not torch.allclose(out.reward_logits[a], out.reward_logits[b], atol=1e-4)


def _gru_by_hand(cell: torch.nn.GRUCell, x: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
    """One GRU step written out (Cho et al. 2014, PyTorch's gate order r, z, n)."""
    wi_r, wi_z, wi_n = cell.weight_ih.chunk(3)
    wh_r, wh_z, wh_n = cell.weight_hh.chunk(3)
    bi_r, bi_z, bi_n = cell.bias_ih.chunk(3)
    bh_r, bh_z, bh_n = cell.bias_hh.chunk(3)
    r = torch.sigmoid(x @ wi_r.T + bi_r + h @ wh_r.T + bh_r)
    z = torch.sigmoid(x @ wi_z.T + bi_z + h @ wh_z.T + bh_z)
    n = torch.tanh(x @ wi_n.T + bi_n + r * (h @ wh_n.T + bh_n))
    return (1 - z) * n + z * h


@torch.no_grad()
def test_reward_and_next_latent_are_read_from_the_gru_output_with_a_residual():
    net = _network()
    dyn = net.dynamics
    latent, history = net.encode(torch.randn(2, OBS)), torch.randn(2, 8)
    action = torch.tensor([0, 1])
    codes = torch.nn.functional.one_hot(action, A).float()
    trunk = dyn.trunk.out_norm(dyn.trunk.out(dyn.trunk.body(torch.cat((latent, codes), 1))))
    x = torch.relu((trunk + latent).relu() @ dyn.to_gru[0].weight.T)  # trunk, then Linear, ReLU
    h_next = _gru_by_hand(dyn.gru, x, history)
    next_latent, next_history, reward = net.transition(latent, history, action)
    assert torch.allclose(next_history, h_next, atol=1e-5)
    assert torch.allclose(reward, dyn.reward(h_next), atol=1e-5)
    assert torch.allclose(next_latent, latent + dyn.latent_out(h_next), atol=1e-5)


@torch.no_grad()
def test_value_and_policy_read_the_latent_and_the_history_concatenated():
    net = _network()
    latent, history = net.encode(torch.randn(2, OBS)), torch.randn(2, 8)
    value, policy = net.prediction(latent, history)
    read = torch.cat((latent, history), dim=1)  # vector latents: the head features are the latent
    assert torch.allclose(value, net.prediction.value(read), atol=1e-6)
    assert torch.allclose(policy, net.prediction.policy(read), atol=1e-6)
    other, _ = net.prediction(latent, history + 1.0)
    assert not torch.allclose(value, other, atol=1e-4)


@pytest.mark.parametrize("kind", ["mlp", "conv"])
def test_shapes(kind):
    update = {"kind": kind, "num_channels": 4, "downsample": False, "head_channels": 2}
    model = MODEL.model_copy(update=update)
    shape = (OBS,) if kind == "mlp" else (3, 5, 5)
    net = HistoryNetwork(shape, A, model, with_projection=True).eval()
    latent_shape = (12,) if kind == "mlp" else (4, 5, 5)
    assert net.latent_shape == latent_shape
    flat = int(np.prod(latent_shape)) + 8
    s_v, s_r = net.value_support.size, net.reward_support.size
    with torch.no_grad():
        root = net.initial_inference(torch.rand(3, *shape))
        step = net.recurrent_inference(root.latent, torch.tensor([0, 1, 1]))
        embed = net.project(net.layout.unpack(step.latent)[0], with_grad=True)
    for out in (root, step):
        assert out.latent.shape == (3, flat)
        assert out.value_logits.shape == (3, s_v)
        assert out.reward_logits.shape == (3, s_r)
        assert out.policy_logits.shape == (3, A)
    assert torch.equal(net.layout.unpack(root.latent)[1], torch.zeros(3, 8))  # empty history
    assert net.transition_reward(root.latent, step).shape == (3,)
    assert embed.shape == (3, model.proj_out_dim)


def test_a_fresh_network_predicts_zero_rewards_and_uniform_policies():
    # Zero-initialised last layers (the reference's `last_linear_layer_init_zero=True`).
    torch.manual_seed(0)
    net = HistoryNetwork((OBS,), A, MODEL, with_projection=False).eval()
    with torch.no_grad():
        root = net.initial_inference(torch.randn(3, OBS))
        step = net.recurrent_inference(root.latent, torch.tensor([0, 1, 0]))
    assert torch.equal(step.reward_logits, torch.zeros(3, net.reward_support.size))
    assert torch.allclose(net.transition_reward(root.latent, step), torch.zeros(3), atol=1e-5)
    assert torch.equal(step.policy_logits, torch.zeros(3, A))
