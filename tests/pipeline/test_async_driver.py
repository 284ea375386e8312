"""The async driver end to end: workers, embedding, cancellation, crash recovery."""

from __future__ import annotations

import asyncio
import multiprocessing as mp
import os
import signal

import pytest

from tests.runlog import events, wait_for_event
from tests.tiny import tiny_config
from zeropipe.pipeline.async_driver import train_async

pytestmark = [pytest.mark.timeout(180), pytest.mark.usefixtures("no_leaks")]


async def test_two_collectors_and_an_evaluator(tmp_path):
    cfg = tiny_config(tmp_path / "run", async_pipeline={"num_collector_actors": 2})
    summary = await train_async(cfg, show_progress=False)
    assert summary.stop_reason == "max_env_step"
    log = events(tmp_path / "run")
    collects = [e for e in log if e["event"] == "collect"]
    assert {e["worker"] for e in collects} == {"collector-0", "collector-1"}
    assert sum(e["envstep_delta"] for e in collects) == summary.envstep >= 400
    assert all(e["policy_lag"] >= 0 for e in collects)
    assert any(e["event"] == "eval" for e in log)
    assert any(e["event"] == "publish" for e in log)
    assert summary.train_iter > 0
    assert (tmp_path / "run" / "ckpt" / "ckpt_latest.pth.tar").exists()
    assert (tmp_path / "run" / "ckpt" / "ckpt_best.pth.tar").exists()


async def test_embedded_beside_another_task_and_cancelled(tmp_path):
    cfg = tiny_config(tmp_path / "run")
    cfg.max_env_step = 10**6
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0.01)

    other = asyncio.create_task(ticker(), name="ticker")
    driver = asyncio.create_task(train_async(cfg, show_progress=False), name="driver")
    await wait_for_event(tmp_path / "run", lambda e: e["event"] == "train")
    ticks_while_training = ticks
    driver.cancel()
    with pytest.raises(asyncio.CancelledError):
        await driver
    assert ticks_while_training > 0 and not other.done()
    other.cancel()
    last = events(tmp_path / "run")[-1]
    assert last["event"] == "stop" and last["reason"] == "cancelled"
    assert (tmp_path / "run" / "ckpt" / "ckpt_latest.pth.tar").exists()


@pytest.mark.slow  # the fast path kills collectors in test_worker_faults and test_replacement_seed
async def test_killed_collector_is_restarted(tmp_path):
    cfg = tiny_config(tmp_path / "run")
    cfg.max_env_step = 1500
    driver = asyncio.create_task(train_async(cfg, show_progress=False), name="driver")
    await wait_for_event(tmp_path / "run", lambda e: e["event"] == "collect")
    (victim,) = [p for p in mp.active_children() if p.name == "zeropipe-collector-0"]
    os.kill(victim.pid, signal.SIGKILL)
    restart = await wait_for_event(tmp_path / "run", lambda e: e["event"] == "restart")
    assert restart["worker"] == "collector-0"
    summary = await driver
    assert summary.stop_reason == "max_env_step"
    after = [
        e
        for e in events(tmp_path / "run")
        if e["event"] == "collect" and e["time_s"] > restart["time_s"]
    ]
    assert after, "the restarted collector never delivered"
