"""The backend seam: what the async driver needs from its workers and its weights.

Runs in: driver (event-loop thread). The driver's rules (async_loop.py, async_launch.py) are written
once against two small interfaces (docs/design.md, 'The two seams'):

- a **worker backend** starts the collectors and evaluators, says which are idle, submits a
  request naming a weights version, delivers *one stream* of results and failures — the inbox
  queue, items ``(handle, generation, Message | Exception)`` — replaces a dead worker, and shuts
  everything down;
- a **weight store** publishes a version of the learner's weights once, and leases it to each
  request that names it until its reply (or its worker's death) releases it.

``process`` (worker processes, pipes, shared-memory snapshots: process/ + transport) is the
default; ``ray`` (Ray actors, Ray's object store: ray/) is the second. A new backend is
one package and one entry in ``factory.open_backend``, never a branch in the driver.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from zeropipe.backends.errors import WorkerFailed, WorkerStartFailed
from zeropipe.config import ExperimentConfig
from zeropipe.transport import (
    CollectorStateRequest,
    CollectRequest,
    EvalRequest,
    ParamLayout,
    SnapshotRef,
)
from zeropipe.workers.request_server import Role, WorkerSpec, role_threads

RAY_INSTALL_HINT = 'pip install -e ".[ray]"'
HELLO_TIMEOUT_S = 120.0  # a worker imports torch and builds its envs before saying hello
_ROLE_KEYS = {"collector": 0, "evaluator": 1}


def spawn_seed(run_seed: int, role: Role, worker_id: int, generation: int) -> int:
    """The `seed` a worker's config carries for one start (process or actor).

    Generation 0 (the first start) keeps the run seed, so the first collectors and evaluators
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
class WorkerHandle:
    """The driver's view of one worker, whatever runs it (a backend may subclass it)."""

    role: Role
    worker_id: int
    ready: bool = False  # started (handshake done): the worker accepts requests
    request: tuple[int, SnapshotRef] | None = None  # (request_id, leased weights) in flight
    generation: int = 0  # starts so far minus one; inbox items carry it
    seed: int = 0  # the config seed of the current start
    restarts: int = 0
    busy_s: float = 0.0  # seconds its collects took (the driver adds each reply's busy_s)
    starting: asyncio.Task | None = None  # the start of a replacement, while it runs

    @property
    def name(self) -> str:
        """`collector-0`, `evaluator-1`, ..."""
        return f"{self.role}-{self.worker_id}"

    @property
    def idle(self) -> bool:
        """Started and without a request in flight."""
        return self.ready and self.request is None


class WorkerBackend(Protocol):
    """Collectors and evaluators, wherever they run; results and failures go to one inbox."""

    workers: list[Any]  # list[WorkerHandle] (a backend's own subclass)

    def of_role(self, role: Role) -> list[Any]:
        """The handles of one role."""

    async def start(self) -> None:
        """Start every worker; return once all of them accept requests.

        Raises:
            WorkerFailed: a worker did not start.
        """

    async def submit(
        self, handle: Any, request: CollectRequest | EvalRequest | CollectorStateRequest
    ) -> None:
        """Hand `request` to the worker; its reply (or failure) arrives in the inbox.

        Raises:
            TransportError: the worker is gone (the driver then restarts it).
        """

    def restart(self, handle: Any) -> None:
        """Replace a dead worker; returns at once, the handle is idle once the new one started.

        A replacement that fails to start reports `WorkerStartFailed` through the inbox.
        """

    async def shutdown(self, timeout_s: float) -> None:
        """Stop every worker within `timeout_s`, then kill what is left."""

    def kill_all(self) -> None:
        """Synchronous last resort on every exit path (idempotent)."""


