"""How the async pipeline shares the cores: worker niceness and the learner's threads."""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing as mp
import os
from collections.abc import Iterator

import pytest

from tests.runlog import events
from tests.tiny import tiny_config
from zeropipe.backends.process import worker as process_module
from zeropipe.pipeline import schedule
from zeropipe.pipeline import threads as threads_module
from zeropipe.pipeline.async_driver import train_async
from zeropipe.transport import CollectRequest, DriverEndpoint, EvalRequest

pytestmark = [pytest.mark.timeout(240), pytest.mark.usefixtures("no_leaks")]


def test_learner_threads_are_the_cores_the_busy_workers_leave(monkeypatch):
    monkeypatch.setattr(schedule, "usable_cores", lambda: 6)
    cfg = tiny_config("unused", async_pipeline={"num_collector_actors": 2})
    assert schedule.learner_threads(cfg, busy_cpus=None) == 3  # 2 collectors + 1 evaluator
    assert schedule.learner_threads(cfg, busy_cpus=0) == 6
    assert schedule.learner_threads(cfg, busy_cpus=2) == 4
    assert schedule.learner_threads(cfg, busy_cpus=9) == 1
    assert schedule.learner_threads(cfg, busy_cpus=0, most=1) == 1  # the run's choice caps it
    assert schedule.learner_threads(cfg, busy_cpus=2, most=5) == 4
    fixed = tiny_config("unused", learner_num_threads=2)
    assert schedule.learner_threads(fixed, busy_cpus=0) == 2
    assert schedule.learner_threads(fixed, busy_cpus=0, most=1) == 2  # configured: kept


@contextlib.contextmanager
def niceness_with_room(room: int) -> Iterator[int]:
    """This thread's niceness (the one a spawned worker starts from), lowered to 19 - `room` for
    the block when it is above that, so that a worker that adds up to `room` is seen to add it
    (the kernel caps a niceness at 19); restored afterwards.

    Skips the test where the niceness may not be lowered (no CAP_SYS_NICE, RLIMIT_NICE too low):
    no increase past 19 can be seen there.
    """
    base = os.getpriority(os.PRIO_PROCESS, 0)
    if base <= 19 - room:
        yield base
        return
    try:
        os.setpriority(os.PRIO_PROCESS, 0, 19 - room)
    except PermissionError:
        pytest.skip(f"at niceness {base}, without the right to lower it, no increase can be seen")
    try:
        yield 19 - room
    finally:
        os.setpriority(os.PRIO_PROCESS, 0, base)  # raising a niceness needs no privilege


async def test_workers_run_at_the_configured_niceness(tmp_path, monkeypatch):
    seen: dict[str, int] = {}  # worker -> its niceness at its first request
    real_send = DriverEndpoint.send

    async def send(self, msg):
        if isinstance(msg, CollectRequest | EvalRequest) and self.worker_name not in seen:
            (worker,) = [
                p for p in mp.active_children() if p.name == f"zeropipe-{self.worker_name}"
            ]
            seen[self.worker_name] = os.getpriority(os.PRIO_PROCESS, worker.pid)
        return await real_send(self, msg)

    monkeypatch.setattr(DriverEndpoint, "send", send)
    pipeline = {"worker_niceness": 1, "collector_niceness": 2}
    cfg = tiny_config(tmp_path / "run", async_pipeline=pipeline)
    cfg.max_env_step = 32
    with niceness_with_room(3) as driver_niceness:
        async with asyncio.timeout(180):
            await train_async(cfg, show_progress=False)
    # each worker added exactly its configured niceness to the one it started from (the
    # driver's): both worker_niceness, a collector collector_niceness more
    added = {name: n - driver_niceness for name, n in seen.items()}
    assert added == {"collector-0": 3, "evaluator-0": 1}


def test_by_default_a_collector_gives_way_to_the_evaluator_and_the_learner():
    ap = tiny_config("unused").policy.async_pipeline
    assert (ap.worker_niceness, ap.collector_niceness) == (0, 19)
    assert process_module._own_niceness("collector", ap.model_dump()) == 19
    assert process_module._own_niceness("evaluator", ap.model_dump()) == 0


async def test_the_learner_takes_the_cores_of_workers_without_a_request(tmp_path, monkeypatch):
    monkeypatch.setattr(schedule, "usable_cores", lambda: 6)
    # a model the run gives every free core (one with convolutions on an idle machine)
    monkeypatch.setattr(threads_module, "usable_cores", lambda: 6)
    monkeypatch.setattr(threads_module, "has_convolutions", lambda network: True)
    monkeypatch.setattr(threads_module, "busy_elsewhere", lambda: 0)
    cfg = tiny_config(tmp_path / "run", async_pipeline={"num_collector_actors": 2})
    cfg.max_env_step = 160
    async with asyncio.timeout(180):
        await train_async(cfg, show_progress=False)
    threads = [e["learner_threads"] for e in events(tmp_path / "run") if e["event"] == "train"]
    assert threads and set(threads) <= {3, 4, 5, 6}
    assert max(threads) > 3  # not the fixed split of the cores left after every worker


async def test_an_async_conv_learner_does_not_count_its_own_workers_as_load(tmp_path, monkeypatch):
    """The run's choice is made while its two workers start (runnable, importing torch): on 2
    cores it must still be two threads, not the one a busy machine gets."""
    monkeypatch.setattr(schedule, "usable_cores", lambda: 2)
    monkeypatch.setattr(threads_module, "usable_cores", lambda: 2)
    monkeypatch.setattr(threads_module, "has_convolutions", lambda network: True)
    monkeypatch.setattr(threads_module, "busy_elsewhere", lambda: 2)  # its collector, evaluator
    cfg = tiny_config(tmp_path / "run")
    cfg.max_env_step = 96
    async with asyncio.timeout(180):
        await train_async(cfg, show_progress=False)
    threads = [e["learner_threads"] for e in events(tmp_path / "run") if e["event"] == "train"]
    assert threads and set(threads) <= {1, 2}
    assert 2 in threads  # both cores while no worker has a request in flight
