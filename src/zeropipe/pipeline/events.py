"""Typed run events for embedders: the metrics.jsonl records as frozen dataclasses, and their bus.

Runs in: driver. Every line the run writes to `log/metrics.jsonl` is also handed to the `EventBus`
as it is written, and the bus gives it to each subscriber as a typed event (`event_from_record`):
`CollectEvent`, `TrainEvent`, `EvalEvent`, `PublishEvent`, `RestartEvent`, `CheckpointEvent`,
`StopEvent`, or `RunEvent` for the rest (`buffer`, `resume`, `checkpoint_error`). Each keeps the
whole record in `record` (the exact JSON line) next to its typed fields, and every field of the
record is an attribute too (`event.total_loss`, `event.value_loss`; `TrainEvent.losses` gathers
the loss terms).

Slow consumers never block the driver: each subscriber has a bounded queue, and when it is full
the oldest event waiting there is dropped (and counted) to make room, so a subscriber always sees
the newest events and the final `StopEvent`. Records written on the driver's heavy-work thread
reach the subscribers through the event loop (`call_soon_threadsafe`), in the order written.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import threading
from collections import deque
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any


@dataclass(frozen=True)
class RunEvent:
    """One metrics.jsonl record: `event`, `time_s` (since the run started), counters, the record."""

    event: str
    time_s: float
    envstep: int
    train_iter: int
    record: Mapping[str, Any] = field(repr=False, compare=False)

    def __getattr__(self, name: str) -> Any:
        """Any other field of the record (`event.total_loss`): the event has every field of its
        metrics line."""
        if not name.startswith("_"):
            record = self.__dict__.get("record")
            if record is not None and name in record:
                return record[name]
        raise AttributeError(f"{type(self).__name__} has no field {name!r}")


@dataclass(frozen=True)
class CollectEvent(RunEvent):
    """A finished collect (its segments are in the buffer and its train budget is queued)."""

    envstep_delta: int | None = None
    policy_version: int | None = None
    policy_lag: int | None = None
    segments: int | None = None
    collect_duration_s: float | None = None
    envstep_per_s: float | None = None
    learner_steps_per_s: float | None = None
    budget_queue_len: int | None = None
    episode_return_mean: float | None = None
    worker: str | None = None
    worker_busy_fraction: float | None = None


@dataclass(frozen=True)
class TrainEvent(RunEvent):
    """Learner metrics averaged since the last train event; each loss term is an attribute
    (`event.value_loss`) and `losses` holds them all."""

    learner_steps: int | None = None
    learner_steps_per_s: float | None = None
    learner_steps_per_busy_s: float | None = None
    learner_threads: int | None = None
    budget_queue_len: int | None = None
    buffer_transitions: int | None = None
    buffer_bytes_per_transition: float | None = None

    @property
    def losses(self) -> dict[str, float]:
        """The loss terms of the line (`total_loss`, `value_loss`, ...: every `*_loss` field)."""
        return {k: v for k, v in self.record.items() if k.endswith("_loss")}


@dataclass(frozen=True)
class EvalEvent(RunEvent):
    """An evaluation of one immutable snapshot."""

    reward_mean: float | None = None
    reward_std: float | None = None
    episode_returns: tuple[float, ...] = ()
    policy_version: int | None = None
    eval_duration_s: float | None = None


@dataclass(frozen=True)
class PublishEvent(RunEvent):
    """A new weight snapshot in shared memory."""

    policy_version: int | None = None
    publish_s: float | None = None
    reason: str | None = None


@dataclass(frozen=True)
class RestartEvent(RunEvent):
    """A worker died, or hung past its request deadline, and was replaced."""

    worker: str | None = None
    generation: int | None = None
    seed: int | None = None
    error: str | None = None
    cause: str | None = None  # "died" | "hung"


@dataclass(frozen=True)
class CheckpointEvent(RunEvent):
    """`ckpt_latest` was written (`reason`: periodic or stop)."""

    name: str | None = None
    reason: str | None = None


@dataclass(frozen=True)
class StopEvent(RunEvent):
    """The run stopped (the last event of a run)."""

    reason: str | None = None


EVENT_TYPES: dict[str, type[RunEvent]] = {
    "collect": CollectEvent,
    "train": TrainEvent,
    "eval": EvalEvent,
    "publish": PublishEvent,
    "restart": RestartEvent,
    "checkpoint": CheckpointEvent,
    "stop": StopEvent,
}
_BASE = {f.name for f in dataclasses.fields(RunEvent)}


def event_from_record(record: Mapping[str, Any]) -> RunEvent:
    """The typed event of one metrics.jsonl record (fields the record lacks stay None)."""
    cls = EVENT_TYPES.get(record["event"], RunEvent)
    extra = {}
    for f in dataclasses.fields(cls):
        if f.name not in _BASE and f.name in record and record[f.name] is not None:
            value = record[f.name]
            extra[f.name] = tuple(value) if isinstance(value, list) else value
    return cls(
        event=record["event"],
        time_s=record["time_s"],
        envstep=record["envstep"],
        train_iter=record["train_iter"],
        record=MappingProxyType(dict(record)),
        **extra,
    )


class Subscription:
    """One subscriber's bounded queue; iterate it with `async for` until the run ends."""

    def __init__(self, maxsize: int, on_close: Callable[[Subscription], None]) -> None:
        self.maxsize = maxsize
        self.dropped = 0
        self._items: deque[RunEvent] = deque()
        self._closed = False
        self._wakeup = asyncio.Event()
        self._on_close = on_close

    def put(self, event: RunEvent) -> None:
        """Queue an event; a full queue drops its oldest one first (counted)."""
        if len(self._items) >= self.maxsize:
            self._items.popleft()
            self.dropped += 1
        self._items.append(event)
        self._wakeup.set()

    def close(self) -> None:
        """No more events: iteration ends once the queued ones are taken."""
        self._closed = True
        self._wakeup.set()

    def __aiter__(self) -> AsyncIterator[RunEvent]:
        return self

    async def __anext__(self) -> RunEvent:
        while not self._items:
            if self._closed:
                self._on_close(self)
                raise StopAsyncIteration
            self._wakeup.clear()
            await self._wakeup.wait()
        return self._items.popleft()


