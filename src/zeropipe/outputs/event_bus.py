"""The embedder's event bus: every run event, as emitted, to each subscriber's bounded queue.

Runs in: driver. `MetricsLog.emit` hands each event (events.py) to the bus as it is written.
Slow consumers never block the driver: each subscriber has a bounded queue, and when it is full
the oldest event waiting there is dropped (and counted) to make room, so a subscriber always sees
the newest events and the final `StopEvent`. Events emitted on the driver's heavy-work thread
reach the subscribers through the event loop (`call_soon_threadsafe`), in the order written.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections import deque
from collections.abc import AsyncIterator, Callable

from zeropipe.outputs.events import RunEvent


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
    """Fans run events out to subscribers and listeners on the event loop's thread.

    Args:
        loop: the loop the driver runs on (deliveries happen there).
    """

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._thread = threading.get_ident()
        self._subs: list[Subscription] = []
        self.listeners: list[Callable[[RunEvent], None]] = []
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

    def publish(self, event: RunEvent) -> None:
        """Hand an event to everyone; callable from any thread (delivered on the loop thread)."""
        if threading.get_ident() == self._thread:
            self._deliver(event)
            return
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody is listening
            self._loop.call_soon_threadsafe(self._deliver, event)

    def close(self) -> None:
        """The run is over: every subscription ends after its queued events."""
        if threading.get_ident() != self._thread:
            with contextlib.suppress(RuntimeError):
                self._loop.call_soon_threadsafe(self.close)
            return
        self.closed = True
        for sub in self._subs:
            sub.close()

    def _deliver(self, event: RunEvent) -> None:
        for listener in self.listeners:
            listener(event)
        for sub in self._subs:
            sub.put(event)

    def _forget(self, sub: Subscription) -> None:
        if sub in self._subs:
            self._subs.remove(sub)
            self.dropped_by_gone += sub.dropped
