"""n-step value targets with the target network's bootstrap, against hand-computed numbers.

The target value of unroll state c is Σ_{i<td} γ^i r[c+i] + γ^td · v_target(obs[c+td]), with no
bootstrap after a true terminal and 0 past the stored data (K=2, T=3, γ=0.5; the factory's step e
has reward e + 1 and frame value e). The learner's target network is made to predict a value we
know, through its real `initial_inference` and categorical value head:
- `FrameValue`: v(frame e) = e / 10, so every number also says which frame was bootstrapped;
- the value head's output bias: v = 2 for every observation, with the network's own weights.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from tests.buffer.factories import make_segment
from tests.learner.factories import A, all_roots, tiny_network, tiny_policy
from zeropipe.learner.learner import Learner
from zeropipe.models import scalar_to_two_hot

# Value logits that make softmax exactly the two-hot of x (exp(-1e4) is 0 in float32).
_LOG_ZERO = -1e4


class FrameValue(nn.Module):
    """Prediction f reading the raw frame: v = frame[0] / 10, uniform policy."""

    def __init__(self, support) -> None:
        super().__init__()
        self.support = support

    def forward(self, latent: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        value = scalar_to_two_hot(latent[:, 0] / 10, self.support)  # [B, S]
        return value.log().clamp_min(_LOG_ZERO), latent.new_zeros(latent.shape[0], A)


def _learner(online_value: float = -3.0) -> Learner:
    cfg = tiny_policy()
    learner = Learner(tiny_network(cfg, reinit=False), cfg, 1, seed=0)
    _set_constant_value(learner.network, online_value)  # the online network must not be used
    return learner


def _target_computer(learner: Learner):
    """The learner's TargetComputer: it runs the learner's target network."""
    return learner.targets


def _read_frames(learner: Learner) -> None:
    target = learner.target_network
    target.representation = nn.Identity()  # latent = the stacked frame, [B, 4]
    target.prediction = FrameValue(target.value_support)


def _set_constant_value(net: nn.Module, value: float) -> None:
    last = [m for m in net.prediction.value.modules() if isinstance(m, nn.Linear)][-1]
    two_hot = scalar_to_two_hot(torch.tensor(value), net.value_support)
    with torch.no_grad():
        last.weight.zero_()
        last.bias.copy_(two_hot.log().clamp_min(_LOG_ZERO))


def _value_targets(learner: Learner, *segments) -> tuple[np.ndarray, np.ndarray]:
    batch, row_of = all_roots(tiny_policy(), *segments)
    targets = _target_computer(learner).compute(batch)
    np.testing.assert_array_equal(targets.policy.numpy(), batch.policy_targets)
    np.testing.assert_array_equal(targets.reward.numpy(), batch.reward_targets)
    assert targets.writeback is None  # reanalyze_ratio 0: nothing re-searched
    return targets.value.numpy(), row_of


def test_bootstrap_values_are_the_target_networks():
    learner = _learner()
    _read_frames(learner)
    frames = np.array([0.0, 5.0, 10.0, -20.0], dtype=np.float32)[:, None, None] * np.ones(4)
    got = _target_computer(learner).bootstrap_values(frames.astype(np.float32))  # [M, S=1, 4]
    np.testing.assert_allclose(got, [0.0, 0.5, 1.0, -2.0], atol=1e-4)


@pytest.mark.parametrize(
    ("root", "want"),
    [
        # c = 2, 3, 4: full td = 3, bootstrap from frames 5, 6, 7
        (2, [3 + 2 + 1.25 + 0.125 * 0.5, 4 + 2.5 + 1.5 + 0.125 * 0.6, 5 + 3 + 1.75 + 0.125 * 0.7]),
        # c = 8, 9: the episode terminates at 10 (Monte-Carlo return); c = 10: terminal value 0
        (8, [9 + 0.5 * 10, 10, 0]),
        # c = 11 is past the data: masked to 0
        (9, [10, 0, 0]),
    ],
)
def test_terminated_episode_targets(root, want):
    learner = _learner()
    _read_frames(learner)
    value, row_of = _value_targets(learner, make_segment(10, ends_episode=True, terminated=True))
    np.testing.assert_allclose(value[row_of[root]], want, atol=1e-4)


@pytest.mark.parametrize(
    ("root", "want"),
    [
        # truncated at 10: bootstrap from the final observation (frame 10, v = 1)
        (8, [9 + 0.5 * 10 + 0.25 * 1.0, 10 + 0.5 * 1.0, 1.0]),
        (9, [10 + 0.5 * 1.0, 1.0, 0]),
    ],
)
def test_truncated_episode_targets(root, want):
    learner = _learner()
    _read_frames(learner)
    value, row_of = _value_targets(learner, make_segment(10, ends_episode=True, terminated=False))
    np.testing.assert_allclose(value[row_of[root]], want, atol=1e-4)


def test_targets_shrink_td_at_the_end_of_unfinished_data():
    # 4 own steps + 2 padding, the episode goes on: n = 6, bootstrap from frame 6 (v = 0.6)
    learner = _learner()
    _read_frames(learner)
    value, row_of = _value_targets(learner, make_segment(4, pad=2))
    want = [4 + 2.5 + 1.5 + 0.125 * 0.6, 5 + 3 + 0.25 * 0.6, 6 + 0.5 * 0.6]  # td = 3, 2, 1
    np.testing.assert_allclose(value[row_of[3]], want, atol=1e-4)


def test_constant_value_head_with_the_networks_own_weights():
    learner = _learner(online_value=-3.0)
    _set_constant_value(learner.target_network, 2.0)
    segment = make_segment(10, ends_episode=True, terminated=False)
    value, row_of = _value_targets(learner, segment)
    np.testing.assert_allclose(value[row_of[2]], [6.25 + 0.25, 8 + 0.25, 9.75 + 0.25], atol=1e-4)
    np.testing.assert_allclose(value[row_of[9]], [10 + 0.5 * 2, 2, 0], atol=1e-4)