class ReplacingWorkers:
    """What both backends share: the worker handles, each start's spec and seed, the restart rule.

    A backend provides `_end(handle)` (stop and forget the worker), `_create(handle)` (start a
    fresh one for `handle.generation` from `next_spec(handle)`) and `async _handshake(handle)`
    (wait for its hello, at most `HELLO_TIMEOUT_S`; raises WorkerFailed); `restart` returns at
    once and the handshake runs in a named task, so the driver never blocks on a replacement. The
    handle is idle only once it said hello; a failed start reaches the inbox as
    `WorkerStartFailed`, which the driver counts as a death.

    Args:
        cfg: the experiment config (`policy.async_pipeline` sizes the pool).
        inbox: the driver's queue of `(handle, generation, message | exception)`.
        handle_type: the backend's `WorkerHandle` subclass.
    """

    def __init__(
        self, cfg: ExperimentConfig, inbox: asyncio.Queue, handle_type: type[WorkerHandle]
    ) -> None:
        self.ap = ap = cfg.policy.async_pipeline
        self.config = cfg.model_dump(mode="json")
        self.inbox = inbox
        self.workers: list[Any] = [
            handle_type("collector", i) for i in range(ap.num_collector_actors)
        ]
        self.workers += [handle_type("evaluator", i) for i in range(ap.num_evaluator_actors)]

    def next_spec(self, handle: WorkerHandle) -> WorkerSpec:
        """The spec of the handle's next start: the config with this generation's seed."""
        handle.seed = spawn_seed(
            int(self.config["seed"]), handle.role, handle.worker_id, handle.generation
        )
        config = {**self.config, "seed": handle.seed}
        return WorkerSpec(handle.role, handle.worker_id, config, role_threads(self.ap, handle.role))

    def of_role(self, role: Role) -> list[Any]:
        """The handles of one role."""
        return [w for w in self.workers if w.role == role]

    def restart(self, handle: Any) -> None:
        """Replace a dead worker; returns before the replacement has started."""
        self._end(handle)
        handle.restarts += 1
        handle.generation += 1
        self._create(handle)
        handle.starting = asyncio.create_task(
            self._start_replacement(handle, handle.generation), name=f"{handle.name}-restart"
        )

    async def _start_replacement(self, handle: Any, generation: int) -> None:
        try:
            await self._handshake(handle)
        except WorkerFailed as exc:
            await self.inbox.put((handle, generation, WorkerStartFailed(str(exc))))
        finally:
            if handle.starting is asyncio.current_task():
                handle.starting = None

    def _end(self, handle: Any) -> None:
        raise NotImplementedError

    def _create(self, handle: Any) -> None:
        raise NotImplementedError

    async def _handshake(self, handle: Any) -> None:
        raise NotImplementedError


class WeightStore(Protocol):
    """Published weight versions, each kept while a request holds a lease on it."""

    layout: ParamLayout  # of every published version

    @property
    def latest(self) -> SnapshotRef | None:
        """The most recently published version, if any."""

    def publish(self, version: int, state_dict: Mapping[str, Any]) -> SnapshotRef:
        """Publish `state_dict` as `version` (once per version); the ref requests name."""

    def acquire(self, ref: SnapshotRef) -> None:
        """Lease `ref` for one request."""

    def release(self, ref: SnapshotRef) -> None:
        """Return a lease; a version no request holds may be freed."""

    def close(self) -> None:
        """Free everything (idempotent)."""


async def wait_bounded(
    futures: Collection[asyncio.Future],
    timeout_s: float,
    what: str,
    then: str,
    logger: logging.Logger,
) -> None:
    """Wait up to `timeout_s` for `futures` (workers exiting); cancel and report the rest.

    Args:
        futures: one per worker; may be empty.
        what: the workers, for the warning ("worker(s)", "actor(s)").
        then: what happens to the ones left ("killing", "ending them").
        logger: the backend's logger, which gets the warning.
    """
    if not futures:
        return
    _done, pending = await asyncio.wait(futures, timeout=timeout_s)
    for fut in pending:
        fut.cancel()
    if pending:
        logger.warning("%d %s did not exit within %.0fs; %s", len(pending), what, timeout_s, then)
