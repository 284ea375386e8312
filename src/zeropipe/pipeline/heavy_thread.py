"""The driver's one heavy-work thread: learner steps, buffer work, decoding and checkpoint writes.

Runs in: driver. One `ThreadPoolExecutor` with a single thread, owned by one driver. The driver
coroutine hands it one job at a time and awaits it, so buffer and learner still have a single owner
(docs/design.md, 'Processes and ownership'): while a job runs the driver is suspended at its
`await`, and no other task touches them; between jobs the driver reads them on the loop thread. The
event loop meanwhile serves everything else in the process (pipe readers, an embedding app, the
status endpoint).

Cancellation abandons the *wait*, never half a job: a job that already started finishes on the
thread, and whatever is submitted next (the final checkpoint) queues behind it on the same thread.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

import torch

log = logging.getLogger("zeropipe.driver")

T = TypeVar("T")
THREAD_NAME = "zeropipe-heavy"


class HeavyThread:
    """A single worker thread that the driver awaits for its heavy work.

    Args:
        torch_threads: intra-op threads for torch on that thread (the learner's threads).
    """

    def __init__(self, torch_threads: int) -> None:
        self._executor = ThreadPoolExecutor(
            max_workers=1,
            thread_name_prefix=THREAD_NAME,
            initializer=torch.set_num_threads,
            initargs=(torch_threads,),
        )

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """Run `fn(*args)` on the thread and await its result (or its exception).

        A cancellation of the awaiting task abandons the wait: a job not yet started is dropped, a
        started one runs to its end on the thread (nothing is torn halfway).
        """
        future = self._executor.submit(fn, *args)
        future.add_done_callback(_log_abandoned)
        return await asyncio.wrap_future(future)

    async def settle(self, fn: Callable[..., T], *args: Any) -> tuple[T, bool]:
        """Run `fn(*args)` to its end even if the awaiting task is cancelled meanwhile.

        For work that must happen (the final checkpoint, building the run). A cancellation while
        it runs is held back until it is done: a second one waits for it synchronously.

        Returns:
            (its result, whether a cancellation arrived meanwhile — the caller re-raises it).
        """
        future = self._executor.submit(fn, *args)
        waiter = asyncio.wrap_future(future)
        try:
            return await asyncio.shield(waiter), False
        except asyncio.CancelledError:
            pass
        try:
            return await asyncio.shield(waiter), True
        except asyncio.CancelledError:
            return future.result(), True  # cancelled again: block until the work is done

    def close(self) -> None:
        """Wait for the job in progress (if any) and stop the thread."""
        self._executor.shutdown(wait=True, cancel_futures=True)


def _log_abandoned(future: Future) -> None:
    """A failure reaches its waiter; one whose waiter was cancelled is at least logged."""
    if not future.cancelled() and future.exception() is not None:
        exc = future.exception()
        log.debug("heavy job ended with %s: %s", type(exc).__name__, exc)
