"""Exceptions raised by the transport layer.

Runs in: any
"""

from __future__ import annotations


class TransportError(Exception):
    """Base class of every error raised by ``zeropipe.transport``."""


class ProtocolError(TransportError):
    """A frame or message broke the wire protocol (bad type tag, missing field, wrong version)."""


class CodecError(ProtocolError):
    """Bytes could not be encoded to, or decoded from, the msgpack wire format."""


class SnapshotError(TransportError):
    """A shared-memory snapshot could not be published, leased or read consistently."""


class PeerGone(TransportError, ConnectionError):
    """The process at the other end of a pipe exited or closed its end."""


class WorkerGone(PeerGone):
    """A worker's pipe reached EOF or broke; raised on the driver side.

    Attributes:
        worker_name: Name of the worker whose pipe is gone.
    """

    def __init__(self, worker_name: str, reason: str = "its pipe reached EOF") -> None:
        super().__init__(f"worker {worker_name!r} is gone: {reason}")
        self.worker_name = worker_name


class DriverGone(PeerGone):
    """The driver's end of the pipe is closed; raised on the worker side."""
