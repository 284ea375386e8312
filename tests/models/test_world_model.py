"""UniZeroNetwork and RootContexts: exact cached roots, invalidation, resets, search-path and
teacher-forced agreement, shapes and gradients."""

from __future__ import annotations

import math

import pytest
import torch
from torch import Tensor, nn

from zeropipe.config import ConfigError, UniZeroModelConfig
from zeropipe.models import NetworkOutput, UniZeroNetwork, logits_to_scalar
from zeropipe.models.blocks import SimNorm

ACTIONS = 3
CONTEXT_STEPS = 4  # window of 8 tokens
ATOL = 1e-5
ROTARY = pytest.mark.parametrize("rotary_emb", [False, True])  # learned or rotary positions


def _cfg(**world_model: object) -> UniZeroModelConfig:
    wm = {"embed_dim": 32, "num_layers": 2, "num_heads": 2, "context_steps": CONTEXT_STEPS}
    return UniZeroModelConfig(
        latent_dim=16,
        hidden_dim=16,
        num_channels=8,
        value_support_range=(-10, 11, 1),
        reward_support_range=(-5, 6, 1),
        world_model={**wm, **world_model},
    )


def _network(
    seed: int = 0, input_shape: tuple[int, ...] = (4,), rotary_emb: bool = False
) -> UniZeroNetwork:
    """An eval-mode network whose zero-initialised heads are randomised (so outputs differ)."""
    torch.manual_seed(seed)
    net = UniZeroNetwork(input_shape, ACTIONS, _cfg(rotary_emb=rotary_emb))
    for head in (net.value_head, net.policy_head, net.reward_head):
        nn.init.normal_(head[-1].weight, std=0.3)
    return net.eval()


def _window_outputs(net: UniZeroNetwork, tokens: list[Tensor]) -> Tensor:
    """Cache-free pass over one window's raw tokens [E] each -> outputs [n, E]."""
    return net.transformer(torch.stack(tokens)[None])[0]


def _root_reference(net: UniZeroNetwork, obs: list[Tensor], actions: list[int]) -> NetworkOutput:
    """Value/policy at the last obs of the window [o, a, o, ..., o], all encoded afresh."""
    obs_tokens = net.encode(torch.stack(obs))  # [k, E]
    action_tokens = net.embed_actions(torch.tensor(actions[1:], dtype=torch.long))  # [k-1, E]
    tokens = [obs_tokens[0]]
    for a_token, o_token in zip(action_tokens, obs_tokens[1:], strict=True):
        tokens += [a_token, o_token]
    out = _window_outputs(net, tokens)[-1]
    value, policy = net.observation_heads(out)
    return NetworkOutput(torch.stack(tokens), value, net.zero_reward_logits(1)[0], policy)


def _assert_root_matches(out: NetworkOutput, row: int, reference: NetworkOutput) -> None:
    torch.testing.assert_close(out.value_logits[row], reference.value_logits, atol=ATOL, rtol=0)
    torch.testing.assert_close(out.policy_logits[row], reference.policy_logits, atol=ATOL, rtol=0)


@ROTARY
@torch.no_grad()
def test_cached_roots_equal_recomputation_over_an_episode(rotary_emb: bool) -> None:
    net = _network(rotary_emb=rotary_emb)
    contexts = net.new_root_contexts(num_envs=2)
    gen = torch.Generator().manual_seed(1)
    history: dict[int, tuple[list[Tensor], list[int]]] = {0: ([], []), 1: ([], [])}
    last_action = {0: -1, 1: -1}
    for step in range(12):
        env_ids = [0] if step < 3 else [0, 1]  # env 1 joins late: partial batches
        if step == 9:
            last_action[0] = -1  # env 0 starts a new episode mid-run
        if step == 7:
            contexts.invalidate()  # some rows rebuilt from raw history, in a mixed batch
        obs = torch.randn(len(env_ids), 4, generator=gen)
        out = contexts.root(obs, env_ids, [last_action[e] for e in env_ids])
        for row, env_id in enumerate(env_ids):
            kept_obs, kept_actions = history[env_id]
            if last_action[env_id] < 0:
                kept_obs.clear()
                kept_actions.clear()
            kept_obs.append(obs[row])
            kept_actions.append(last_action[env_id])
            del kept_obs[:-CONTEXT_STEPS], kept_actions[:-CONTEXT_STEPS]
            _assert_root_matches(out, row, _root_reference(net, kept_obs, kept_actions))
            last_action[env_id] = int(torch.randint(ACTIONS, (), generator=gen))
        assert out.latent.shape == (len(env_ids), net.transformer.layout.size)
    stats = contexts.stats
    assert stats.starts == 3
    assert stats.rebuilds == 2  # both envs after invalidate()
    assert stats.hits == 12 + 9 - stats.starts - stats.rebuilds


