"""Typed messages exchanged by the driver and its workers, and their wire (plain-dict) form.

Runs in: any

Every message is a frozen dataclass registered under a snake_case ``type`` tag. ``to_wire``
turns it into a msgpack-able dict ``{"type": tag, **fields}``; ``from_wire`` checks the tag,
the field set and each field's basic type, and raises ``ProtocolError`` naming the message type
and the bad field. Fields typed as a class with ``to_wire``/``from_wire`` (``SnapshotRef``,
``ParamLayout``) are converted both ways. To add a message: declare a frozen dataclass with
``@message("tag")``; nothing else changes.

Segments travel as ``list[dict[str, Any]]`` of plain data and numpy arrays; the RL side converts
them to and from its own segment type.
"""

from __future__ import annotations

import dataclasses
import os
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

from zeropipe.transport.errors import ProtocolError, SnapshotError
from zeropipe.transport.layout import ParamLayout
from zeropipe.transport.snapshot import SnapshotRef

PROTOCOL_VERSION = 3  # 2: collect_request carries num_segments and max_steps; 3: collector state

_REGISTRY: dict[str, type[Message]] = {}
_FIELD_TYPES: dict[type, dict[str, Any]] = {}
_M = TypeVar("_M", bound="Message")


class Message:
    """Base of every wire message; subclasses are frozen dataclasses made with :func:`message`."""

    TYPE: ClassVar[str]

    def validate(self) -> None:
        """Checks invariants beyond field types; raises ProtocolError. No-op by default."""


def message(tag: str) -> Callable[[type[_M]], type[_M]]:
    """Class decorator: makes a frozen dataclass and registers it under ``tag``.

    Raises:
        ValueError: If ``tag`` is already registered.
    """

    def register(cls: type[_M]) -> type[_M]:
        if tag in _REGISTRY:
            raise ValueError(f"message type {tag!r} is registered twice")
        cls = dataclass(frozen=True)(cls)
        cls.TYPE = tag
        _REGISTRY[tag] = cls
        return cls

    return register


@message("hello")
class Hello(Message):
    """First message of every worker; carries the protocol version."""

    worker_id: int
    role: str  # "collector" | "evaluator"
    protocol_version: int
    pid: int

    @classmethod
    def for_this_process(cls, worker_id: int, role: str) -> Hello:
        """Builds the hello of the calling process with this side's protocol version."""
        return cls(worker_id, role, PROTOCOL_VERSION, os.getpid())

    def validate(self) -> None:
        if self.protocol_version != PROTOCOL_VERSION:
            raise ProtocolError(
                f"hello from worker {self.worker_id} (pid {self.pid}) speaks protocol "
                f"{self.protocol_version}, this side speaks {PROTOCOL_VERSION}: run the driver "
                "and the workers from the same zeropipe install"
            )


@message("snapshot_layout")
class SnapshotLayout(Message):
    """The parameter layout of every snapshot; sent once, after the hello."""

    layout: ParamLayout


@message("collect_request")
class CollectRequest(Message):
    """Collect one batch of segments with the named snapshot: until `num_segments` segments are
    complete (0: the config's), or after `max_steps` steps of every env (0: no limit)."""

    request_id: int
    snapshot: SnapshotRef
    train_iter: int
    envstep: int
    temperature: float
    epsilon: float
    num_segments: int = 0
    max_steps: int = 0
    state: bytes | None = None  # a resumed collector's state (`CollectorState`), loaded first


@message("collect_result")
class CollectResult(Message):
    """Reply to a CollectRequest."""

    request_id: int
    worker_id: int
    policy_version: int
    segments: list[dict[str, Any]]
    envstep_delta: int
    episode_returns: list[float]
    duration_s: float
    busy_s: float


@message("collector_state_request")
class CollectorStateRequest(Message):
    """Driver → collector, between two collects: reply with your state (`CollectorState`)."""

    request_id: int


@message("collector_state")
class CollectorState(Message):
    """Reply to a CollectorStateRequest: the collector's unfinished episodes, envs, acting state
    and RNG (`Collector.state_dict`, pickled), or None when an env's state cannot be captured."""

    request_id: int
    worker_id: int
    state: bytes | None


