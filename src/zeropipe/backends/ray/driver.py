"""The `ray` backend: collectors and evaluators as Ray actors, weights in Ray's object store.

Runs in: driver (event-loop thread; `ray.put` runs on the heavy thread inside `publish`). The
actors' side is `actor.py`; the Ray connection is `session.py`.

- **Placement.** Each actor asks Ray for `*_num_cpus` CPUs, `*_num_gpus` GPUs and the custom
  `*_resources`; Ray places it on any node that offers them. The driver (learner + replay buffer)
  stays where the run was started (the head node).
- **Weights.** One `ray.put` per published version (the object store replaces shared memory);
  a request carries the version's object reference. A version is dropped by the store once no
  request holds a lease on it and a newer one exists, and Ray frees the object when the last
  reference (ours, or a running call's) is gone.
- **Replies.** Each request is one actor call; a named task awaits its object reference on the
  driver's loop (never a blocking `ray.get`) and puts the reply, or the failure, in the inbox.
- **Faults.** A call that fails because the actor died (`RayActorError` and friends) is reported
  as `WorkerGone`, and the driver replaces the actor by the rules both backends share (base.py:
  restart window, fresh seed per generation, `restart` event). An actor that dies while idle is
  found at its next request. An exception inside the actor arrives as a `WorkerError` reply. An
  actor whose request runs past its deadline (deadline.py) is hung: the restart's `_end` kills it
  with `ray.kill` (Ray force-kills the actor's process) and cancels the call awaiting its reply.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from zeropipe.backends.base import (
    HELLO_TIMEOUT_S,
    ReplacingWorkers,
    WorkerHandle,
    wait_bounded,
)
from zeropipe.backends.errors import WorkerFailed
from zeropipe.backends.process.worker import worker_environment
from zeropipe.backends.ray.session import RaySession
from zeropipe.config import ExperimentConfig
from zeropipe.transport import (
    CollectorStateRequest,
    CollectRequest,
    EvalRequest,
    Hello,
    ParamLayout,
    SnapshotError,
    SnapshotRef,
    WorkerError,
    WorkerGone,
)

log = logging.getLogger("zeropipe.ray")


@dataclass
class _Version:
    object_ref: Any  # ray.ObjectRef of {name: np.ndarray}
    leases: int = 0


class RayWeightStore:
    """Published versions as Ray objects, leased to the requests that name them.

    Args:
        layout: the parameter layout every version must match.
    """

    def __init__(self, layout: ParamLayout) -> None:
        self.layout = layout
        self._versions: dict[int, _Version] = {}
        self._latest: SnapshotRef | None = None
        self._closed = False
        self.puts = 0  # ray.put calls so far (one per published version)

    @property
    def latest(self) -> SnapshotRef | None:
        """The most recently published version, if any."""
        return self._latest

    @property
    def resident_versions(self) -> list[int]:
        """Versions whose object this store still references."""
        return sorted(self._versions)

    def publish(self, version: int, state_dict: Mapping[str, Any]) -> SnapshotRef:
        """`ray.put` the weights as `version` (once per version); drops unleased older ones.

        Raises:
            SnapshotError: the version is older than the latest, or the weights do not match
                the layout.
        """
        import ray

        if self._closed:
            raise SnapshotError("publish() on a closed RayWeightStore")
        if version in self._versions:
            return SnapshotRef(self._versions[version].object_ref.hex(), version)
        if self._latest is not None and version < self._latest.version:
            raise SnapshotError(
                f"cannot publish version {version} after version {self._latest.version}: "
                "a version is written once and versions only increase"
            )
        arrays = self.layout.check_state_dict(state_dict)
        entry = _Version(ray.put(arrays))
        self.puts += 1
        self._versions[version] = entry
        self._latest = SnapshotRef(entry.object_ref.hex(), version)
        self._drop_unleased()
        return self._latest

    def object_ref(self, ref: SnapshotRef) -> Any:
        """The Ray object reference of a resident version."""
        return self._resident(ref, "send").object_ref

    def acquire(self, ref: SnapshotRef) -> None:
        """Lease `ref` for one request."""
        self._resident(ref, "lease").leases += 1

    def release(self, ref: SnapshotRef) -> None:
        """Return a lease; a no-op after `close`.

        Raises:
            SnapshotError: `ref` holds no lease (a double release is a driver bug).
        """
        if self._closed:
            return
        entry = self._resident(ref, "release")
        if entry.leases == 0:
            raise SnapshotError(f"release({ref}) without a matching acquire")
        entry.leases -= 1
        self._drop_unleased()

    def close(self) -> None:
        """Drop every reference (Ray frees the objects); idempotent."""
        self._closed = True
        self._versions.clear()

    def _drop_unleased(self) -> None:
        latest = None if self._latest is None else self._latest.version
        for version in [v for v, e in self._versions.items() if e.leases == 0 and v != latest]:
            del self._versions[version]

    def _resident(self, ref: SnapshotRef, action: str) -> _Version:
        entry = self._versions.get(ref.version)
        if entry is None or entry.object_ref.hex() != ref.block_name:
            raise SnapshotError(
                f"cannot {action} {ref}: that version is no longer in the store; only lease the "
                "ref returned by the latest publish() before sending it"
            )
        return entry


@dataclass
class RayHandle(WorkerHandle):
    """The driver's view of one Ray actor."""

    actor: Any = None  # ray.actor.ActorHandle
    node_id: str = ""  # the Ray node it was placed on (known once started)
    pid: int = 0
    call: asyncio.Task | None = None  # awaits the reply of the request in flight


