"""Messages: round-trip of every type through the codec, clear errors on bad frames."""

from __future__ import annotations

import numpy as np
import pytest

from zeropipe.transport import (
    PROTOCOL_VERSION,
    Bye,
    CollectorState,
    CollectorStateRequest,
    CollectRequest,
    CollectResult,
    EvalRequest,
    EvalResult,
    Hello,
    Message,
    ParamLayout,
    ProtocolError,
    Shutdown,
    SnapshotLayout,
    SnapshotRef,
    WorkerError,
    decode,
    encode,
    from_wire,
    message_types,
    to_wire,
)

REF = SnapshotRef("zeropipe_1_ab_0", 12)
LAYOUT = ParamLayout.from_state_dict({"w": np.zeros((3, 4), np.float32), "n": np.array(0)})
EXAMPLES: list[Message] = [
    Hello(3, "collector", PROTOCOL_VERSION, 1234),
    SnapshotLayout(LAYOUT),
    CollectRequest(1, REF, train_iter=12, envstep=400, temperature=0.25, epsilon=0.0),
    CollectResult(1, 3, 12, [{"len": 50}], 400, [1.0, 2.5], duration_s=1.5, busy_s=1.2),
    EvalRequest(2, REF, train_iter=12, envstep=400),
    EvalResult(2, 4, 12, reward_mean=20.0, episode_returns=[19.0, 21.0], duration_s=3.0),
    WorkerError(3, "collector", "boom", "Traceback ..."),
    Shutdown(),
    Bye(3),
    CollectRequest(1, REF, 12, 400, 0.25, 0.0, num_segments=2, state=b"\x80\x05N."),
    CollectorStateRequest(5),
    CollectorState(5, 3, b"\x80\x05N."),
    CollectorState(6, 3, None),
]


def over_the_wire(msg: Message) -> Message:
    return from_wire(decode(encode(to_wire(msg))))


def test_examples_cover_every_registered_type() -> None:
    assert {type(m) for m in EXAMPLES} == set(message_types().values())


@pytest.mark.parametrize("msg", EXAMPLES, ids=lambda m: m.TYPE)
def test_every_message_roundtrips(msg: Message) -> None:
    assert over_the_wire(msg) == msg


def test_segments_carry_numpy_arrays() -> None:
    obs = np.arange(2 * 4 * 6, dtype=np.uint8).reshape(2, 4, 6)  # [L, H, W]
    msg = CollectResult(1, 0, 5, [{"obs": obs, "rewards": np.ones(2)}], 2, [], 0.1, 0.1)
    out = over_the_wire(msg)
    assert isinstance(out, CollectResult)
    np.testing.assert_array_equal(out.segments[0]["obs"], obs)


def test_nested_wire_types_are_rebuilt() -> None:
    out = over_the_wire(EXAMPLES[2])
    assert isinstance(out, CollectRequest) and out.snapshot == REF
    layout = over_the_wire(EXAMPLES[1])
    assert isinstance(layout, SnapshotLayout) and layout.layout == LAYOUT


@pytest.mark.parametrize(
    ("wire", "fragment"),
    [
        ({"type": "teleport"}, "unknown message type 'teleport'"),
        ({"worker_id": 1}, "unknown message type None"),
        ([1, 2], "must be a map"),
        ({"type": "bye"}, "missing fields ['worker_id']"),
        ({"type": "bye", "worker_id": 1, "extra": 2}, "unexpected fields ['extra']"),
        ({"type": "bye", "worker_id": "one"}, "bye.worker_id must be int"),
        ({**to_wire(EXAMPLES[2]), "snapshot": {"version": 1}}, "collect_request.snapshot"),
        ({**to_wire(EXAMPLES[5]), "reward_mean": "high"}, "eval_result.reward_mean"),
    ],
)
def test_malformed_messages_raise_protocol_error(wire: object, fragment: str) -> None:
    with pytest.raises(ProtocolError) as info:
        from_wire(wire)
    assert fragment in str(info.value)


def test_hello_with_another_protocol_version_is_rejected() -> None:
    wire = to_wire(Hello(7, "evaluator", PROTOCOL_VERSION + 1, 99))
    with pytest.raises(ProtocolError, match=r"worker 7 \(pid 99\) speaks protocol"):
        from_wire(wire)


def test_hello_for_this_process_speaks_this_protocol() -> None:
    hello = Hello.for_this_process(2, "collector")
    assert hello.protocol_version == PROTOCOL_VERSION and over_the_wire(hello) == hello
