"""GameSegment ⇄ wire dict, through the real transport codec."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest

from zeropipe.buffer import GameSegment, ReplayBuffer
from zeropipe.transport import decode, encode
from zeropipe.workers.wire import (
    SegmentWireError,
    segment_from_wire,
    segment_to_wire,
    segments_from_wire,
)

A = 3


def make_segment(
    length: int = 4,
    pad: int = 2,
    frame_stack: int = 2,
    frame_shape: tuple[int, ...] = (5,),
    dtype: Any = np.float32,
    priorities: bool = False,
    ends_episode: bool = False,
) -> GameSegment:
    n = length + pad
    rng = np.random.default_rng(length * 100 + pad)
    frames = rng.integers(0, 255, size=(frame_stack - 1 + n + 1, *frame_shape))
    visits = rng.random((n, A), dtype=np.float32)
    return GameSegment(
        obs=frames.astype(dtype),
        actions=rng.integers(0, A, n).astype(np.int64),
        rewards=rng.random(n, dtype=np.float32),
        child_visits=visits / visits.sum(axis=1, keepdims=True),
        root_values=rng.random(n, dtype=np.float32),
        action_masks=rng.random((n + 1, A)) < 0.7,
        length=length,
        ends_episode=ends_episode,
        terminated=ends_episode,
        priorities=rng.random(length, dtype=np.float32) + 0.1 if priorities else None,
        episode_id=11,
        start_step=24,
    )


def assert_same(a: GameSegment, b: GameSegment) -> None:
    for field in dataclasses.fields(GameSegment):
        x, y = getattr(a, field.name), getattr(b, field.name)
        if isinstance(x, np.ndarray):
            assert isinstance(y, np.ndarray), field.name
            assert x.dtype == y.dtype and x.shape == y.shape, field.name
            np.testing.assert_array_equal(x, y, err_msg=field.name)
        else:
            assert type(x) is type(y) and x == y, field.name


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"priorities": True},
        {"dtype": np.uint8, "frame_shape": (4, 6, 6), "frame_stack": 4, "priorities": True},
        {"dtype": np.uint8, "frame_shape": (8, 8), "pad": 0, "ends_episode": True},
    ],
    ids=["float-frames", "float-priorities", "uint8-stacked-priorities", "uint8-episode-end"],
)
@pytest.mark.parametrize("buffer_type", [bytes, bytearray])
def test_round_trip_through_the_codec(kwargs: dict[str, Any], buffer_type: type) -> None:
    segment = make_segment(**kwargs)
    frame = buffer_type(encode({"segments": [segment_to_wire(segment)]}))
    (decoded,) = segments_from_wire(decode(frame)["segments"], "test")
    assert_same(segment, decoded)
    # Decoded arrays are zero-copy views of the frame (read-only when it is bytes).
    assert decoded.obs.flags.writeable == (buffer_type is bytearray)


def test_wire_form_covers_every_segment_field() -> None:
    seg = make_segment(priorities=True)
    sampled = np.zeros((seg.num_stored, 2), dtype=np.int64)
    chances = np.zeros(seg.num_stored, dtype=np.int64)
    full = dataclasses.replace(seg, root_sampled_actions=sampled, chance_labels=chances)
    wire = segment_to_wire(full)
    assert set(wire) == {f.name for f in dataclasses.fields(GameSegment)}
    assert all(isinstance(v, np.ndarray | int | bool) for v in wire.values())


def test_replay_buffer_keeps_its_own_copy_of_decoded_segments() -> None:
    segments = [make_segment(priorities=True), make_segment(length=3, pad=0, ends_episode=True)]
    frame = bytearray(encode([segment_to_wire(s) for s in segments]))
    decoded = segments_from_wire(decode(frame), "test")
    buffer = ReplayBuffer(
        100,
        num_unroll_steps=2,
        td_steps=2,
        discount=0.99,
        use_priority=True,
        alpha=0.6,
        beta=0.4,
        seed=0,
    )
    buffer.push(decoded)
    frame[:] = bytes(len(frame))  # the receive buffer is reused or freed: the buffer must not care
    state = buffer.state_dict()
    stored_obs = state["store"]["frames"]["obs"]
    np.testing.assert_array_equal(stored_obs, np.concatenate([s.obs for s in segments]))
    np.testing.assert_array_equal(state["priorities"][:4], segments[0].priorities)


def _corrupt(field: str, value: Any) -> dict[str, Any]:
    wire = segment_to_wire(make_segment())
    wire[field] = value
    return wire


def _without(field: str) -> dict[str, Any]:
    wire = segment_to_wire(make_segment())
    del wire[field]
    return wire


@pytest.mark.parametrize(
    ("wire", "needle"),
    [
        (_without("rewards"), "missing fields ['rewards']"),
        ({**segment_to_wire(make_segment()), "bonus": 1}, "unexpected fields ['bonus']"),
        (_corrupt("actions", np.zeros(6, np.float32)), "'actions' has dtype float32"),
        (_corrupt("child_visits", np.zeros(6, np.float32)), "'child_visits' must have 2"),
        (_corrupt("rewards", [0.0] * 6), "'rewards' must be a numpy array"),
        (_corrupt("obs", np.zeros((), np.float32)), "'obs' must have at least 1"),
        (_corrupt("length", True), "'length' must be an int"),
        (_corrupt("terminated", 1), "'terminated' must be a bool"),
        (_corrupt("priorities", np.ones(5, np.float32)), "priorities"),
        (_corrupt("root_values", np.zeros(2, np.float32)), "root_values"),
        (_corrupt("action_masks", np.ones((7, A + 1), bool)), "'child_visits' has 3 actions"),
        (_corrupt("length", 9), "length"),
        ([1, 2], "must be a map, got list"),
    ],
)
def test_malformed_segment_names_the_bad_field(wire: Any, needle: str) -> None:
    with pytest.raises(SegmentWireError, match="segment") as info:
        segment_from_wire(wire)
    assert needle in str(info.value)


def test_batch_errors_name_the_source_and_the_segment_index() -> None:
    good = segment_to_wire(make_segment())
    with pytest.raises(SegmentWireError, match=r"collect_result 3 from collector-1, segment 1: "):
        segments_from_wire([good, _without("obs")], "collect_result 3 from collector-1")


@pytest.mark.parametrize("continuous", [False, True])
def test_root_sampled_actions_and_float_actions_survive_the_wire(continuous: bool) -> None:
    base = make_segment()
    n, k, d = base.num_stored, 4, 2
    rng = np.random.default_rng(5)
    if continuous:
        actions = rng.uniform(-1, 1, (n, d)).astype(np.float32)
        sampled = rng.uniform(-1, 1, (n, k, d)).astype(np.float32)
    else:
        actions = base.actions
        sampled = rng.integers(0, A, (n, k)).astype(np.int64)
    seg = dataclasses.replace(base, actions=actions, root_sampled_actions=sampled)
    seg.validate()
    decoded = segment_from_wire(decode(encode(segment_to_wire(seg))))
    assert_same(seg, decoded)


@pytest.mark.parametrize(
    ("field", "value", "needle"),
    [
        ("actions", np.zeros((6, 2), np.int64), "'actions' has dtype int64 and shape"),
        ("root_sampled_actions", np.zeros((5, 4), np.int64), "root_sampled_actions"),
        ("root_sampled_actions", np.zeros((6, 4), np.float32), "root_sampled_actions"),
    ],
)
def test_malformed_sampled_fields_are_named(field: str, value: np.ndarray, needle: str) -> None:
    with pytest.raises(SegmentWireError, match=needle):
        segment_from_wire(_corrupt(field, value))
