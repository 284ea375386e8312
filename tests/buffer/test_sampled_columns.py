"""Continuous actions and root sampled actions survive the wire and the replay buffer unchanged."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from tests.buffer.factories import plain_buffer
from tests.workers.test_segment_wire import make_segment
from zeropipe.buffer import ReplayBuffer
from zeropipe.transport.codec import decode, encode
from zeropipe.workers.wire import segment_to_wire, segments_from_wire

KS, D = 4, 2


def sampled_segment(continuous: bool):
    """A segment of 6 steps with root sampled actions: K_s = 4 of [D] floats with the targets
    over them, or 2 distinct of the 3 discrete actions with the targets over all 3."""
    seg = make_segment(length=6, pad=0, ends_episode=True)
    n = seg.num_stored
    rng = np.random.default_rng(5)
    changes = {}
    if continuous:
        visits = rng.random((n, KS), dtype=np.float32)
        changes["child_visits"] = visits / visits.sum(axis=1, keepdims=True)
        changes["actions"] = rng.uniform(-1, 1, (n, D)).astype(np.float32)
        changes["root_sampled_actions"] = rng.uniform(-1, 1, (n, KS, D)).astype(np.float32)
        changes["action_masks"] = np.ones((n + 1, D), dtype=bool)
    else:
        sampled = np.stack([rng.permutation(3)[:2] for _ in range(n)]).astype(np.int64)
        changes["root_sampled_actions"] = sampled
    return dataclasses.replace(seg, **changes)


def _buffer() -> ReplayBuffer:
    return plain_buffer(2)


@pytest.mark.parametrize("continuous", [True, False], ids=["continuous", "discrete"])
def test_root_sampled_actions_survive_wire_and_buffer(continuous: bool) -> None:
    seg = sampled_segment(continuous)
    (decoded,) = segments_from_wire(decode(encode([segment_to_wire(seg)])), "test")
    np.testing.assert_array_equal(decoded.root_sampled_actions, seg.root_sampled_actions)
    buffer = _buffer()
    buffer.push([decoded])
    batch = buffer.sample(6)
    n = seg.num_stored
    for b in range(6):
        pos = int(batch.indices[b])  # one segment: flat index == position
        for k in range(3):
            c = pos + k
            sampled = batch.root_sampled_actions[b, k]
            if c < n:
                assert batch.policy_mask[b, k] == 1.0
                np.testing.assert_array_equal(sampled, seg.root_sampled_actions[c])
                np.testing.assert_array_equal(batch.policy_targets[b, k], seg.child_visits[c])
            else:
                assert batch.policy_mask[b, k] == 0.0 and not sampled.any()
        for k in range(2):
            if pos + k < n:
                np.testing.assert_array_equal(batch.actions[b, k], seg.actions[pos + k])
    assert batch.root_sampled_actions.dtype == seg.root_sampled_actions.dtype
    if continuous:
        assert batch.actions.shape == (6, 2, D) and batch.actions.dtype == np.float32
        assert (np.abs(batch.actions) <= 1.0).all()  # random padding actions stay in bounds


def test_reanalysis_writes_the_sampled_actions_with_the_targets() -> None:
    seg = sampled_segment(True)
    buffer = _buffer()
    buffer.push([seg])
    batch = buffer.sample(6)
    new_sampled = np.full((6, KS, D), 0.25, np.float32)
    new_visits = np.full((6, KS), 0.25, np.float32)
    buffer.write_policy_targets(batch.indices, new_visits, batch.make_time, new_sampled)
    again = buffer.sample(6)
    assert (again.root_sampled_actions[:, 0] == 0.25).all()
    assert (again.policy_targets[:, 0] == 0.25).all()


def test_state_dict_round_trip_keeps_the_sampled_columns() -> None:
    buffer = _buffer()
    buffer.push([sampled_segment(True)])
    other = _buffer()
    other.load_state_dict(buffer.state_dict())
    a, b = buffer.sample(6), other.sample(6)
    np.testing.assert_array_equal(a.root_sampled_actions, b.root_sampled_actions)
    np.testing.assert_array_equal(a.actions, b.actions)
