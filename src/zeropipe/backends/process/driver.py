"""The `process` backend's supervision: spawn, handshake, inbox, restart, shutdown.

Runs in: driver (on the event-loop thread). Each worker is a `spawn`ed process with one duplex
pipe; a first-generation worker the CLI already started (early.py) is adopted, not spawned
again. A reader task per worker forwards its messages (or the error that ended its pipe) to one
inbox queue as `(handle, generation, message)`, so the driver waits on a single queue and can drop
what a dead generation of a worker left behind. Process exit is observed through the process
sentinel fd (`loop.add_reader`), never by polling with sleeps. Shutdown asks every worker to exit
(a busy one is killed: its reply would be dropped), waits up to `shutdown_timeout_s`, then kills
what is left; `kill_all()` is the synchronous last resort used on any exit path.

Restarts never block the driver: `restart()` spawns the replacement and returns; its handshake
runs in a named task, and the worker becomes `idle` (usable) only once it is done. A replacement
that fails its handshake reports `WorkerStartFailed` through the inbox, which the driver counts as
one more death. Every spawn gets its own seed (backend.spawn_seed), as every Ray actor start does.
A hung worker (its request past its deadline, deadline.py) is replaced by the same `restart()`:
`_end` SIGKILLs the old process, which also ends a stopped (SIGSTOP) one, and reaps it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass
from typing import Any

from zeropipe.backends.base import (
    HELLO_TIMEOUT_S,
    ReplacingWorkers,
    WorkerHandle,
    wait_bounded,
)
from zeropipe.backends.errors import WorkerFailed
from zeropipe.backends.process.early import EarlyWorkers, spawn_worker
from zeropipe.config import ExperimentConfig
from zeropipe.transport import (
    CollectorStateRequest,
    CollectRequest,
    DriverEndpoint,
    EvalRequest,
    Message,
    Shutdown,
    SnapshotLayout,
    SnapshotPublisher,
    TransportError,
    WorkerGone,
)

log = logging.getLogger("zeropipe.supervisor")

KILL_JOIN_S = 10.0  # how long a replacement waits for a SIGKILLed worker before moving on


@dataclass
class ProcessHandle(WorkerHandle):
    """The driver's view of one worker process."""

    process: Any = None  # multiprocessing.Process
    endpoint: DriverEndpoint | None = None
    reader: asyncio.Task | None = None

    @property
    def idle(self) -> bool:
        """Alive, handshake done and without a request in flight."""
        return self.endpoint is not None and self.ready and self.request is None


