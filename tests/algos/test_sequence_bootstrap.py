"""UniZero's bootstrap values read from one teacher-forced window per sample, by hand.

The reference computes a UniZero sample's n-step bootstrap values in one causal pass of the
target world model over its K bootstrap observations and the actions between them, so the value
at the j-th bootstrap state sees the j (observation, action) pairs before it. The hand-built
target world model below keeps the real `UniZeroNetwork` code paths (`initial_inference`,
`sequence_value_logits`) but swaps its parts for ones whose output is known:
- an observation of frame e is the token (e/10, 0); action a is the token (0, (a+1)/10);
- the "transformer" sums the tokens it sees (causal cumulative sum), so the value at an
  observation is the sum of every token up to it;
- the value head decodes exactly x0 + x1.
Alone, frame e is worth e/10; in a window it is worth its whole prefix. Segments come from
`tests.buffer.factories` (step e: frame e, action e % 2, reward e + 1); K = 2, T = 1, γ = 0.5.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from tests.buffer.factories import make_segment
from tests.learner.factories import OBS, A, all_roots, tiny_policy
from zeropipe.algos.registry import algorithm
from zeropipe.learner.learner import Learner
from zeropipe.models import logits_to_scalar, scalar_to_two_hot

_LOG_ZERO = -1e4  # log 0 stand-in: softmax of the logits is exactly the two-hot
NAN = float("nan")


class _FrameToken(nn.Module):
    def forward(self, obs: torch.Tensor) -> torch.Tensor:  # [N, OBS] -> [N, 2]
        return torch.stack([obs[:, 0] / 10, torch.zeros_like(obs[:, 0])], dim=1)


class _PrefixSum(nn.Module):
    """Causal cumulative sum in place of the transformer (cache-free and extend paths)."""

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return tokens.cumsum(dim=1)

    def empty_state(self, batch: int, like: torch.Tensor) -> torch.Tensor:
        return like.new_zeros(batch, 1)

    def extend(self, state: torch.Tensor, tokens: torch.Tensor):
        return tokens.cumsum(dim=1), state


class _SumValue(nn.Module):
    def __init__(self, support) -> None:
        super().__init__()
        self.support = support

    def forward(self, out: torch.Tensor) -> torch.Tensor:  # [..., 2] -> [..., S_v]
        return scalar_to_two_hot(out[..., 0] + out[..., 1], self.support).log().clamp_min(_LOG_ZERO)


class _NoPolicy(nn.Module):
    def forward(self, out: torch.Tensor) -> torch.Tensor:
        return out.new_zeros(*out.shape[:-1], A)


def _policy(**options):
    world_model = dict(embed_dim=8, num_layers=1, num_heads=2, context_steps=2, dropout=0.0)
    return tiny_policy(
        type="unizero",
        model={"world_model": world_model},
        num_unroll_steps=2,
        td_steps=1,
        **options,
    )


def _learner(**options) -> Learner:
    cfg = _policy(**options)
    torch.manual_seed(0)
    learner = Learner(algorithm("unizero").family.build_network((OBS,), A, cfg), cfg, 1, seed=0)
    target = learner.target_network
    target.tokenizer = _FrameToken()
    target.action_embedding = nn.Embedding.from_pretrained(torch.tensor([[0.0, 0.1], [0.0, 0.2]]))
    target.transformer = _PrefixSum()
    target.value_head = _SumValue(target.value_support)
    target.policy_head = _NoPolicy()
    return learner


def _value_targets(learner: Learner, segment) -> tuple[np.ndarray, np.ndarray]:
    batch, row_of = all_roots(learner.cfg, segment)
    return learner.targets.compute(batch).value.numpy(), row_of


TRUNCATED = dict(ends_episode=True, terminated=False)
TERMINATED = dict(ends_episode=True, terminated=True)


@pytest.mark.parametrize(
    ("episode", "root", "want"),
    [
        # c = 2, 3: bootstrap states 3, 4; window o3, a3 = 1, o4: v = 0.3 and 0.3 + 0.2 + 0.4
        (TRUNCATED, 2, [3 + 0.5 * 0.3, 4 + 0.5 * 0.9, NAN]),
        # c = 8, 9: states 9, 10 (the final observation of a time limit): o9, a9 = 1, o10
        (TRUNCATED, 8, [9 + 0.5 * 0.9, 10 + 0.5 * (0.9 + 0.2 + 1.0), NAN]),
        # c = 9, 10: both bootstrap from o10 (td 1, then td 0), read where o10 first appears:
        # position 0, no context (not 1.0 + 0.1 + 1.0 at position 1)
        (TRUNCATED, 9, [10 + 0.5 * 1.0, 1.0, NAN]),
        # a true terminal at 10: c = 9 is Monte-Carlo, c = 10 is the terminal (0)
        (TERMINATED, 8, [9 + 0.5 * 0.9, 10, NAN]),
    ],
)
def test_bootstrap_values_see_the_window_before_them(episode, root, want):
    learner = _learner()
    value, row_of = _value_targets(learner, make_segment(10, **episode))
    np.testing.assert_allclose(value[row_of[root]], want, atol=1e-4)


def test_per_observation_is_the_context_free_option():
    learner = _learner(bootstrap_values="per_observation")
    value, row_of = _value_targets(learner, make_segment(10, **TRUNCATED))
    np.testing.assert_allclose(value[row_of[2]], [3 + 0.5 * 0.3, 4 + 0.5 * 0.4, 5 + 0.5 * 0.5])
    np.testing.assert_allclose(value[row_of[8]], [9 + 0.5 * 0.9, 10 + 0.5 * 1.0, 1.0], atol=1e-4)


@pytest.mark.parametrize(
    ("policy_type", "options", "sequence"),
    [
        ("unizero", {}, True),
        ("sampled_unizero", {}, True),
        ("unizero", {"bootstrap_values": "per_observation"}, False),
        ("sampled_unizero", {"bootstrap_values": "per_observation"}, False),
        ("muzero", {}, False),
    ],
)
def test_the_learner_bootstraps_as_its_type_says(policy_type, options, sequence):
    """Both pipelines build the same `Learner` (pipeline/build.py), so this is what they run."""
    extra = {"model": {"world_model": {"context_steps": 2}}} if "unizero" in policy_type else {}
    if policy_type.startswith("sampled"):
        extra["sampled"] = {"num_of_sampled_actions": A}
    cfg = tiny_policy(type=policy_type, **extra, **options)
    net = algorithm(policy_type).family.build_network((OBS,), A, cfg)
    assert Learner(net, cfg, 1, seed=0).targets.sequence_bootstrap is sequence


def test_the_window_pass_equals_the_acting_sides_kv_cache():
    """With the real transformer, the teacher-forced window's value at o_j equals the value the
    network gives o_j after feeding o_0, a_0, ..., o_j token by token through its KV cache (the
    acting side's root context)."""
    learner = Learner(_real_network(), _policy(), 1, seed=0)
    net = learner.target_network
    g = torch.Generator().manual_seed(3)
    frames = torch.randn(5, 2, 1, OBS, generator=g)  # [M, J, S, OBS]
    actions = torch.randint(0, A, (5, 2), generator=g)
    got = learner.targets.sequence_bootstrap_values(frames.numpy(), actions.numpy())  # [M, J]
    with torch.no_grad():
        state = net.transformer.empty_state(5, frames)
        want = []
        for j in range(2):
            out, state = net.transformer.extend(state, net.encode(frames[:, j, 0])[:, None])
            want.append(logits_to_scalar(net.value_head(out[:, 0]), net.value_support))
            action = net.embed_actions(actions[:, j])[:, None]
            _, state = net.transformer.extend(state, action)
    np.testing.assert_allclose(got, torch.stack(want, 1).numpy(), atol=1e-5)
    alone = learner.targets.bootstrap_values(frames[:, 1].numpy())  # o_1 without o_0, a_0
    assert np.abs(alone - got[:, 1]).max() > 1e-3  # the context changes the value


def _real_network():
    cfg = _policy()
    torch.manual_seed(0)
    net = algorithm("unizero").family.build_network((OBS,), A, cfg)
    with torch.no_grad():
        for p in net.parameters():  # the zero-initialised heads would predict 0 everywhere
            torch.nn.init.normal_(p, std=0.3)
    return net
