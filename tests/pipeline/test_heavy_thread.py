"""The driver's heavy thread: one thread, jobs in order, cancellation never tears a job."""

from __future__ import annotations

import asyncio
import threading

import pytest

from zeropipe.pipeline.heavy_thread import HeavyThread

pytestmark = pytest.mark.timeout(30)


def blocking_job(started: threading.Event, release: threading.Event, out: list, tag: str):
    def job() -> str:
        started.set()
        assert release.wait(10)
        out.append(tag)
        return tag

    return job


async def test_a_cancelled_wait_leaves_the_job_running_and_the_next_job_queues_behind():
    heavy = HeavyThread(torch_threads=1)
    started, release, done = threading.Event(), threading.Event(), []
    waiting = asyncio.create_task(heavy.run(blocking_job(started, release, done, "step")))
    assert await asyncio.to_thread(started.wait, 10)
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    assert done == []  # abandoned, not stopped: it is still running on the thread

    def final() -> int:
        done.append("final")
        return threading.get_ident()

    final_job = asyncio.create_task(heavy.settle(final))
    release.set()
    ident, cancelled = await final_job
    assert done == ["step", "final"] and not cancelled
    assert ident != threading.get_ident()
    heavy.close()


async def test_settle_runs_to_the_end_through_a_cancellation():
    heavy = HeavyThread(torch_threads=1)
    started, release, done = threading.Event(), threading.Event(), []
    task = asyncio.create_task(heavy.settle(blocking_job(started, release, done, "ckpt")))
    assert await asyncio.to_thread(started.wait, 10)
    task.cancel()
    release.set()
    assert await task == ("ckpt", True)  # done, and the cancellation reported to re-raise
    heavy.close()


async def test_errors_reach_the_waiter():
    heavy = HeavyThread(torch_threads=1)

    def fails() -> None:
        raise ValueError("bad batch")

    with pytest.raises(ValueError, match="bad batch"):
        await heavy.run(fails)
    heavy.close()
