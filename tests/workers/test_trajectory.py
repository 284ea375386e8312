"""Cutting episodes into GameSegments in the collector."""

from __future__ import annotations

import numpy as np

from zeropipe.workers.trajectory import Trajectory

A = 2
MASK = np.ones(A, dtype=bool)
VISITS = np.array([0.5, 0.5], dtype=np.float32)


def frame(value: float) -> np.ndarray:
    return np.full(3, value, dtype=np.float32)


def play(traj: Trajectory, first: int, count: int) -> list:
    out = []
    for t in range(first, first + count):
        out += traj.append(t % A, 1.0, VISITS, 0.5, 0.4, frame(t + 1), MASK)
    return out


def test_full_segment_waits_for_its_padding():
    traj = Trajectory(segment_length=3, pad_length=2, frame_stack=2, use_priority=False)
    traj.start_episode(frame(0), MASK, episode_id=7)
    assert play(traj, 0, 4) == []
    (seg,) = play(traj, 4, 1)
    seg.validate()
    assert seg.length == 3 and seg.num_stored == 5 and not seg.ends_episode
    # history copy of the reset frame, then frames 0..5
    np.testing.assert_array_equal(seg.obs[:, 0], [0, 0, 1, 2, 3, 4, 5])
    np.testing.assert_array_equal(seg.actions, [0, 1, 0, 1, 0])
    assert seg.episode_id == 7 and seg.start_step == 0
    (nxt,) = play(traj, 5, 3)
    np.testing.assert_array_equal(nxt.obs[:, 0], [2, 3, 4, 5, 6, 7, 8])
    assert nxt.start_step == 3


def test_episode_end_emits_the_rest_with_terminal_flags():
    traj = Trajectory(segment_length=3, pad_length=2, frame_stack=1, use_priority=True)
    traj.start_episode(frame(0), MASK, episode_id=0)
    play(traj, 0, 4)
    first, last = traj.end_episode(terminated=True)
    assert (first.length, first.num_stored, first.ends_episode, first.terminated) == (
        3,
        4,
        True,
        True,
    )
    assert (last.length, last.num_stored, last.ends_episode, last.terminated) == (1, 1, True, True)
    np.testing.assert_allclose(first.priorities, [0.1 + 1e-6] * 3, rtol=1e-5)
    np.testing.assert_array_equal(last.obs[:, 0], [3, 4])


def test_new_segment_after_reset_starts_from_reset_observation():
    traj = Trajectory(segment_length=3, pad_length=2, frame_stack=2, use_priority=False)
    traj.start_episode(frame(0), MASK, episode_id=0)
    play(traj, 0, 2)
    (seg,) = traj.end_episode(terminated=False)
    assert seg.ends_episode and not seg.terminated
    traj.start_episode(frame(100), MASK, episode_id=1)
    np.testing.assert_array_equal(traj.stacked_obs()[:, 0], [100, 100])
    out = []
    for t in range(5):
        out += traj.append(0, 0.0, VISITS, 0.0, 0.0, frame(101 + t), MASK)
    (new,) = out
    # S-1 history frames and the first observation are the reset frame, never the terminal one
    np.testing.assert_array_equal(new.obs[:2, 0], [100, 100])
    assert new.episode_id == 1
