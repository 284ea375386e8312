"""n-step value, reward and policy targets against hand-computed values (K=2, T=3, gamma=0.5)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from zeropipe.buffer import ReplayBatch, ReplayBuffer

from .factories import frame_value, make_segment

K, T, GAMMA = 2, 3, 0.5


def _all_roots(*segments) -> tuple[ReplayBatch, Callable[[int], int]]:
    """Sample every root once (uniform, without replacement); return a row lookup by flat index."""
    buffer = ReplayBuffer(
        1000, num_unroll_steps=K, td_steps=T, discount=GAMMA, use_priority=False,
        alpha=1.0, beta=1.0, seed=0,
    )  # fmt: skip
    buffer.push(list(segments))
    batch = buffer.sample(buffer.num_transitions)
    assert sorted(batch.indices.tolist()) == list(range(buffer.num_transitions))

    def row(flat: int) -> int:
        return int(np.nonzero(batch.indices == flat)[0][0])

    return batch, row


def _frame(batch_obs: np.ndarray) -> np.ndarray:
    """First element of each frame (frames are constant)."""
    return batch_obs[..., 0]


def test_middle_root_uses_full_td_and_bootstraps():
    batch, row = _all_roots(make_segment(10, ends_episode=True, terminated=True))
    i = row(2)  # rewards r[t] = t + 1
    assert batch.value_reward_sum[i].tolist() == [
        3 + 0.5 * 4 + 0.25 * 5,
        4 + 2.5 + 1.5,
        5 + 3 + 1.75,
    ]
    np.testing.assert_allclose(batch.bootstrap_discount[i], [0.125] * 3)
    np.testing.assert_array_equal(_frame(batch.bootstrap_obs[i])[:, 0], [5, 6, 7])
    assert batch.value_mask[i].tolist() == [1, 1, 1]
    assert batch.actions[i].tolist() == [0, 1]
    assert batch.reward_targets[i].tolist() == [3, 4]
    np.testing.assert_array_equal(batch.policy_targets[i], [[1, 0], [0, 1], [1, 0]])
    assert batch.target_indices[i].tolist() == [2, 3, 4]


def test_terminal_end_is_monte_carlo_and_masks_past_the_end():
    batch, row = _all_roots(make_segment(10, ends_episode=True, terminated=True))
    i = row(8)  # c = 8, 9, 10 = n
    np.testing.assert_allclose(batch.value_reward_sum[i], [9 + 0.5 * 10, 10, 0])
    assert batch.bootstrap_discount[i].tolist() == [0, 0, 0]
    assert batch.value_mask[i].tolist() == [1, 1, 1]  # c == n: the terminal state exists
    assert batch.policy_mask[i].tolist() == [1, 1, 0]
    np.testing.assert_array_equal(batch.policy_targets[i, 2], [0, 0])
    i = row(9)  # c = 9, 10 = n, 11 > n
    np.testing.assert_allclose(batch.value_reward_sum[i], [10, 0, 0])
    assert batch.bootstrap_discount[i].tolist() == [0, 0, 0]
    assert batch.value_mask[i].tolist() == [1, 1, 0]
    assert batch.reward_mask[i].tolist() == [1, 0]
    assert batch.reward_targets[i].tolist() == [10, 0]
    assert batch.policy_mask[i].tolist() == [1, 0, 0]
    assert batch.legal_masks[i, 2].all()  # c > n: all legal
    assert batch.target_indices[i].tolist() == [9, -1, -1]
    assert batch.absorbing[i].tolist() == [0, 0, 1]  # c > n after a true terminal
    assert not batch.absorbing[row(2)].any()


def test_truncation_bootstraps_from_the_final_observation():
    batch, row = _all_roots(make_segment(10, ends_episode=True, terminated=False))
    i = row(9)
    np.testing.assert_allclose(batch.value_reward_sum[i], [10, 0, 0])
    np.testing.assert_allclose(batch.bootstrap_discount[i], [0.5, 1.0, 0.0])
    np.testing.assert_array_equal(_frame(batch.bootstrap_obs[i, :2])[:, 0], [10, 10])
    assert batch.value_mask[i].tolist() == [1, 1, 0]
    assert not batch.absorbing.any()  # past a time limit the episode goes on: nothing absorbs


def test_unroll_crossing_into_padding_reads_the_successor_copy():
    # own steps 0..4, padding = steps 5..9 of the same episode (K+T = 5)
    batch, row = _all_roots(make_segment(5, pad=5))
    i = row(4)  # c = 4, 5, 6: 5 and 6 are padding
    assert batch.actions[i].tolist() == [0, 1]
    assert batch.reward_targets[i].tolist() == [5, 6]
    assert batch.policy_mask[i].tolist() == [1, 1, 1]
    np.testing.assert_allclose(batch.value_reward_sum[i, 2], 7 + 0.5 * 8 + 0.25 * 9)
    np.testing.assert_allclose(batch.bootstrap_discount[i], [0.125] * 3)
    np.testing.assert_array_equal(_frame(batch.bootstrap_obs[i])[:, 0], [7, 8, 9])
    assert batch.target_indices[i].tolist() == [4, -1, -1]  # padding is not an own transition


@pytest.mark.parametrize("frame_stack", [1, 3])
def test_value_td_shrinks_at_the_end_of_padded_data(frame_stack):
    # non-terminal data ending at n = 6: bootstrap from obs[n] (the observation after the data)
    batch, row = _all_roots(make_segment(4, pad=2, frame_stack=frame_stack))
    i = row(3)  # c = 3, 4, 5 with n = 6: td = 3, 2, 1
    np.testing.assert_allclose(batch.value_reward_sum[i], [4 + 2.5 + 1.5, 5 + 3, 6])
    np.testing.assert_allclose(batch.bootstrap_discount[i], [0.125, 0.25, 0.5])
    np.testing.assert_array_equal(_frame(batch.bootstrap_obs[i])[:, -1], [6, 6, 6])
    stack = [max(6 - frame_stack + 1 + j, 0) for j in range(frame_stack)]
    np.testing.assert_array_equal(_frame(batch.bootstrap_obs[i, 0]), stack)


def test_random_actions_past_the_data_are_legal_indices():
    batch, row = _all_roots(make_segment(3, ends_episode=True, terminated=True, num_actions=5))
    i = row(2)
    assert batch.actions[i, 0] == 2 and 0 <= batch.actions[i, 1] < 5
    assert batch.actions.dtype == np.int64


def test_segments_keep_their_own_targets_next_to_each_other():
    first = make_segment(4, pad=3, episode_id=1)
    second = make_segment(3, ends_episode=True, terminated=True, episode_id=2, start_step=4)
    batch, row = _all_roots(first, second)
    i = row(4)  # flat 4 = second segment, position 0
    assert batch.reward_targets[i].tolist() == [5, 6]
    assert _frame(batch.obs[i]).tolist() == [frame_value(2, e) for e in (4, 5, 6)]
    assert batch.target_indices[i].tolist() == [4, 5, 6]


@pytest.mark.parametrize(
    ("segment", "root", "states", "actions", "positions"),
    [
        # c = 2, 3, 4: u = c + 3 = 5, 6, 7, one trajectory window; a[u] = u % 2
        (make_segment(10, ends_episode=True, terminated=True), 2, [5, 6, 7], [1, 0], [0, 1, 2]),
        # c = 6, 7, 8: u = 9, 10, 10 (n = 10); a[10] is the zero row; the repeated 10 is read
        # where it first appears
        (make_segment(10, ends_episode=True, terminated=False), 6, [9, 10, 10], [1, 0], [0, 1, 1]),
        # c = 8, 9, 10 (= n): u = 10 throughout, every step reads position 0
        (make_segment(10, ends_episode=True, terminated=False), 8, [10, 10, 10], [0, 0], [0, 0, 0]),
        # 4 own steps and 2 padding (n = 6): c = 3, 4, 5 all bootstrap from u = n = 6
        (make_segment(4, pad=2), 3, [6, 6, 6], [0, 0], [0, 0, 0]),
        (make_segment(4, pad=2), 0, [3, 4, 5], [1, 0], [0, 1, 2]),
    ],
)
def test_bootstrap_window_actions_and_positions(segment, root, states, actions, positions):
    batch, row = _all_roots(segment)
    i = row(root)
    np.testing.assert_array_equal(_frame(batch.bootstrap_obs[i])[:, 0], states)
    assert batch.bootstrap_actions[i].tolist() == actions
    assert batch.bootstrap_positions[i].tolist() == positions
    assert batch.bootstrap_actions.dtype == np.int64 and batch.bootstrap_positions.dtype == np.int64
