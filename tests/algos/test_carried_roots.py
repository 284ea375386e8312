"""Roots carried along the chosen actions: muzero_context's context and muzero_rnn_full_obs's
GRU history, per env, restarted at episode starts, every `context_length_init` steps and on a
weight load."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.learner.factories import OBS, A, tiny_network, tiny_policy
from tests.tiny import tiny_config
from zeropipe.algos.muzero_context import MUZERO_CONTEXT
from zeropipe.algos.muzero_rnn_full_obs import MUZERO_RNN_FULL_OBS
from zeropipe.config import config_from_dict
from zeropipe.models import HistoryNetwork
from zeropipe.pipeline.build import build_collector


def _obs(seed: int, batch: int = 2) -> torch.Tensor:
    return torch.from_numpy(np.random.default_rng(seed).normal(size=(batch, OBS))).float()


def _close(a: torch.Tensor, b: torch.Tensor) -> bool:
    return torch.allclose(a, b, atol=1e-6)


@pytest.fixture
def context():
    cfg = tiny_policy(type="muzero_context", context_length_init=3)
    net = tiny_network(cfg).eval()
    return net, MUZERO_CONTEXT.root_source(net, 2, cfg)


@torch.no_grad()
def test_the_context_is_the_chosen_childs_latent_and_is_re_encoded_every_length_steps(context):
    net, roots = context
    out = roots.root(_obs(0), [0, 1], [-1, -1])
    assert _close(out.latent, net.initial_inference(_obs(0)).latent)
    for step in (1, 2):  # carried: the recurrent prediction along the chosen actions
        chosen = torch.tensor([1, 0])
        child = net.recurrent_inference(out.latent, chosen)
        out = roots.root(_obs(step), [0, 1], chosen.tolist())
        assert _close(out.latent, child.latent)
        assert _close(out.value_logits, child.value_logits)
        assert _close(out.policy_logits, child.policy_logits)
        assert not _close(out.latent, net.initial_inference(_obs(step)).latent)
    out = roots.root(_obs(3), [0, 1], [1, 1])  # third step since the encoding: encoded again
    assert _close(out.latent, net.initial_inference(_obs(3)).latent)


@torch.no_grad()
def test_an_episode_start_or_a_reset_re_encodes_one_env_and_invalidate_all(context):
    net, roots = context
    first = roots.root(_obs(0), [0, 1], [-1, -1])
    out = roots.root(_obs(1), [0, 1], [1, -1])  # env 1 starts a new episode
    fresh = net.initial_inference(_obs(1))
    carried = net.recurrent_inference(first.latent[:1], torch.tensor([1])).latent
    assert _close(out.latent[0], carried[0])
    assert _close(out.latent[1], fresh.latent[1])
    roots.reset(0)
    out = roots.root(_obs(2), [0, 1], [0, 0])
    assert _close(out.latent[0], net.initial_inference(_obs(2)).latent[0])
    assert not _close(out.latent[1], net.initial_inference(_obs(2)).latent[1])
    roots.invalidate()
    out = roots.root(_obs(3), [0, 1], [0, 0])
    assert _close(out.latent, net.initial_inference(_obs(3)).latent)


@pytest.mark.timeout(120)
def test_a_collector_carries_the_chosen_childs_latent_to_the_next_step(tmp_path):
    raw = tiny_config(tmp_path, type="muzero_context").model_dump(mode="json")
    raw["env"]["env_id"] = "CartPole-v1"  # no episode ends within three steps
    collector = build_collector(config_from_dict(raw))
    try:
        net = collector.search.network
        collector._step(1.0, 0.0, [])  # episode start: encoded roots
        for _ in range(3):  # context_length_init 5: carried
            before = torch.stack(collector.roots.latents)  # the previous step's roots
            chosen = torch.from_numpy(collector.prev_actions.copy())  # and its chosen actions
            collector._step(1.0, 0.0, [])
            with torch.no_grad():
                child = net.recurrent_inference(before, chosen).latent
            assert _close(torch.stack(collector.roots.latents), child)
    finally:
        collector.close()


def _history_net(seed: int = 0) -> tuple[HistoryNetwork, object]:
    cfg = tiny_policy(type="muzero_rnn_full_obs", context_length_init=3)
    cfg = cfg.model_copy(update={"model": cfg.model.model_copy(update={"rnn_hidden_size": 8})})
    torch.manual_seed(seed)
    net = HistoryNetwork((OBS,), A, cfg.model, with_projection=False)
    with torch.no_grad():  # a fresh read-out is zero: give the history a say in the heads
        for p in net.parameters():
            torch.nn.init.normal_(p, std=0.3)
    return net.eval(), MUZERO_RNN_FULL_OBS.root_source(net, 2, cfg)


@torch.no_grad()
def test_a_gru_history_is_per_env_and_is_the_chosen_childs():
    net, roots = _history_net()
    same = _obs(0, 1).expand(2, OBS)
    first = roots.root(same, [0, 1], [-1, -1])
    assert _close(first.value_logits[0], first.value_logits[1])
    out = roots.root(same, [0, 1], [0, 1])  # same observation, different histories
    latent, history = net.layout.unpack(out.latent)
    assert _close(latent, net.encode(same))  # the root latent is always the observation's
    child = net.recurrent_inference(first.latent, torch.tensor([0, 1]))
    assert _close(history, net.layout.unpack(child.latent)[1])
    assert not _close(history[0], history[1])
    assert not _close(out.value_logits[0], out.value_logits[1])
    assert not _close(out.policy_logits[0], out.policy_logits[1])


@torch.no_grad()
def test_a_gru_history_restarts_at_episode_end_and_every_length_steps():
    net, roots = _history_net()
    roots.root(_obs(0), [0, 1], [-1, -1])
    roots.root(_obs(1), [0, 1], [1, 1])
    roots.reset(1)  # env 1's episode ended
    out = roots.root(_obs(2), [0, 1], [0, -1])
    history = net.layout.unpack(out.latent)[1]
    assert history[0].abs().sum() > 0 and history[1].abs().sum() == 0
    assert _close(out.value_logits[1], net.initial_inference(_obs(2)).value_logits[1])
    out = roots.root(_obs(3), [0, 1], [0, 0])  # env 0: third step since its restart
    history = net.layout.unpack(out.latent)[1]
    assert history[0].abs().sum() == 0 and history[1].abs().sum() > 0


@pytest.mark.parametrize(
    ("name", "family"),
    [("muzero_context", MUZERO_CONTEXT), ("muzero_rnn_full_obs", MUZERO_RNN_FULL_OBS)],
)
@torch.no_grad()
def test_image_observations_carry_their_chosen_child_too(name, family):
    model = tiny_policy().model.model_copy(
        update={"kind": "conv", "num_channels": 4, "downsample": False, "rnn_hidden_size": 8}
    )
    cfg = tiny_policy(type=name, model=model, context_length_init=4)
    torch.manual_seed(0)
    net = family.build_network((3, 6, 5), A, cfg).eval()  # [S·C, H, W], latent [4, 6, 5]
    roots = family.root_source(net, 3, cfg)
    frames = torch.rand(2, 3, 3, 6, 5)  # two steps of three envs
    first = roots.root(frames[0], [0, 1, 2], [-1, -1, -1])
    out = roots.root(frames[1], [0, 1, 2], [1, 0, -1])
    child = net.recurrent_inference(first.latent[:2], torch.tensor([1, 0]))
    fresh = net.initial_inference(frames[1])
    assert out.latent.shape == fresh.latent.shape
    if family is MUZERO_CONTEXT:
        assert _close(out.latent[:2], child.latent)
    else:
        history = net.layout.unpack(out.latent)[1]
        assert _close(history[:2], net.layout.unpack(child.latent)[1])
    assert _close(out.latent[2], fresh.latent[2])