@message("eval_request")
class EvalRequest(Message):
    """Evaluate the named (immutable) snapshot."""

    request_id: int
    snapshot: SnapshotRef
    train_iter: int
    envstep: int


@message("eval_result")
class EvalResult(Message):
    """Reply to an EvalRequest."""

    request_id: int
    worker_id: int
    policy_version: int
    reward_mean: float
    episode_returns: list[float]
    duration_s: float


@message("worker_error")
class WorkerError(Message):
    """A worker failed; sent instead of a result, before the worker exits."""

    worker_id: int
    role: str
    message: str
    traceback: str


@message("shutdown")
class Shutdown(Message):
    """Driver → worker: finish the current request, say Bye, exit."""


@message("bye")
class Bye(Message):
    """Worker → driver: last message before a clean exit."""

    worker_id: int


def message_types() -> dict[str, type[Message]]:
    """Returns the registry tag → message class (a copy)."""
    return dict(_REGISTRY)


def _field_types(cls: type) -> dict[str, Any]:
    if cls not in _FIELD_TYPES:
        hints = typing.get_type_hints(cls)
        _FIELD_TYPES[cls] = {f.name: hints[f.name] for f in dataclasses.fields(cls)}
    return _FIELD_TYPES[cls]


def to_wire(msg: Message) -> dict[str, Any]:
    """Returns ``msg`` as a plain dict with its ``type`` tag.

    Raises:
        ProtocolError: If ``msg`` is not a registered message.
    """
    if type(msg).__dict__.get("TYPE") not in _REGISTRY:
        raise ProtocolError(f"{type(msg).__qualname__} is not a registered message type")
    wire: dict[str, Any] = {"type": msg.TYPE}
    for name in _field_types(type(msg)):
        value = getattr(msg, name)
        wire[name] = value.to_wire() if hasattr(value, "to_wire") else value
    return wire


def _matches(value: Any, hint: Any) -> bool:
    origin = typing.get_origin(hint) or hint
    if origin is Any:
        return True
    if origin in (typing.Union, types.UnionType):
        return any(_matches(value, arg) for arg in typing.get_args(hint))
    if origin is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if origin is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if origin is type(None):
        return value is None
    return isinstance(value, origin)


def _convert_field(tag: str, name: str, value: Any, hint: Any) -> Any:
    if isinstance(hint, type) and hasattr(hint, "from_wire"):
        if not isinstance(value, Mapping):
            raise ProtocolError(f"{tag}.{name} must be a map, got {type(value).__name__}")
        try:
            return hint.from_wire(value)
        except (SnapshotError, KeyError, TypeError, ValueError) as exc:
            raise ProtocolError(f"{tag}.{name} is malformed: {exc}") from exc
    if not _matches(value, hint):
        raise ProtocolError(
            f"{tag}.{name} must be {getattr(hint, '__name__', hint)}, got {type(value).__name__}"
        )
    return value


def from_wire(wire: Any) -> Message:
    """Builds the typed message from a decoded wire dict.

    Args:
        wire: What ``codec.decode`` returned for one frame.

    Returns:
        The message.

    Raises:
        ProtocolError: On a non-map frame, an unknown ``type``, a missing, unexpected or
            mistyped field, or a failed ``validate`` (e.g. a hello of another protocol version).
    """
    if not isinstance(wire, Mapping):
        raise ProtocolError(f"a message must be a map, got {type(wire).__name__}")
    tag = wire.get("type")
    cls = _REGISTRY.get(tag) if isinstance(tag, str) else None
    if cls is None:
        raise ProtocolError(f"unknown message type {tag!r}; known types: {sorted(_REGISTRY)}")
    hints = _field_types(cls)
    missing = [name for name in hints if name not in wire]
    extra = [key for key in wire if key != "type" and key not in hints]
    if missing or extra:
        raise ProtocolError(f"{tag} message: missing fields {missing}, unexpected fields {extra}")
    kwargs = {name: _convert_field(tag, name, wire[name], hint) for name, hint in hints.items()}
    msg = cls(**kwargs)
    msg.validate()
    return msg
