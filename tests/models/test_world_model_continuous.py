"""UniZeroNetwork with continuous actions (sampled_unizero): action vectors as tokens, the
tanh-Gaussian head at observation tokens, and per-env root contexts over action vectors."""

from __future__ import annotations

import torch
from torch import nn

from zeropipe.algos.sampled_unizero import SampledUniZeroModelConfig
from zeropipe.models import UniZeroNetwork

D = 2  # action dimensions
CONTEXT_STEPS = 3
ATOL = 1e-5


def _network(seed: int = 0) -> UniZeroNetwork:
    torch.manual_seed(seed)
    cfg = SampledUniZeroModelConfig(
        latent_dim=16,
        hidden_dim=16,
        value_support_range=(-10, 11, 1),
        reward_support_range=(-5, 6, 1),
        continuous_action_space=True,
        world_model={"embed_dim": 16, "num_layers": 2, "num_heads": 2,
                     "context_steps": CONTEXT_STEPS},
    )  # fmt: skip
    net = UniZeroNetwork((4,), D, cfg)
    for head in (net.value_head, net.reward_head):
        nn.init.normal_(head[-1].weight, std=0.3)
    nn.init.normal_(net.policy_head.layers[-1].weight, std=0.3)
    return net.eval()


def _reference_policy(net: UniZeroNetwork, obs: list, actions: list) -> torch.Tensor:
    """Policy output at the last obs of the window [o, a, o, ..., o], encoded afresh."""
    obs_tokens = net.encode(torch.stack(obs))  # [k, E]
    tokens = [obs_tokens[0]]
    for action, o_token in zip(actions[1:], obs_tokens[1:], strict=True):
        tokens += [net.embed_actions(torch.tensor(action)), o_token]
    out = net.transformer(torch.stack(tokens)[None])[0, -1]
    return net.observation_heads(out)[1]


@torch.no_grad()
def test_cached_roots_over_action_vectors_equal_recomputation() -> None:
    net = _network()
    contexts = net.new_root_contexts(num_envs=2)
    gen = torch.Generator().manual_seed(3)
    history: dict[int, tuple[list, list]] = {0: ([], []), 1: ([], [])}
    last: dict[int, object] = {0: -1, 1: -1}  # the actors' first step: int −1
    for step in range(8):
        if step == 5:
            last[1] = [-1.0] * D  # a mid-run episode start: the actors set the row to −1
        if step == 3:
            contexts.invalidate()  # rebuilt from raw histories holding action vectors
        obs = torch.randn(2, 4, generator=gen)
        out = contexts.root(obs, [0, 1], [last[0], last[1]])
        assert out.policy_logits.shape == (2, 2 * D) and (out.policy_logits[:, D:] > 0).all()
        for env in (0, 1):
            kept_obs, kept_actions = history[env]
            start = last[env] == -1 or last[env] == [-1.0] * D
            if start:
                kept_obs.clear()
                kept_actions.clear()
            kept_obs.append(obs[env])
            kept_actions.append(last[env])
            del kept_obs[:-CONTEXT_STEPS], kept_actions[:-CONTEXT_STEPS]
            want = _reference_policy(net, kept_obs, kept_actions)
            torch.testing.assert_close(out.policy_logits[env], want, atol=ATOL, rtol=0)
            action = torch.rand(D, generator=gen) * 2 - 1
            last[env] = action.tolist()
    assert contexts.stats.starts == 3 and contexts.stats.rebuilds == 2


@torch.no_grad()
def test_sequence_over_action_vectors_matches_the_search_path() -> None:
    net = _network()
    obs = torch.randn(3, 4)
    actions = torch.rand(3, CONTEXT_STEPS, D) * 2 - 1  # [B, K, D]
    path = [net.initial_inference(obs)]
    predicted = []
    for k in range(CONTEXT_STEPS):
        path.append(net.recurrent_inference(path[-1].latent, actions[:, k]))
        window = net.transformer.layout.unpack(path[-1].latent)
        predicted.append(window.tokens[torch.arange(3), window.length - 1])
    seq = net.sequence(torch.stack([net.encode(obs), *predicted[:-1]], 1), actions)
    for k in range(CONTEXT_STEPS):
        torch.testing.assert_close(
            seq.policy_logits[:, k], path[k].policy_logits, atol=ATOL, rtol=0
        )
        torch.testing.assert_close(
            seq.reward_logits[:, k], path[k + 1].reward_logits, atol=ATOL, rtol=0
        )
