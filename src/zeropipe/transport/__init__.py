"""Transport: msgpack codec, typed messages, pipe endpoints and shared-memory snapshots.

Runs in: any. Moves bytes, messages and parameter layouts; never imports RL code.
"""

from zeropipe.transport.codec import decode, encode
from zeropipe.transport.errors import (
    CodecError,
    DriverGone,
    PeerGone,
    ProtocolError,
    SnapshotError,
    TransportError,
    WorkerGone,
)
from zeropipe.transport.layout import ParamLayout, ParamSpec
from zeropipe.transport.messages import (
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
    Shutdown,
    SnapshotLayout,
    WorkerError,
    from_wire,
    message,
    message_types,
    to_wire,
)
from zeropipe.transport.pipe import DriverEndpoint, WorkerEndpoint
from zeropipe.transport.snapshot import SnapshotPublisher, SnapshotReader, SnapshotRef, load_into

__all__ = [
    "PROTOCOL_VERSION",
    "Bye",
    "CodecError",
    "CollectRequest",
    "CollectResult",
    "CollectorState",
    "CollectorStateRequest",
    "DriverEndpoint",
    "DriverGone",
    "EvalRequest",
    "EvalResult",
    "Hello",
    "Message",
    "ParamLayout",
    "ParamSpec",
    "PeerGone",
    "ProtocolError",
    "Shutdown",
    "SnapshotError",
    "SnapshotLayout",
    "SnapshotPublisher",
    "SnapshotReader",
    "SnapshotRef",
    "TransportError",
    "WorkerEndpoint",
    "WorkerError",
    "WorkerGone",
    "decode",
    "encode",
    "from_wire",
    "load_into",
    "message",
    "message_types",
    "to_wire",
]