class WorkerPool(ReplacingWorkers):
    """The `process` backend: spawns and supervises the collector and evaluator processes.

    Args:
        cfg: the experiment config (`policy.async_pipeline` sizes the pool and the threads).
        store: the shared-memory snapshots; its parameter layout is sent once to every worker.
        inbox: the driver's queue of `(handle, generation, message | TransportError)`.
    """

    def __init__(
        self,
        cfg: ExperimentConfig,
        store: SnapshotPublisher,
        inbox: asyncio.Queue,
        early: EarlyWorkers | None = None,
    ) -> None:
        super().__init__(cfg, inbox, ProcessHandle)
        self.layout = store.layout
        self.early = early  # workers the CLI started before the driver: adopted, not spawned
        # Killed but not yet reaped: on a starved machine a SIGKILLed process can take longer than
        # the join's bound to be scheduled and exit. It is reaped at the end (kill_all).
        self._dying: list[Any] = []

    async def submit(
        self, handle: ProcessHandle, request: CollectRequest | EvalRequest | CollectorStateRequest
    ) -> None:
        """Send `request` down the worker's pipe; the reply arrives in the inbox.

        Raises:
            TransportError: the pipe is broken (the worker is gone).
        """
        if handle.endpoint is None:
            raise WorkerGone(handle.name, "it has no pipe (it is being replaced)")
        await handle.endpoint.send(request)

    async def start(self) -> None:
        """Spawn every worker; complete the collectors' handshakes (concurrently).

        An evaluator's handshake runs in its `starting` task, as a replacement's does: the run
        needs no evaluator before its first eval, which waits for one that is idle, and its
        start-up (about a second of importing torch) then overlaps the first collect and the
        first learner steps instead of delaying them. One that fails to start reaches the inbox
        as `WorkerStartFailed`, a death the driver counts.
        """
        for handle in self.workers:
            self._create(handle)
        for handle in self.of_role("evaluator"):
            handle.starting = asyncio.create_task(
                self._start_replacement(handle, handle.generation), name=f"{handle.name}-start"
            )
        await asyncio.gather(*(self._handshake(h) for h in self.of_role("collector")))

    def _create(self, handle: ProcessHandle) -> None:
        spec = self.next_spec(handle)
        started = self.early.take(spec) if self.early is not None else None
        if started is None:
            started = spawn_worker(spec, f"zeropipe-{handle.name}")
        handle.process, parent = started
        handle.endpoint = DriverEndpoint(parent, handle.name)
        handle.request = None

    async def _handshake(self, handle: ProcessHandle) -> None:
        assert handle.endpoint is not None
        try:
            hello = await handle.endpoint.expect_hello(timeout=HELLO_TIMEOUT_S)
            if hello.worker_id != handle.worker_id or hello.role != handle.role:
                raise WorkerFailed(f"{handle.name}: handshake from {hello.role}-{hello.worker_id}")
            await handle.endpoint.send(SnapshotLayout(layout=self.layout))
        except (TransportError, TimeoutError) as exc:
            raise WorkerFailed(f"{handle.name} did not start: {exc}") from exc
        handle.ready = True
        handle.reader = asyncio.create_task(
            self._read_loop(handle, handle.generation), name=f"{handle.name}-reader"
        )

    async def _read_loop(self, handle: ProcessHandle, generation: int) -> None:
        endpoint = handle.endpoint
        assert endpoint is not None
        while True:
            try:
                msg: Message | TransportError = await endpoint.recv()
            except TransportError as exc:
                msg = exc
            await self.inbox.put((handle, generation, msg))
            if isinstance(msg, TransportError) and not _recoverable(msg):
                return

    async def shutdown(self, timeout_s: float) -> None:
        """Ask every idle worker to exit, wait up to `timeout_s`, then kill the rest.

        A replacement still in its handshake, and a worker busy with a request, are killed at
        once: nothing would read what they are making, and a busy worker reads `Shutdown` only
        after its request (a collect part, or a whole eval).
        """
        for handle in self.workers:
            if not handle.idle:
                self._end(handle)
        for handle in self.workers:
            if handle.endpoint is not None:
                with contextlib.suppress(TransportError, TimeoutError):
                    async with asyncio.timeout(1.0):
                        await handle.endpoint.send(Shutdown())
        exits = [_process_exit(h.process) for h in self.workers if h.process is not None]
        await wait_bounded(exits, timeout_s, "worker(s)", "killing", log)
        self.kill_all()

    def kill_all(self) -> None:
        """Synchronously kill and reap every worker, close every pipe (idempotent)."""
        for handle in self.workers:
            self._end(handle)
        dying, self._dying = self._dying, []
        for proc in dying:
            proc.join()  # SIGKILLed: it exits once it is scheduled
            proc.close()

    def _end(self, handle: ProcessHandle) -> None:
        handle.ready = False
        if handle.starting is not None:
            handle.starting.cancel()
            handle.starting = None
        if handle.reader is not None:
            handle.reader.cancel()
            handle.reader = None
        if handle.endpoint is not None:
            handle.endpoint.close()
            handle.endpoint = None
        proc = handle.process
        if proc is not None:
            if proc.is_alive():
                proc.kill()
            proc.join(timeout=KILL_JOIN_S)
            if proc.is_alive():  # killed, not yet exited: never block the loop on it
                log.warning("%s (pid %s) has not exited yet after SIGKILL", handle.name, proc.pid)
                self._dying.append(proc)
            else:
                proc.close()
            handle.process = None
        handle.request = None


def _recoverable(exc: TransportError) -> bool:
    """A malformed frame leaves the stream usable; a gone peer does not."""
    from zeropipe.transport import ProtocolError

    return isinstance(exc, ProtocolError)


def _process_exit(process: Any) -> asyncio.Future:
    """A future resolved when `process` exits (its sentinel fd becomes readable)."""
    loop = asyncio.get_running_loop()
    fut = loop.create_future()
    if not process.is_alive():
        fut.set_result(process.exitcode)
        return fut
    sentinel = process.sentinel

    def on_exit() -> None:
        loop.remove_reader(sentinel)
        if not fut.done():
            fut.set_result(None)

    loop.add_reader(sentinel, on_exit)
    fut.add_done_callback(lambda _f: loop.remove_reader(sentinel))
    return fut
