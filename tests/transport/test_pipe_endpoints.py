"""Pipe endpoints against spawned workers, under the default asyncio loop and uvloop."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from transport_workers import BIG_REQUEST_ID, echo_worker, silent_worker

from zeropipe.transport import (
    Bye,
    CollectRequest,
    CollectResult,
    DriverEndpoint,
    EvalResult,
    Hello,
    ProtocolError,
    Shutdown,
    SnapshotRef,
    WorkerGone,
)

pytestmark = pytest.mark.timeout(60)
BIG_BYTES = 50 * 2**20


async def _ticker(counter: list[int]) -> None:
    while True:
        counter[0] += 1
        await asyncio.sleep(0.001)


def _watch_transfer(endpoint: DriverEndpoint, ticks: list[int]) -> dict[str, int]:
    """Records the ticker count when a big frame starts arriving and when it completes."""
    seen: dict[str, int] = {}
    assembler = endpoint._assembler
    original = assembler.read

    def read(fd: int, budget_bytes: int) -> tuple[list[bytearray], bool]:
        frames, eof = original(fd, budget_bytes)
        if assembler._payload is not None and len(assembler._payload) >= BIG_BYTES:
            seen.setdefault("first_partial", ticks[0])
        if any(len(f) >= BIG_BYTES for f in frames):
            seen["complete"] = ticks[0]
        return frames, eof

    assembler.read = read  # type: ignore[method-assign]
    return seen


async def _echo_session(spawn: Callable[..., Any]) -> None:
    proc, conn = spawn(echo_worker, 5)
    endpoint = DriverEndpoint(conn, "collector-5")
    hello = await endpoint.expect_hello(timeout=30)
    assert hello == Hello(5, "collector", hello.protocol_version, proc.pid)

    for msg in [
        CollectRequest(1, SnapshotRef("zeropipe_x", 3), 3, 100, 1.0, 0.05),
        EvalResult(2, 5, 3, 1.5, [1.0, 2.0], 0.5),
    ]:
        await endpoint.send(msg)
        assert await endpoint.recv(timeout=30) == msg

    # A 50 MB message from the worker must not freeze the loop while it is in flight.
    ticks = [0]
    seen = _watch_transfer(endpoint, ticks)
    ticker = asyncio.create_task(_ticker(ticks), name="ticker")
    await endpoint.send(CollectRequest(BIG_REQUEST_ID, SnapshotRef("x", 0), 0, BIG_BYTES, 0, 0))
    big = await endpoint.recv(timeout=30)
    ticker.cancel()
    assert isinstance(big, CollectResult)
    obs = big.segments[0]["obs"]
    assert obs.shape == (BIG_BYTES,) and obs[0] == 7 and obs[-1] == 7
    assert seen["complete"] > seen["first_partial"], seen  # the ticker ran mid-transfer

    # And 50 MB from the driver must not block it either (the worker echoes it back).
    frames = np.arange(BIG_BYTES, dtype=np.uint8)
    sent = CollectResult(9, 0, 0, [{"obs": frames}], 0, [], 0.0, 0.0)
    await asyncio.gather(endpoint.send(sent), _expect_echo(endpoint, frames))

    await endpoint.send(Shutdown())
    assert await endpoint.recv(timeout=30) == Bye(5)
    with pytest.raises(WorkerGone):
        await endpoint.recv(timeout=30)
    endpoint.close()
    proc.join(10)
    assert proc.exitcode == 0


async def _expect_echo(endpoint: DriverEndpoint, frames: np.ndarray) -> None:
    echoed = await endpoint.recv(timeout=30)
    assert isinstance(echoed, CollectResult)
    np.testing.assert_array_equal(echoed.segments[0]["obs"], frames)


def test_echo_worker_and_large_messages_keep_loop_running(
    run_loop: Callable[..., Any], spawn_worker: Callable[..., Any]
) -> None:
    run_loop(_echo_session(spawn_worker))


async def _killed_worker_session(spawn: Callable[..., Any]) -> None:
    proc, conn = spawn(silent_worker)
    endpoint = DriverEndpoint(conn, "collector-0")
    await endpoint.expect_hello(timeout=30)
    waiting = asyncio.create_task(endpoint.recv(), name="recv")
    await asyncio.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    with pytest.raises(WorkerGone) as info:
        await asyncio.wait_for(waiting, timeout=10)
    assert info.value.worker_name == "collector-0"
    with pytest.raises(WorkerGone):  # terminal: later calls fail the same way
        await endpoint.recv(timeout=1)
    with pytest.raises(WorkerGone):
        await endpoint.send(Shutdown())
    endpoint.close()
    endpoint.close()
    proc.join(10)


def test_killed_worker_raises_worker_gone(
    run_loop: Callable[..., Any], spawn_worker: Callable[..., Any]
) -> None:
    run_loop(_killed_worker_session(spawn_worker))


async def _garbage_session() -> None:
    import multiprocessing as mp

    driver_conn, worker_conn = mp.Pipe(duplex=True)
    endpoint = DriverEndpoint(driver_conn, "collector-9")
    worker_conn.send_bytes(b"not a zeropipe frame")
    with pytest.raises(ProtocolError, match="collector-9"):
        await endpoint.recv(timeout=5)
    worker_conn.send_bytes(b"")
    with pytest.raises(ProtocolError, match="collector-9"):
        await endpoint.recv(timeout=5)
    worker_conn.close()
    with pytest.raises(WorkerGone):
        await endpoint.recv(timeout=5)
    endpoint.close()


def test_bad_frames_name_the_worker(run_loop: Callable[..., Any]) -> None:
    run_loop(_garbage_session())


async def _recv_timeout_session() -> None:
    import multiprocessing as mp

    driver_conn, worker_conn = mp.Pipe(duplex=True)
    endpoint = DriverEndpoint(driver_conn, "collector-1")
    with pytest.raises(TimeoutError):
        await endpoint.recv(timeout=0.01)
    endpoint.close()
    with pytest.raises(WorkerGone, match="closed by the driver"):
        await endpoint.recv()
    worker_conn.close()


def test_recv_timeout_and_close(run_loop: Callable[..., Any]) -> None:
    run_loop(_recv_timeout_session())


async def _orphaned_send_session() -> list[dict[str, Any]]:
    """A send whose coroutine ended before its frame was written (a KeyboardInterrupt raised in
    it, as Python's default SIGINT handler does wherever the main thread is), then the close."""
    import gc
    import multiprocessing as mp

    loop = asyncio.get_running_loop()
    reported: list[dict[str, Any]] = []
    loop.set_exception_handler(lambda _loop, context: reported.append(context))
    driver_conn, worker_conn = mp.Pipe(duplex=True)
    endpoint = DriverEndpoint(driver_conn, "collector-2")
    big = EvalResult(2, 5, 3, 1.5, [1.0] * 2**20, 0.5)  # more than the pipe holds: nobody reads
    sending = endpoint.send(big)
    sending.send(None)  # runs up to the wait for its frame to be written
    sending.close()  # the sender is gone; its frame is still queued
    endpoint.close()
    del sending
    gc.collect()
    worker_conn.close()
    return reported


def test_a_send_whose_sender_is_gone_logs_nothing_when_the_endpoint_closes(
    run_loop: Callable[..., Any],
) -> None:
    """Before the fix, each such frame's wait logged 'Future exception was never retrieved'
    with a WorkerGone traceback as the process exited, after the CLI's last line."""
    assert run_loop(_orphaned_send_session()) == []
