"""state_dict round trip: a restored buffer samples exactly what the original samples."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from zeropipe.buffer import ReplayBuffer

from .factories import make_episode


def _buffer(use_priority: bool) -> ReplayBuffer:
    return ReplayBuffer(
        60, num_unroll_steps=3, td_steps=4, discount=0.97, use_priority=use_priority,
        alpha=0.6, beta=0.4, seed=5,
    )  # fmt: skip


@pytest.mark.parametrize("use_priority", [False, True])
def test_state_round_trip_gives_identical_samples(use_priority):
    original = _buffer(use_priority)
    for episode in range(6):
        original.push(make_episode(17, 8, 7, episode_id=episode, frame_stack=2))
        batch = original.sample(8)
        original.update_priorities(batch.indices, np.arange(1.0, 9.0), batch.make_time)
    original.sample_reanalysis(5, partition=0.5)

    restored = _buffer(use_priority)
    restored.load_state_dict(pickle.loads(pickle.dumps(original.state_dict())))
    assert restored.num_transitions == original.num_transitions
    assert restored.num_segments == original.num_segments
    np.testing.assert_array_equal(restored.reanalyze_counts(), original.reanalyze_counts())
    for _ in range(3):
        a, b = original.sample(16), restored.sample(16)
        for name in vars(a):
            np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    ra, rb = original.sample_reanalysis(6, 0.5), restored.sample_reanalysis(6, 0.5)
    np.testing.assert_array_equal(ra.indices, rb.indices)
    # both keep working identically after more pushes (ring offsets restored)
    for buffer in (original, restored):
        buffer.push(make_episode(20, 8, 7, episode_id=99, frame_stack=2))
    a, b = original.sample(16), restored.sample(16)
    np.testing.assert_array_equal(a.obs, b.obs)
    np.testing.assert_array_equal(a.weights, b.weights)


def test_empty_state_round_trip():
    restored = _buffer(True)
    restored.load_state_dict(_buffer(True).state_dict())
    assert restored.num_transitions == 0
