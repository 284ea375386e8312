"""Observation windows: history frames at an episode start, repeat-last past the data, dtypes."""

from __future__ import annotations

import numpy as np

from zeropipe.buffer import ReplayBuffer

from .factories import make_episode, make_segment


def _sample_all(segments, *, k: int = 3, t: int = 2) -> tuple:
    buffer = ReplayBuffer(
        1000, num_unroll_steps=k, td_steps=t, discount=1.0, use_priority=False,
        alpha=1.0, beta=1.0, seed=0,
    )  # fmt: skip
    buffer.push(segments)
    batch = buffer.sample(buffer.num_transitions)
    order = np.argsort(batch.indices)
    return buffer, batch, order


def test_episode_start_stacks_use_the_history_frames():
    _, batch, order = _sample_all([make_segment(6, frame_stack=4, ends_episode=True)])
    root0 = batch.obs[order[0], :, 0]  # obs[0 : S+K] = 3 copies of the reset frame, steps 0..3
    np.testing.assert_array_equal(root0, [0, 0, 0, 0, 1, 2, 3])
    root2 = batch.obs[order[2], :, 0]
    np.testing.assert_array_equal(root2, [0, 0, 1, 2, 3, 4, 5])


def test_history_frames_of_a_later_segment_come_from_the_episode():
    segments = make_episode(12, 6, 5, frame_stack=3, terminated=False)
    _, batch, order = _sample_all(segments)
    np.testing.assert_array_equal(batch.obs[order[6], :3, 0], [4, 5, 6])  # stack of step 6


def test_windows_past_the_data_repeat_the_last_frame():
    _, batch, order = _sample_all([make_segment(4, frame_stack=2, ends_episode=True)])
    last = batch.obs[order[3], :, 0]  # frames of steps 2..4 then repeats of the final obs (4)
    np.testing.assert_array_equal(last, [2, 3, 4, 4, 4])


def test_uint8_frames_keep_their_dtype_and_are_stored_once():
    segment = make_segment(
        20, pad=5, frame_stack=4, frame_shape=(1, 8, 8), num_actions=6, dtype=np.uint8
    )
    buffer, batch, _ = _sample_all([segment])
    assert batch.obs.dtype == np.uint8 and batch.bootstrap_obs.dtype == np.uint8
    assert batch.obs.shape == (20, 4 + 3, 1, 8, 8)
    assert batch.bootstrap_obs.shape == (20, 4, 4, 1, 8, 8)
    assert batch.legal_masks.shape == (20, 4, 6) and batch.legal_masks.dtype == bool
    empty = ReplayBuffer(
        1000, num_unroll_steps=3, td_steps=2, discount=1.0, use_priority=False,
        alpha=1.0, beta=1.0, seed=0,
    )  # fmt: skip
    frames_bytes = (20 + 5 + 4) * 64  # n + S frames of 64 bytes: each frame stored once
    step_bytes = (25 + 1) * (8 + 4 + 6 * 4 + 4 + 6)  # action, reward, visits, value, mask
    table_bytes = 10 * 8
    assert buffer.nbytes() - empty.nbytes() == frames_bytes + step_bytes + table_bytes


def test_field_shapes_and_dtypes():
    _, batch, _ = _sample_all([make_segment(5, frame_stack=2, ends_episode=True)], k=2, t=4)
    b = 5
    shapes = {
        "obs": ((b, 4, 4), np.float32),
        "actions": ((b, 2), np.int64),
        "reward_targets": ((b, 2), np.float32),
        "reward_mask": ((b, 2), np.float32),
        "policy_targets": ((b, 3, 2), np.float32),
        "policy_mask": ((b, 3), np.float32),
        "value_reward_sum": ((b, 3), np.float32),
        "bootstrap_discount": ((b, 3), np.float32),
        "bootstrap_obs": ((b, 3, 2, 4), np.float32),
        "value_mask": ((b, 3), np.float32),
        "legal_masks": ((b, 3, 2), np.bool_),
        "target_indices": ((b, 3), np.int64),
        "weights": ((b,), np.float32),
        "indices": ((b,), np.int64),
        "make_time": ((b,), np.int64),
    }
    for name, (shape, dtype) in shapes.items():
        value = getattr(batch, name)
        assert value.shape == shape and value.dtype == dtype, name


def test_legal_masks_follow_the_stored_masks():
    _, batch, order = _sample_all([make_segment(6, ends_episode=True)], k=2)
    # last action legal on even steps only; c > n is all legal
    np.testing.assert_array_equal(batch.legal_masks[order[1], :, 1], [False, True, False])
    np.testing.assert_array_equal(batch.legal_masks[order[5], :, 1], [False, True, True])
