"""The `process` backend's supervision: spawn, handshake, inbox, restart, shutdown.

Runs in: driver (on the event-loop thread). Each worker is a `spawn`ed process with one duplex
pipe. A reader task per worker forwards its messages (or the error that ended its pipe) to one
inbox queue as `(handle, generation, message)`, so the driver waits on a single queue and can
drop what a dead generation of a worker left behind. Process exit is observed through the
process sentinel fd (`loop.add_reader`), never by polling with sleeps. Shutdown asks every worker to
exit, waits up to `shutdown_timeout_s`, then kills what is left; `kill_all()` is the synchronous
last resort used on any exit path.

Restarts never block the driver: `restart()` spawns the replacement and returns; its handshake
runs in a named task, and the worker becomes `idle` (usable) only once it is done. A replacement
that fails its handshake reports `WorkerStartFailed` through the inbox, which the driver counts as
one more death. Every spawn gets its own seed from (run seed, role, worker, generation).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import multiprocessing as mp
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from zeropipe.pipeline.backend import ReplacingWorkers, Role, WorkerHandle, wait_bounded
from zeropipe.pipeline.errors import WorkerFailed
from zeropipe.transport import (
    CollectRequest,
    DriverEndpoint,
    EvalRequest,
    Message,
    ParamLayout,
    Shutdown,
    SnapshotLayout,
    TransportError,
    WorkerGone,
)
from zeropipe.workers.process import (
    WorkerSpec,
    applied_environment,
    worker_environment,
    worker_main,
)

log = logging.getLogger("zeropipe.supervisor")

HELLO_TIMEOUT_S = 120.0  # a worker imports torch and builds its envs before saying hello
_ROLE_KEYS = {"collector": 0, "evaluator": 1}


def spawn_seed(run_seed: int, role: Role, worker_id: int, generation: int) -> int:
    """The `seed` a worker's config carries for one spawn.

    Generation 0 (the first spawn) keeps the run seed, so the first collectors and evaluators
    are seeded exactly as in the sync pipeline (build.py adds the per-actor offsets). Every
    replacement gets a fresh seed derived from (run seed, role, worker, generation), so a
    restarted worker never replays its predecessor's episodes.
    """
    if generation == 0:
        return run_seed
    seq = np.random.SeedSequence(run_seed, spawn_key=(_ROLE_KEYS[role], worker_id, generation))
    return int(seq.generate_state(1, np.uint32)[0]) // 2  # leaves room for build's offsets


class RestartWindow:
    """Restarts allowed per worker within a sliding time window.

    Args:
        max_restarts: restarts allowed within `window_s`.
        window_s: window length in seconds.
        clock: monotonic clock (tests pass their own).
    """

    def __init__(
        self, max_restarts: int, window_s: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.max_restarts = max_restarts
        self.window_s = window_s
        self.clock = clock
        self.times: deque[float] = deque()

    def allow(self) -> bool:
        """Record a restart now and return True, unless the window already holds the maximum."""
        now = self.clock()
        while self.times and now - self.times[0] >= self.window_s:
            self.times.popleft()
        if len(self.times) >= self.max_restarts:
            return False
        self.times.append(now)
        return True


@dataclass
class ProcessHandle(WorkerHandle):
    """The driver's view of one worker process."""

    process: Any = None  # multiprocessing.Process
    endpoint: DriverEndpoint | None = None
    reader: asyncio.Task | None = None
    starting: asyncio.Task | None = None  # the handshake of a replacement, while it runs

    @property
    def idle(self) -> bool:
        """Alive, handshake done and without a request in flight."""
        return self.endpoint is not None and self.ready and self.request is None


class WorkerPool(ReplacingWorkers):
    """The `process` backend: spawns and supervises the collector and evaluator processes.

    Args:
        config: the experiment config as plain data (`model_dump(mode="json")`).
        layout: the snapshot parameter layout, sent once to every worker.
        num_collectors / num_evaluators: process counts.
        collector_threads / evaluator_threads: torch threads per worker.
        inbox: queue receiving `(handle, message | TransportError)`.
    """

    def __init__(
        self,
        config: dict[str, Any],
        layout: ParamLayout,
        num_collectors: int,
        num_evaluators: int,
        collector_threads: int,
        evaluator_threads: int,
        inbox: asyncio.Queue,
    ) -> None:
        self.config = config
        self.layout = layout
        self.threads = {"collector": collector_threads, "evaluator": evaluator_threads}
        self.inbox = inbox
        self.ctx = mp.get_context("spawn")
        self.workers = [ProcessHandle("collector", i) for i in range(num_collectors)]
        self.workers += [ProcessHandle("evaluator", i) for i in range(num_evaluators)]

    async def submit(self, handle: ProcessHandle, request: CollectRequest | EvalRequest) -> None:
        """Send `request` down the worker's pipe; the reply arrives in the inbox.

        Raises:
            TransportError: the pipe is broken (the worker is gone).
        """
        if handle.endpoint is None:
            raise WorkerGone(handle.name, "it has no pipe (it is being replaced)")
        await handle.endpoint.send(request)

    async def start(self) -> None:
        """Spawn every worker and complete its handshake (concurrently)."""
        for handle in self.workers:
            self._create(handle)
        await asyncio.gather(*(self._handshake(h) for h in self.workers))

    def _create(self, handle: ProcessHandle) -> None:
        parent, child = self.ctx.Pipe(duplex=True)
        handle.seed = spawn_seed(
            int(self.config["seed"]), handle.role, handle.worker_id, handle.generation
        )
        spec = WorkerSpec(
            role=handle.role,
            worker_id=handle.worker_id,
            config={**self.config, "seed": handle.seed},
            num_threads=self.threads[handle.role],
        )
        handle.process = self.ctx.Process(
            target=worker_main, args=(child, spec), name=f"zeropipe-{handle.name}", daemon=True
        )
        # spawn children read these before importing numpy/torch
        with applied_environment(worker_environment(spec.num_threads)):
            handle.process.start()
        child.close()  # else the kernel never reports EOF when the worker dies
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
        """Ask every worker to exit, wait up to `timeout_s`, then kill the rest.

        A replacement still in its handshake is killed at once: it holds no work.
        """
        for handle in self.workers:
            if not handle.ready:
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
            proc.join(timeout=10)
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