class RayBackend(ReplacingWorkers):
    """Collectors and evaluators as Ray actors (the `ray` worker backend).

    Args:
        cfg: the experiment config.
        store: the weight store the requests' refs come from.
        inbox: the driver's queue of `(handle, generation, message | exception)`.
    """

    def __init__(self, cfg: ExperimentConfig, store: RayWeightStore, inbox: asyncio.Queue) -> None:
        super().__init__(cfg, inbox, RayHandle)
        self.store = store
        self.session = RaySession(self.ap)

    async def start(self) -> None:
        """Connect to Ray, create every actor and wait until each has said hello."""
        await asyncio.to_thread(self.session.open)
        for handle in self.workers:
            self._create(handle)
        await asyncio.gather(*(self._handshake(h) for h in self.workers))

    async def submit(
        self, handle: RayHandle, request: CollectRequest | EvalRequest | CollectorStateRequest
    ) -> None:
        """Call the actor; a named task awaits the reply and puts it in the inbox.

        Raises:
            WorkerGone: the actor is being replaced.
        """
        if handle.actor is None or not handle.ready:
            raise WorkerGone(handle.name, "it is not running (it is being replaced)")
        weights = []  # a collector-state request names no weights version
        if not isinstance(request, CollectorStateRequest):
            weights = [self.store.object_ref(request.snapshot)]
        reply = handle.actor.answer.remote(request, weights)
        handle.call = asyncio.create_task(
            self._await_reply(handle, handle.generation, reply), name=f"{handle.name}-reply"
        )

    async def shutdown(self, timeout_s: float) -> None:
        """Let every actor close its envs (up to `timeout_s`), end them, then leave Ray."""
        closing = []
        for handle in self.workers:
            if handle.call is not None:
                handle.call.cancel()
            if handle.actor is not None and handle.ready:
                closing.append(asyncio.wrap_future(handle.actor.close.remote().future()))
        await wait_bounded(closing, timeout_s, "actor(s)", "ending them", log)
        for handle in self.workers:
            self._end(handle)
        self.store.close()
        await asyncio.to_thread(self.session.close)

    def kill_all(self) -> None:
        """End every actor, drop every weights version and leave Ray (idempotent)."""
        for handle in self.workers:
            self._end(handle)
        self.store.close()
        self.session.close()

    # ------------------------------------------------------------------ actors
    def _create(self, handle: RayHandle) -> None:
        import ray

        from zeropipe.backends.ray.actor import RayWorker

        ap = self.ap
        collector = handle.role == "collector"
        spec = self.next_spec(handle)
        threads = spec.num_threads
        options = ray.remote(RayWorker).options(
            name=actor_name(os.getpid(), handle.name, handle.generation),
            num_cpus=threads,
            num_gpus=ap.collector_num_gpus if collector else ap.evaluator_num_gpus,
            resources=dict(ap.collector_resources if collector else ap.evaluator_resources),
            max_restarts=0,  # the driver replaces actors itself (fresh seed, restart window)
            max_concurrency=1,
            runtime_env={"env_vars": worker_environment(threads)},
        )
        handle.actor = options.remote(spec)
        handle.request = None

    async def _handshake(self, handle: RayHandle) -> None:
        try:
            async with asyncio.timeout(HELLO_TIMEOUT_S):
                hello, node_id = await asyncio.wrap_future(handle.actor.hello.remote().future())
        except TimeoutError as exc:
            raise WorkerFailed(
                f"{handle.name} did not start within {HELLO_TIMEOUT_S:.0f}s: does a node offer "
                f"what it asks for (policy.async_pipeline.{handle.role}_num_cpus / _num_gpus / "
                "_resources)? `ray status` shows the cluster's resources"
            ) from exc
        except Exception as exc:
            raise WorkerFailed(f"{handle.name} did not start: {type(exc).__name__}: {exc}") from exc
        if not isinstance(hello, Hello) or (hello.role, hello.worker_id) != (
            handle.role,
            handle.worker_id,
        ):
            raise WorkerFailed(f"{handle.name}: handshake from {hello!r}")
        handle.node_id, handle.pid, handle.ready = node_id, hello.pid, True
        log.info("%s runs on node %s (pid %d)", handle.name, node_id[:12], hello.pid)

    async def _await_reply(self, handle: RayHandle, generation: int, reply: Any) -> None:
        """Await one call's object reference on this loop; its reply or failure → inbox."""
        import ray.exceptions

        try:
            msg: Any = await asyncio.wrap_future(reply.future())
        except ray.exceptions.RayTaskError as exc:  # raised inside the actor, outside answer()
            msg = WorkerError(handle.worker_id, handle.role, str(exc), str(exc))
        except ray.exceptions.RayError as exc:  # the actor (or its node) died
            msg = WorkerGone(handle.name, f"its Ray actor died: {type(exc).__name__}: {exc}")
        finally:
            if handle.call is asyncio.current_task():
                handle.call = None
        await self.inbox.put((handle, generation, msg))

    def _end(self, handle: RayHandle) -> None:
        """Kill the actor (if any) and forget its in-flight call and start."""
        handle.ready = False
        for task in (handle.call, handle.starting):
            if task is not None and task is not _current_task():
                task.cancel()
        handle.call = handle.starting = None
        if handle.actor is not None:
            import ray

            with contextlib.suppress(Exception):  # already dead, or Ray already shut down
                ray.kill(handle.actor, no_restart=True)
            handle.actor = None
        handle.request = None


def actor_name(driver_pid: int, worker: str, generation: int) -> str:
    """The Ray actor name of one start of a worker (unique in a cluster shared by runs)."""
    return f"zeropipe-{driver_pid}-{worker}-{generation}"


def _current_task() -> asyncio.Task | None:
    try:
        return asyncio.current_task()
    except RuntimeError:  # no running loop (kill_all from a synchronous exit path)
        return None