@torch.no_grad()
def test_new_weights_invalidate_cached_roots() -> None:
    net = _network(seed=0)
    new_weights = _network(seed=5).state_dict()
    contexts = net.new_root_contexts(num_envs=1)
    obs = torch.randn(6, 4)
    out = contexts.root(obs[0:1], [0], [-1])
    for step in range(1, 5):
        out = contexts.root(obs[step : step + 1], [0], [step % ACTIONS])
    net.load_state_dict(new_weights)  # bumps weights_version like clear_caches()
    action = 1
    fresh = contexts.root(obs[5:6], [0], [action])
    assert contexts.stats.rebuilds == 1
    reference = _root_reference(net, list(obs[2:6]), [4 % ACTIONS, 0, 1, action])
    _assert_root_matches(fresh, 0, reference)
    # What the stale keys/values from the old weights would have produced:
    new_tokens = torch.stack([net.embed_actions(torch.tensor([action])), net.encode(obs[5:6])], 1)
    stale_out, _ = net.transformer.extend(out.latent, new_tokens)
    stale_value, _ = net.observation_heads(stale_out[:, -1])
    assert not torch.allclose(stale_value, fresh.value_logits, atol=1e-3)
    net.clear_caches()
    again = contexts.root(obs[0:1], [0], [2])
    assert contexts.stats.rebuilds == 2 and again.latent.shape[0] == 1


@torch.no_grad()
def test_episode_start_and_reset_give_context_free_roots() -> None:
    net = _network()
    contexts = net.new_root_contexts(num_envs=2)
    obs = torch.randn(4, 2, 4)
    for step in range(3):
        contexts.root(obs[step], [0, 1], [-1, -1] if step == 0 else [1, 2])
    contexts.reset(1)
    out = contexts.root(obs[3], [0, 1], [-1, 0])  # env 0: episode start; env 1: after reset
    initial = net.initial_inference(obs[3])
    torch.testing.assert_close(out.value_logits, initial.value_logits, atol=ATOL, rtol=0)
    torch.testing.assert_close(out.policy_logits, initial.policy_logits, atol=ATOL, rtol=0)
    torch.testing.assert_close(out.latent, initial.latent, atol=ATOL, rtol=0)
    torch.testing.assert_close(out.reward_logits, initial.reward_logits)


def _slide(window: list[Tensor], capacity: int) -> list[Tensor]:
    """Make room for one token: drop whole (obs, action) steps from the front."""
    return window[2:] if len(window) + 1 > capacity else window


@ROTARY
@torch.no_grad()
def test_recurrent_chain_equals_cache_free_windows_across_rebuilds(rotary_emb: bool) -> None:
    net = _network(rotary_emb=rotary_emb)
    contexts = net.new_root_contexts(num_envs=2)
    obs = torch.randn(4, 2, 4)
    for step in range(4):
        contexts.root(obs[step], [0, 1], [-1, -1] if step < 3 else [2, -1])
    root = contexts.root(obs[3], [0, 1], [1, 0])  # env 0: 3 steps of context; env 1: 2 steps
    windows = []
    for row in range(2):
        state = net.transformer.layout.unpack(root.latent[row : row + 1])
        windows.append(list(state.tokens[0, : int(state.length)]))
    assert [len(w) for w in windows] == [5, 3]
    latent = root.latent
    for action in [0, 2, 1, 1, 0, 2]:  # 12 more tokens: several rebuilds in an 8-token window
        step = net.recurrent_inference(latent, torch.tensor([action, (action + 1) % ACTIONS]))
        latent = step.latent
        for row, window in enumerate(windows):
            a = torch.tensor((action + row) % ACTIONS)
            window[:] = [*_slide(window, net.context_tokens), net.embed_actions(a)]
            after_action = _window_outputs(net, window)[-1]
            predicted = net.latent_head(after_action)
            window[:] = [*_slide(window, net.context_tokens), predicted]
            value, policy = net.observation_heads(_window_outputs(net, window)[-1])
            reward = net.reward_head(after_action)
            torch.testing.assert_close(step.reward_logits[row], reward, atol=ATOL, rtol=0)
            torch.testing.assert_close(step.value_logits[row], value, atol=ATOL, rtol=0)
            torch.testing.assert_close(step.policy_logits[row], policy, atol=ATOL, rtol=0)


