"""Snapshots across processes: leased protocol under load, unleased races, a crashing reader."""

from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from transport_workers import crashing_reader, expected_value, racing_reader, snapshot_worker

from conftest import SPAWN
from zeropipe.transport import (
    Bye,
    CollectRequest,
    CollectResult,
    DriverEndpoint,
    ParamLayout,
    Shutdown,
    SnapshotLayout,
    SnapshotPublisher,
    SnapshotRef,
)

pytestmark = pytest.mark.timeout(60)
SHAPES = {"w": ((256, 1024), "<f4"), "b": ((1000,), "<i8"), "h": ((17, 3), "<f2")}  # ~1.1 MB
STRESS_S = 1.5


def params(version: int) -> dict[str, np.ndarray]:
    return {
        name: np.full(shape, expected_value(version, dtype), dtype)
        for name, (shape, dtype) in SHAPES.items()
    }


LAYOUT = ParamLayout.from_state_dict(params(0))


class _LeasedStress:
    """Driver side: publishes new versions non-stop, keeps two leased requests in flight."""

    def __init__(self, endpoint: DriverEndpoint, publisher: SnapshotPublisher) -> None:
        self.endpoint = endpoint
        self.publisher = publisher
        self.in_flight: dict[int, SnapshotRef] = {}
        self.completed = 0
        self.version = 0
        # Set on every send and when publishing ends: the reply loop waits on it while nothing
        # is in flight (a recv then could wait for a request that is never sent).
        self.changed = asyncio.Event()

    async def publish_loop(self, duration_s: float) -> None:
        deadline = time.monotonic() + duration_s
        while time.monotonic() < deadline:
            self.version += 1
            ref = self.publisher.publish(self.version, params(self.version))
            if len(self.in_flight) < 2:
                self.publisher.acquire(ref)  # leased from send until the reply
                self.in_flight[self.version] = ref
                await self.endpoint.send(CollectRequest(self.version, ref, self.version, 0, 1, 0))
                self.changed.set()
            await asyncio.sleep(0)
        self.changed.set()

    async def reply_loop(self, publishing: asyncio.Task[None]) -> None:
        while not publishing.done() or self.in_flight:
            if not self.in_flight:
                await self.changed.wait()
                self.changed.clear()
                continue
            msg = await self.endpoint.recv(timeout=30)
            assert isinstance(msg, CollectResult), msg  # a WorkerError names the torn read
            assert msg.policy_version == msg.request_id
            self.publisher.release(self.in_flight.pop(msg.request_id))
            self.completed += 1


async def _leased_session(spawn: Callable[..., Any]) -> None:
    proc, conn = spawn(snapshot_worker)
    endpoint = DriverEndpoint(conn, "collector-0")
    await endpoint.expect_hello(timeout=30)
    with SnapshotPublisher(LAYOUT) as publisher:
        await endpoint.send(SnapshotLayout(LAYOUT))
        stress = _LeasedStress(endpoint, publisher)
        publishing = asyncio.create_task(stress.publish_loop(STRESS_S), name="publish_loop")
        await asyncio.gather(publishing, stress.reply_loop(publishing))
        await endpoint.send(Shutdown())
        assert await endpoint.recv(timeout=30) == Bye(0)
        # Two leases at most in flight, so blocks were reused rather than grown per version.
        assert len(publisher.block_names) <= 3 < stress.version
        assert stress.completed >= 5, stress.completed
    endpoint.close()
    proc.join(10)
    assert proc.exitcode == 0


def test_leased_snapshots_stay_intact_while_the_driver_keeps_publishing(
    spawn_worker: Callable[..., Any],
) -> None:
    with asyncio.Runner() as runner:
        runner.run(_leased_session(spawn_worker))


def test_unleased_reader_racing_the_writer_never_accepts_a_torn_snapshot(
    spawn_worker: Callable[..., Any],
) -> None:
    with SnapshotPublisher(LAYOUT) as publisher:
        ref = publisher.publish(1, params(1))
        latest = SPAWN.Value("q", 1, lock=False)
        stop = SPAWN.Event()
        proc, conn = spawn_worker(racing_reader, LAYOUT.to_wire(), ref.block_name, latest, stop)
        version = 1
        deadline = time.monotonic() + STRESS_S
        while time.monotonic() < deadline:
            version += 1
            assert publisher.publish(version, params(version)).block_name == ref.block_name
            latest.value = version
            if version % 3 == 0:  # leave quiet windows so some reads succeed; others collide
                time.sleep(0.002)
        stop.set()
        assert conn.poll(30)
        accepted, rejected, problems = conn.recv()
        proc.join(10)
    assert problems == [], problems[:3]
    assert accepted > 0, (accepted, rejected)
    assert proc.exitcode == 0


def test_reader_crash_leaves_no_block_and_publisher_keeps_working(
    spawn_worker: Callable[..., Any],
) -> None:
    with SnapshotPublisher(LAYOUT) as publisher:
        ref = publisher.publish(7, params(7))
        publisher.acquire(ref)
        proc, conn = spawn_worker(crashing_reader, LAYOUT.to_wire(), ref.to_wire())
        assert conn.poll(30) and conn.recv() is None  # it read a consistent snapshot
        proc.kill()  # while it keeps reading the block
        proc.join(10)
        assert proc.exitcode == -signal.SIGKILL
        publisher.release(ref)  # what the driver does for a dead worker's requests
        assert publisher.publish(8, params(8)).block_name == ref.block_name
