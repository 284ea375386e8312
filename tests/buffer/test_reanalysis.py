"""Periodic reanalysis roots and the policy-target write-back."""

from __future__ import annotations

import numpy as np
import pytest

from zeropipe.buffer import ReplayBuffer

from .factories import make_segment

K = 3


def _buffer() -> ReplayBuffer:
    buffer = ReplayBuffer(
        10_000, num_unroll_steps=K, td_steps=2, discount=0.9, use_priority=False,
        alpha=1.0, beta=1.0, seed=3,
    )  # fmt: skip
    buffer.push([make_segment(10, pad=5, episode_id=i, frame_stack=2) for i in range(8)])
    return buffer


def test_roots_are_strided_positions_of_the_oldest_segments():
    buffer = _buffer()
    batch = buffer.sample_reanalysis(12, partition=0.5)
    assert batch.indices.shape == (12,) and batch.obs.shape == (12, 2, 4)
    segment, pos = np.divmod(batch.indices, 10)
    assert set(segment.tolist()) <= {0, 1, 2, 3}  # oldest half of 8 segments
    assert set(pos.tolist()) <= {0, 3, 6, 9}
    counts = buffer.reanalyze_counts()
    assert counts.sum() == 3 and counts[4:].sum() == 0
    # stack of the root: frames of steps pos-1 and pos (step 0 repeats the reset frame)
    np.testing.assert_array_equal(batch.obs[:, 1, 0], segment * 1000 + pos)
    np.testing.assert_array_equal(batch.obs[:, 0, 0], segment * 1000 + np.maximum(pos - 1, 0))
    assert batch.legal_masks.shape == (12, 2)
    np.testing.assert_array_equal(batch.legal_masks[:, 1], pos % 2 == 0)


def test_rarely_reanalysed_segments_come_first():
    buffer = _buffer()
    for _ in range(6):
        buffer.sample_reanalysis(4, partition=0.75)  # one segment (4 roots) per call
    assert buffer.reanalyze_counts()[:6].tolist() == [1] * 6


def test_partition_above_the_limit_is_refused():
    with pytest.raises(ValueError, match="partition"):
        _buffer().sample_reanalysis(4, partition=0.8)


def test_policy_write_back_round_trip():
    buffer = _buffer()
    roots = buffer.sample_reanalysis(8, partition=0.75)
    visits = np.tile(np.array([[0.25, 0.75]], dtype=np.float32), (8, 1))
    buffer.write_policy_targets(roots.indices, visits, roots.make_time)
    batch = buffer.sample(buffer.num_transitions)
    for flat in roots.indices:
        np.testing.assert_array_equal(batch.policy_targets[batch.indices == flat][0, 0], visits[0])
    untouched = np.setdiff1d(batch.indices, roots.indices)
    assert np.all(batch.policy_targets[np.isin(batch.indices, untouched), 0].max(axis=-1) == 1.0)


def test_write_back_of_unroll_targets_skips_minus_one_and_stale_entries():
    buffer = _buffer()
    batch = buffer.sample(5)
    visits = np.full((*batch.target_indices.shape, 2), 0.5, dtype=np.float32)
    buffer.write_policy_targets(batch.target_indices, visits, batch.make_time[:, None])
    after = buffer.sample(buffer.num_transitions)
    written = np.unique(batch.target_indices[batch.target_indices >= 0])
    np.testing.assert_array_equal(after.policy_targets[np.isin(after.indices, written), 0], 0.5)

    buffer.push([make_segment(10, pad=5, episode_id=9, frame_stack=2)])  # no eviction: fresh
    buffer2 = ReplayBuffer(
        20, num_unroll_steps=K, td_steps=2, discount=0.9, use_priority=False,
        alpha=1.0, beta=1.0, seed=3,
    )  # fmt: skip
    buffer2.push([make_segment(10, episode_id=1), make_segment(10, episode_id=2)])
    stale = buffer2.sample_reanalysis(4, partition=0.5)
    buffer2.push([make_segment(10, episode_id=3)])  # evicts: flat indices shift
    buffer2.write_policy_targets(stale.indices, np.zeros((4, 2)), stale.make_time)
    assert buffer2.sample(20).policy_targets[:, 0].max(axis=-1).min() == 1.0
