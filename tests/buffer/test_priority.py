"""Prioritized replay: index/weight alignment, write-back, staleness after eviction (§8.2)."""

from __future__ import annotations

import numpy as np

from zeropipe.buffer import ReplayBuffer

from .factories import make_segment

ALPHA, BETA = 0.6, 0.4


def _buffer(capacity: int = 1000, *, use_priority: bool = True) -> ReplayBuffer:
    return ReplayBuffer(
        capacity, num_unroll_steps=2, td_steps=3, discount=0.9, use_priority=use_priority,
        alpha=ALPHA, beta=BETA, seed=1,
    )  # fmt: skip


def _expected_weights(priorities: np.ndarray, indices: np.ndarray) -> np.ndarray:
    probs = priorities**ALPHA / np.sum(priorities**ALPHA)
    w = (len(priorities) * probs[indices]) ** -BETA
    return w / w.max()


def test_index_weight_and_position_alignment():
    buffer = _buffer()
    first = make_segment(3, ends_episode=True, terminated=True, priorities=np.array([3.0, 2, 1]))
    second = make_segment(4, pad=2, episode_id=7, priorities=np.array([0.5, 4, 1, 2]))
    buffer.push([first, second])
    priorities = np.array([3.0, 2, 1, 0.5, 4, 1, 2])
    seen = set()
    for _ in range(20):
        batch = buffer.sample(5)
        np.testing.assert_allclose(
            batch.weights, _expected_weights(priorities, batch.indices), rtol=1e-6
        )
        # the index names exactly the root whose window was built: frame value = episode step,
        # episode 7 frames are offset by 7000
        root_frame = batch.obs[:, 0, 0]
        expected = np.where(batch.indices < 3, batch.indices, 7000 + batch.indices - 3)
        np.testing.assert_array_equal(root_frame, expected)
        np.testing.assert_array_equal(batch.target_indices[:, 0], batch.indices)
        seen.update(batch.indices.tolist())
    assert seen == set(range(7))  # padding positions are never roots


def test_sampling_frequency_follows_priorities():
    buffer = _buffer()
    buffer.push([make_segment(4, ends_episode=True, priorities=np.array([1.0, 1, 1, 16]))])
    counts = np.bincount(
        np.concatenate([buffer.sample(64).indices for _ in range(50)]), minlength=4
    )
    probs = np.array([1, 1, 1, 16.0]) ** ALPHA
    np.testing.assert_allclose(counts / counts.sum(), probs / probs.sum(), atol=0.02)


def test_new_data_gets_the_max_priority():
    buffer = _buffer()
    buffer.push([make_segment(2, priorities=np.array([5.0, 2.0]))])
    buffer.push([make_segment(2)])
    state = buffer.state_dict()
    np.testing.assert_allclose(state["priorities"], [5, 2, 5, 5])


def test_priority_write_back_lands_on_the_sampled_positions():
    buffer = _buffer()
    buffer.push([make_segment(3, ends_episode=True, priorities=np.array([3.0, 2, 1]))])
    batch = buffer.sample(3)
    new = np.array([0.5, 0.6, 0.7])
    buffer.update_priorities(batch.indices, new, batch.make_time)
    expected = np.array([3.0, 2, 1])
    expected[batch.indices] = new  # duplicates: the last write wins
    np.testing.assert_allclose(buffer.state_dict()["priorities"], expected)

    buffer.update_priorities(np.array([1, 1]), np.array([8.0, 9.0]), batch.make_time[:2])
    assert buffer.state_dict()["priorities"][1] == 9.0


def test_write_back_sampled_before_an_eviction_is_ignored():
    buffer = _buffer(capacity=6)
    buffer.push([make_segment(3, priorities=np.array([1.0, 1, 1]))])
    buffer.push([make_segment(3, priorities=np.array([2.0, 2, 2]))])
    stale = buffer.sample(4)
    buffer.push([make_segment(3, priorities=np.array([3.0, 3, 3]))])  # evicts the first
    assert buffer.num_transitions == 6
    before = buffer.state_dict()["priorities"].copy()
    buffer.update_priorities(stale.indices, np.full(4, 9.9), stale.make_time)
    np.testing.assert_array_equal(buffer.state_dict()["priorities"], before)

    fresh = buffer.sample(4)
    buffer.update_priorities(fresh.indices, np.full(4, 9.9), fresh.make_time)
    assert np.all(buffer.state_dict()["priorities"][fresh.indices] == 9.9)


def test_uniform_sampling_without_replacement_has_unit_weights():
    buffer = _buffer(use_priority=False)
    buffer.push([make_segment(10, priorities=np.arange(1.0, 11))])
    batch = buffer.sample(10)
    assert sorted(batch.indices.tolist()) == list(range(10))
    assert batch.weights.tolist() == [1.0] * 10
    assert buffer.sample(25).indices.shape == (25,)  # more than stored: with replacement
