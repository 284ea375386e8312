"""What the async driver asks its collectors for at a stop, and how a second interrupt ends the
wait: the real `AsyncRun` on a real run state, with the recording fakes of launch_fakes.py
(requests are recorded; the test puts the replies in the inbox, or never does)."""

from __future__ import annotations

import asyncio
import logging
import pickle
from collections.abc import Iterator

import pytest

from tests.pipeline.launch_fakes import InlineHeavy, RecordingPool, VersionStore, fake_launcher
from tests.tiny import tiny_config
from zeropipe.backends.base import WorkerHandle
from zeropipe.pipeline.async_driver import _keep_states_unless_interrupted
from zeropipe.pipeline.async_loop import AsyncRun
from zeropipe.pipeline.run_state import RunState
from zeropipe.pipeline.runner import open_run
from zeropipe.transport import CollectorState, CollectorStateRequest, SnapshotRef

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def state(tmp_path) -> Iterator[RunState]:
    # a wait bounded only by the test's timeout: what ends it here is the interrupt
    cfg = tiny_config(tmp_path / "run", async_pipeline={"shutdown_timeout_s": 3600})
    run_state, _ = open_run(cfg, resume=False)
    yield run_state
    run_state.run.close()


def _driver(state: RunState, collectors: int) -> tuple[AsyncRun, RecordingPool]:
    pool = RecordingPool([WorkerHandle("collector", i) for i in range(collectors)])
    store = VersionStore()
    driver = AsyncRun(state.cfg, state, pool, store, asyncio.Queue(), None, InlineHeavy())
    driver.launcher = fake_launcher(state, pool, store)
    return driver, pool


def _collecting(driver: AsyncRun, handle: WorkerHandle) -> None:
    """`handle` has a collect in flight (as `Launcher._launch_collect` leaves it)."""
    handle.request = (99, SnapshotRef("fake-0", 0))
    driver.launcher.collects[handle.name] = object()  # type: ignore[assignment]


async def test_a_second_interrupt_ends_the_wait_keeping_the_states_that_arrived(state, caplog):
    driver, pool = _driver(state, collectors=3)
    first, _never_answers, busy = pool.workers
    _collecting(driver, busy)
    waiting = asyncio.create_task(_keep_states_unless_interrupted(driver), name="keep-states")
    while len(pool.sent) < 2:  # both idle collectors asked (the fake submits inline)
        await asyncio.sleep(0)
    assert all(isinstance(r, CollectorStateRequest) for r in pool.sent)
    held = {"trajectories": [], "marker": 7}
    reply = CollectorState(pool.sent[0].request_id, first.worker_id, pickle.dumps(held))
    await driver.inbox.put((first, first.generation, reply))
    while (
        first.name not in state.collectors.workers
    ):  # the driver takes it; the other never answers
        await asyncio.sleep(0)
    with caplog.at_level(logging.WARNING, logger="zeropipe.driver"):
        waiting.cancel()  # a second Ctrl-C
        assert await waiting is False
    assert state.collectors.workers == {"collector-0": held}
    assert "collectors' states not yet received are not kept" in caplog.text


async def test_a_collector_mid_collect_is_not_asked_and_a_warning_names_it(state, caplog):
    driver, pool = _driver(state, collectors=2)
    idle, busy = pool.workers
    _collecting(driver, busy)
    with caplog.at_level(logging.WARNING, logger="zeropipe.driver"):
        waiting = asyncio.create_task(driver.keep_collector_states(), name="keep-states")
        while not pool.sent:
            await asyncio.sleep(0)
        (request,) = pool.sent
        await driver.inbox.put((idle, idle.generation, CollectorState(request.request_id, 0, None)))
        await waiting  # every collector asked has answered: no wait for the busy one
    assert state.collectors.workers == {}  # the idle one's envs cannot be captured (None)
    assert "collector-1 was collecting at the stop: that collect's steps are dropped" in caplog.text


async def test_an_unanswered_request_waits_at_most_shutdown_timeout_s(state, caplog):
    state.cfg.policy.async_pipeline.shutdown_timeout_s = 0.05
    driver, pool = _driver(state, collectors=1)
    with caplog.at_level(logging.WARNING, logger="zeropipe.driver"):
        assert await _keep_states_unless_interrupted(driver) is True
    assert len(pool.sent) == 1 and state.collectors.workers == {}
    assert "no state from collector-0: they start new episodes on resume" in caplog.text
