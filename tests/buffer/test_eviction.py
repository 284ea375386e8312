"""FIFO eviction by own transitions (not padded lengths, unlike the reference, §2.5)."""

from __future__ import annotations

import numpy as np
import pytest

from zeropipe.buffer import ReplayBuffer

from .factories import make_episode, make_segment


def _buffer(capacity: int) -> ReplayBuffer:
    return ReplayBuffer(
        capacity, num_unroll_steps=2, td_steps=3, discount=0.9, use_priority=True,
        alpha=1.0, beta=1.0, seed=0,
    )  # fmt: skip


def test_eviction_counts_own_transitions_exactly():
    buffer = _buffer(capacity=25)
    buffer.push(make_episode(20, 10, 5, episode_id=1))  # 10 + 10 own, padded 15 + 10
    assert (buffer.num_transitions, buffer.num_segments) == (20, 2)
    buffer.push(make_episode(7, 10, 5, episode_id=2))
    assert (buffer.num_transitions, buffer.num_segments) == (17, 2)
    assert buffer.num_episodes_completed == 2
    batch = buffer.sample(17)
    # flat 0 is now the first position of the oldest kept segment: episode 1, step 10
    assert batch.obs[batch.indices == 0][0, 0, 0] == 1010
    assert batch.obs[batch.indices == 10][0, 0, 0] == 2000


def test_capacity_is_never_exceeded_over_many_pushes():
    buffer = _buffer(capacity=50)
    rng = np.random.default_rng(0)
    pushed = []
    for episode in range(40):
        segments = make_episode(int(rng.integers(1, 30)), 8, 5, episode_id=episode)
        buffer.push(segments)
        pushed += [s.length for s in segments]
        assert buffer.num_transitions <= 50
        kept = np.cumsum(pushed[::-1])
        assert buffer.num_transitions == kept[buffer.num_segments - 1]
        if buffer.num_segments < len(pushed):  # the next older segment would not have fitted
            assert buffer.num_transitions + pushed[-buffer.num_segments - 1] > 50
    batch = buffer.sample(buffer.num_transitions)
    assert sorted(batch.indices.tolist()) == list(range(buffer.num_transitions))


def test_a_push_larger_than_capacity_keeps_the_newest_segments():
    buffer = _buffer(capacity=12)
    buffer.push([make_segment(5, episode_id=i) for i in range(4)])
    assert (buffer.num_transitions, buffer.num_segments) == (10, 2)
    assert sorted({int(v) // 1000 for v in buffer.sample(10).obs[:, 0, 0]}) == [2, 3]


def test_mismatching_segments_are_rejected():
    buffer = _buffer(capacity=12)
    buffer.push([make_segment(3)])
    with pytest.raises(ValueError, match="frame shape"):
        buffer.push([make_segment(3, frame_shape=(5,))])
    with pytest.raises(ValueError, match="invariant"):
        segment = make_segment(3)
        buffer.push([type(segment)(**{**vars(segment), "length": 0})])