@ROTARY
@torch.no_grad()
def test_sequence_matches_the_search_path(rotary_emb: bool) -> None:
    net = _network(rotary_emb=rotary_emb)
    obs = torch.randn(3, 4)
    actions = torch.tensor([[0, 1, 2, 1], [2, 2, 0, 1], [1, 0, 0, 2]])  # [B, K], 2K = window
    path = [net.initial_inference(obs)]
    predicted = []
    for k in range(actions.shape[1]):
        path.append(net.recurrent_inference(path[-1].latent, actions[:, k]))
        window = net.transformer.layout.unpack(path[-1].latent)
        predicted.append(window.tokens[torch.arange(3), window.length - 1])  # ẑ_{k+1}
    obs_tokens = torch.stack([net.encode(obs), *predicted[:-1]], 1)  # [B, K, E]
    seq = net.sequence(obs_tokens, actions)
    for k in range(actions.shape[1]):
        torch.testing.assert_close(seq.value_logits[:, k], path[k].value_logits, atol=ATOL, rtol=0)
        torch.testing.assert_close(
            seq.policy_logits[:, k], path[k].policy_logits, atol=ATOL, rtol=0
        )
        torch.testing.assert_close(
            seq.reward_logits[:, k], path[k + 1].reward_logits, atol=ATOL, rtol=0
        )
        torch.testing.assert_close(seq.next_latent[:, k], predicted[k], atol=ATOL, rtol=0)


@ROTARY
@torch.no_grad()
def test_sequence_values_equal_the_acting_roots(rotary_emb: bool) -> None:
    """The bootstrap values' teacher-forced pass sees what acting's cached root contexts see."""
    net = _network(rotary_emb=rotary_emb)
    contexts = net.new_root_contexts(num_envs=2)
    obs = torch.randn(2, CONTEXT_STEPS, 4)  # [B, J, O]: 2J − 1 = 7 tokens fit the window
    actions = torch.tensor([[2, 0, 1, 1], [1, 1, 0, 2]])  # [B, J]
    values = net.sequence_value_logits(obs, actions)  # [B, J, S_v]
    for j in range(CONTEXT_STEPS):
        before = [-1, -1] if j == 0 else actions[:, j - 1].tolist()
        root = contexts.root(obs[:, j], [0, 1], before)
        torch.testing.assert_close(values[:, j], root.value_logits, atol=ATOL, rtol=0)
    assert contexts.stats.hits == 2 * (CONTEXT_STEPS - 1)  # the cached path, not rebuilds


@ROTARY
def test_rotary_positions_replace_the_learned_table(rotary_emb: bool) -> None:
    net = _network(rotary_emb=rotary_emb)
    learned = {name for name in net.state_dict() if "position" in name}
    assert learned == (set() if rotary_emb else {"transformer.position_embedding.weight"})
    assert (net.transformer.rotary is not None) == rotary_emb


@pytest.mark.parametrize(
    ("input_shape", "dtype"), [((4,), torch.float32), ((3, 64, 64), torch.uint8)]
)
def test_shapes_and_zero_initial_value(input_shape: tuple[int, ...], dtype: torch.dtype) -> None:
    torch.manual_seed(0)
    net = UniZeroNetwork(input_shape, ACTIONS, _cfg()).eval()
    obs = (torch.rand(2, *input_shape) * 255).to(dtype)
    out = net.initial_inference(obs)
    size = net.transformer.layout.size
    assert size == (1 + 2 * 2) * net.context_tokens * net.embed_dim + 1
    assert out.latent.shape == (2, size)
    assert out.value_logits.shape == (2, net.value_support.size)
    assert out.reward_logits.shape == (2, net.reward_support.size)
    assert out.policy_logits.shape == (2, ACTIONS)
    torch.testing.assert_close(
        logits_to_scalar(out.value_logits, net.value_support), torch.zeros(2)
    )
    assert torch.equal(out.policy_logits, torch.zeros(2, ACTIONS))
    step = net.recurrent_inference(out.latent, torch.tensor([0, 2]))
    assert step.latent.shape == (2, size)
    torch.testing.assert_close(
        logits_to_scalar(step.reward_logits, net.reward_support), torch.zeros(2)
    )
    assert net.encode(obs).shape == (2, net.embed_dim)


@ROTARY
def test_gradients_flow_through_sequence(rotary_emb: bool) -> None:
    torch.manual_seed(0)
    net = UniZeroNetwork((4,), ACTIONS, _cfg(rotary_emb=rotary_emb)).train()
    obs = torch.randn(5 * 3, 4)
    tokens = net.encode(obs).view(5, 3, -1)
    seq = net.sequence(tokens, torch.randint(ACTIONS, (5, 3)))
    assert seq.value_logits.shape == (5, 3, net.value_support.size)
    assert seq.next_latent.shape == (5, 3, net.embed_dim)
    loss = sum(t.square().mean() for t in vars(seq).values())
    loss.backward()
    for name, param in net.named_parameters():
        assert param.grad is not None, name
    assert net.tokenizer.out.weight.grad.abs().sum() > 0


