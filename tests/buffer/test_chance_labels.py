"""The env's chance labels survive the wire, the replay buffer and its state dict unchanged."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from tests.buffer.factories import plain_buffer
from tests.workers.test_segment_wire import make_segment
from zeropipe.buffer import ReplayBuffer
from zeropipe.transport.codec import decode, encode
from zeropipe.workers.wire import SegmentWireError, segment_to_wire, segments_from_wire

K = 2


def labelled_segment(length: int = 6, pad: int = 0, seed: int = 5):
    seg = make_segment(length=length, pad=pad, ends_episode=pad == 0)
    labels = np.random.default_rng(seed).integers(0, 33, seg.num_stored).astype(np.int64)
    return dataclasses.replace(seg, chance_labels=labels)


def _buffer() -> ReplayBuffer:
    return plain_buffer(K)


def _through_wire(seg):
    (decoded,) = segments_from_wire(decode(encode([segment_to_wire(seg)])), "test")
    return decoded


def check_labels(batch, seg) -> None:
    """Each root's K labels are the segment's labels of transitions pos..pos+K-1 (0 past it)."""
    n = seg.num_stored
    assert batch.chance_labels.shape == (batch.indices.shape[0], K)
    assert batch.chance_labels.dtype == np.int64
    for b, pos in enumerate(batch.indices.tolist()):  # one segment: flat index == position
        for k in range(K):
            inside = pos + k < n
            assert batch.reward_mask[b, k] == float(inside)
            expected = seg.chance_labels[pos + k] if inside else 0
            assert batch.chance_labels[b, k] == expected, (b, k)


def test_chance_labels_survive_wire_and_buffer() -> None:
    seg = labelled_segment()
    decoded = _through_wire(seg)
    np.testing.assert_array_equal(decoded.chance_labels, seg.chance_labels)
    buffer = _buffer()
    buffer.push([decoded])
    check_labels(buffer.sample(16), seg)


def test_chance_labels_survive_the_buffer_state_dict() -> None:
    seg = labelled_segment()
    buffer = _buffer()
    buffer.push([seg])
    restored = _buffer()
    restored.load_state_dict(buffer.state_dict())
    check_labels(restored.sample(16), seg)


def test_a_batch_without_labels_has_none() -> None:
    buffer = _buffer()
    buffer.push([make_segment(length=6, pad=0, ends_episode=True)])
    assert buffer.sample(4).chance_labels is None


def test_segments_with_and_without_labels_do_not_mix() -> None:
    buffer = _buffer()
    buffer.push([labelled_segment()])
    with pytest.raises(ValueError, match="chance labels"):
        buffer.push([make_segment(length=6, pad=0, ends_episode=True)])


def test_malformed_labels_are_refused_on_the_wire() -> None:
    wire = segment_to_wire(labelled_segment())
    wire["chance_labels"] = wire["chance_labels"].astype(np.float32)
    with pytest.raises(SegmentWireError, match="chance_labels"):
        segments_from_wire([wire], "test")
    wire["chance_labels"] = np.zeros(3, dtype=np.int64)  # not one per stored step
    with pytest.raises(SegmentWireError, match="chance_labels"):
        segments_from_wire([wire], "test")