class EventBus:
    """Fans metrics records out to subscribers and listeners on the event loop's thread.

    Args:
        loop: the loop the driver runs on (deliveries happen there).
    """

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._thread = threading.get_ident()
        self._subs: list[Subscription] = []
        self.listeners: list[Callable[[Mapping[str, Any]], None]] = []
        self.dropped_by_gone = 0  # drops of subscribers that already stopped reading
        self.closed = False

    def subscribe(self, maxsize: int = 1000) -> Subscription:
        """A new subscriber's queue (it sees events from now on)."""
        sub = Subscription(maxsize, self._forget)
        if self.closed:
            sub.close()
        else:
            self._subs.append(sub)
        return sub

    @property
    def dropped(self) -> int:
        """Events dropped for slow subscribers, over the whole run."""
        return self.dropped_by_gone + sum(s.dropped for s in self._subs)

    def publish(self, record: Mapping[str, Any]) -> None:
        """Hand a record to everyone; callable from any thread (delivered on the loop thread)."""
        if threading.get_ident() == self._thread:
            self._deliver(record)
            return
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody is listening
            self._loop.call_soon_threadsafe(self._deliver, record)

    def close(self) -> None:
        """The run is over: every subscription ends after its queued events."""
        if threading.get_ident() != self._thread:
            with contextlib.suppress(RuntimeError):
                self._loop.call_soon_threadsafe(self.close)
            return
        self.closed = True
        for sub in self._subs:
            sub.close()

    def _deliver(self, record: Mapping[str, Any]) -> None:
        for listener in self.listeners:
            listener(record)
        if self._subs:
            event = event_from_record(record)
            for sub in self._subs:
                sub.put(event)

    def _forget(self, sub: Subscription) -> None:
        if sub in self._subs:
            self._subs.remove(sub)
            self.dropped_by_gone += sub.dropped