def test_invalid_sizes_raise() -> None:
    net = _network()
    with pytest.raises(ValueError, match="context_steps"):
        net.sequence(
            torch.randn(1, CONTEXT_STEPS + 1, 32), torch.zeros(1, CONTEXT_STEPS + 1).long()
        )
    with pytest.raises(ConfigError, match="num_heads"):
        UniZeroNetwork((4,), ACTIONS, _cfg(num_heads=3))
    with pytest.raises(ConfigError, match="even head size"):  # 32 / 32 = 1
        UniZeroNetwork((4,), ACTIONS, _cfg(num_heads=32, rotary_emb=True))


@torch.no_grad()
def test_tick_invalidates_every_interval() -> None:
    net = _network()
    contexts = net.new_root_contexts(num_envs=1, clear_interval_steps=3)
    obs = torch.randn(1, 4)
    contexts.root(obs, [0], [-1])
    for _ in range(4):
        contexts.tick([0])
        contexts.root(obs, [0], [0])
    assert (contexts.stats.hits, contexts.stats.rebuilds) == (3, 1)  # cleared after 3 steps


@torch.no_grad()
def test_an_invalidation_restarts_the_clock() -> None:
    """No cache lives more than the interval: a weight load's invalidation counts as a clear."""
    net = _network()
    contexts = net.new_root_contexts(num_envs=1, clear_interval_steps=3)
    obs = torch.randn(1, 4)
    contexts.root(obs, [0], [-1])  # start
    contexts.tick([0])
    contexts.tick([0])
    contexts.invalidate()  # e.g. new weights, 2 steps into the interval
    contexts.root(obs, [0], [0])  # rebuild
    contexts.tick([0])
    contexts.tick([0])
    contexts.root(obs, [0], [0])  # hit: 2 steps since the invalidation, not 4 since a clear
    contexts.tick([0])
    contexts.root(obs, [0], [0])  # rebuild: 3 steps since the invalidation
    assert (contexts.stats.hits, contexts.stats.rebuilds) == (1, 2)


def test_simnorm_by_hand() -> None:
    # groups of 2: softmax(0, ln 3) = (1/4, 3/4); softmax(0, 0) = (1/2, 1/2); groups of 4 mix them
    x = torch.tensor([[0.0, math.log(3.0), 0.0, 0.0]])
    torch.testing.assert_close(SimNorm(2)(x), torch.tensor([[0.25, 0.75, 0.5, 0.5]]))
    torch.testing.assert_close(SimNorm(4)(x), torch.tensor([[1.0, 3.0, 1.0, 1.0]]) / 6.0)


@pytest.mark.parametrize("where", ["encoder", "obs_head"])
def test_simnorm_as_the_final_norm(where: str) -> None:
    """The chosen producer's tokens are softmaxes over groups of 8 (each group sums to 1, from
    the layer's pre-norm output by hand); the other keeps its LayerNorm (zero mean)."""
    torch.manual_seed(0)
    net = UniZeroNetwork((4,), ACTIONS, _cfg(**{f"final_norm_option_in_{where}": "SimNorm"}))
    obs = torch.randn(3, 4)
    tokens = net.encode(obs)  # [3, 32]
    next_tokens = net.latent_head(tokens)  # [3, 32]
    simplex, layer_normed = (tokens, next_tokens) if where == "encoder" else (next_tokens, tokens)
    pre = (
        net.tokenizer.out(net.tokenizer.encoder(obs).flatten(1))
        if where == "encoder"
        else net.latent_head[:-1](tokens)
    )
    by_hand = pre.exp().view(3, 4, 8)
    torch.testing.assert_close(simplex, (by_hand / by_hand.sum(-1, keepdim=True)).view(3, 32))
    torch.testing.assert_close(simplex.view(3, 4, 8).sum(-1), torch.ones(3, 4))
    torch.testing.assert_close(layer_normed.mean(-1), torch.zeros(3), atol=1e-5, rtol=0)


def test_simnorm_groups_must_divide_the_embedding() -> None:
    with pytest.raises(ValueError, match="simnorm_group_size"):
        _cfg(final_norm_option_in_encoder="SimNorm", simnorm_group_size=5)
    _cfg(simnorm_group_size=5)  # unused with LayerNorm: no constraint
