"""Worker faults in the async pipeline: failed sends, dead or hung workers, restarts, seeds."""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing as mp
import os
import signal
from pathlib import Path

import pytest

from tests.runlog import events, wait_for_event
from tests.tiny import tiny_config
from zeropipe.backends.base import RestartWindow, spawn_seed
from zeropipe.backends.process import driver as supervisor
from zeropipe.pipeline.async_driver import train_async
from zeropipe.pipeline.run_state import RunSummary
from zeropipe.transport import CollectRequest, DriverEndpoint, EvalRequest, WorkerGone

pytestmark = [pytest.mark.timeout(240), pytest.mark.usefixtures("no_leaks")]


async def replacement_collected(run, restart: dict, worker: str = "collector-0") -> dict:
    """Wait for the first collect of `worker`'s replacement (after the `restart` record)."""
    return await wait_for_event(
        run,
        lambda e: (
            e["event"] == "collect" and e["worker"] == worker and e["time_s"] > restart["time_s"]
        ),
    )


def worker_pid(name: str) -> int:
    (process,) = [p for p in mp.active_children() if p.name == f"zeropipe-{name}"]
    return process.pid


def patch_eval_send(monkeypatch, action, kind=EvalRequest) -> list:
    """Wrap DriverEndpoint.send: `action(endpoint, request, n)` runs for the n-th request of
    `kind` (eval requests unless told)."""
    real_send = DriverEndpoint.send
    sent: list = []

    async def send(self, msg):
        if isinstance(msg, kind):
            sent.append(msg)
            return await action(self, msg, len(sent), real_send)
        return await real_send(self, msg)

    monkeypatch.setattr(DriverEndpoint, "send", send)
    return sent


async def test_a_failed_eval_send_neither_hangs_nor_skips_the_final_eval(tmp_path, monkeypatch):
    async def fail_first(endpoint, msg, n, real_send):
        if n == 1:
            raise WorkerGone(endpoint.worker_name, "injected send failure")
        return await real_send(endpoint, msg)

    patch_eval_send(monkeypatch, fail_first)
    cfg = tiny_config(tmp_path / "run", eval_freq=8)
    cfg.max_env_step = 96
    async with asyncio.timeout(180):  # before the fix: the lost eval stayed pending forever
        summary = await train_async(cfg, show_progress=False)
    assert summary.stop_reason == "max_env_step"
    log = events(tmp_path / "run")
    assert [e["worker"] for e in log if e["event"] == "restart"] == ["evaluator-0"]
    evals = [e for e in log if e["event"] == "eval"]
    assert evals and evals[-1]["policy_version"] == summary.train_iter


async def test_an_evaluator_killed_during_the_final_eval_is_replaced_and_it_runs(
    tmp_path, monkeypatch
):
    async def kill_second(endpoint, msg, n, real_send):
        await real_send(endpoint, msg)
        if n == 2:  # eval_at_start is the 1st; the final eval of the last weights is the 2nd
            os.kill(worker_pid(endpoint.worker_name), signal.SIGKILL)

    patch_eval_send(monkeypatch, kill_second)
    cfg = tiny_config(tmp_path / "run", eval_freq=10**6, async_pipeline={"eval_at_start": True})
    cfg.max_env_step = 64
    async with asyncio.timeout(180):
        summary = await train_async(cfg, show_progress=False)
    log = events(tmp_path / "run")
    assert [e["worker"] for e in log if e["event"] == "restart"] == ["evaluator-0"]
    evals = [e["policy_version"] for e in log if e["event"] == "eval"]
    assert evals == [0, summary.train_iter]  # before the fix the final eval was skipped


# Test-sized deadlines: a warm tiny collect takes well under a second; 5 s and 3 × the longest
# recent one leave a loaded machine room, while the stopped collector is noticed within seconds.
HUNG_DEADLINES = {"min_request_deadline_s": 5.0, "request_deadline_factor": 3.0}


async def run_with_a_stopped_worker(monkeypatch, cfg, kind) -> tuple[RunSummary, list, dict]:
    """Run `cfg`; the worker sent the second request of `kind` is SIGSTOPped right after it (so
    one request of its role was measured). The run must stop by its rule with that worker
    replaced once, as hung. Returns the summary, the run's events and the restart event. The
    stopped process is SIGKILLed at the end, whatever happened (no_leaks)."""
    stopped: list[tuple[str, int]] = []

    async def stop_second(endpoint, msg, n, real_send):
        await real_send(endpoint, msg)
        if n == 2:
            stopped.append((endpoint.worker_name, worker_pid(endpoint.worker_name)))
            os.kill(stopped[-1][1], signal.SIGSTOP)

    patch_eval_send(monkeypatch, stop_second, kind=kind)
    try:
        async with asyncio.timeout(120):
            summary = await train_async(cfg, show_progress=False)
    finally:
        for _name, pid in stopped:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    assert summary.stop_reason == "max_env_step"
    log = events(Path(cfg.exp_name))
    (restart,) = [e for e in log if e["event"] == "restart"]
    ((name, _pid),) = stopped
    assert restart["worker"] == name and restart["cause"] == "hung"
    assert restart["error"].startswith(f"{name} hung: request ")
    return summary, log, restart


async def test_a_stopped_collector_is_replaced_as_hung_and_the_run_stops_by_its_rule(
    tmp_path, monkeypatch
):
    # Also a killed worker slow to exit: on a starved machine a SIGKILLed worker can take longer
    # than the join's bound to exit; the replacement used to close() it while alive (ValueError:
    # the run died). Bound 0: the killed worker has not exited at the check, it is reaped at the
    # end (no_leaks checks that). The bounded join itself runs in the evaluator's test below.
    monkeypatch.setattr(supervisor, "KILL_JOIN_S", 0.0)
    cfg = tiny_config(tmp_path / "run", eval_freq=10**6, async_pipeline=HUNG_DEADLINES)
    cfg.max_env_step = 96
    _summary, log, restart = await run_with_a_stopped_worker(monkeypatch, cfg, CollectRequest)
    assert restart["worker"] == "collector-0"
    collects = [e for e in log if e["event"] == "collect"]
    assert any(e["time_s"] > restart["time_s"] for e in collects)  # the replacement collected


async def test_a_stopped_evaluator_is_replaced_as_hung_and_its_eval_runs_again(
    tmp_path, monkeypatch
):
    async_pipeline = {"eval_at_start": True, **HUNG_DEADLINES}
    cfg = tiny_config(tmp_path / "run", eval_freq=10**6, async_pipeline=async_pipeline)
    cfg.max_env_step = 64
    summary, log, restart = await run_with_a_stopped_worker(monkeypatch, cfg, EvalRequest)
    assert restart["worker"] == "evaluator-0"
    evals = [e["policy_version"] for e in log if e["event"] == "eval"]
    assert evals == [0, summary.train_iter]  # the lost final eval re-opened the gate and ran


async def test_a_restart_does_not_block_training(tmp_path, monkeypatch):
    """While collector-0's replacement is held in its handshake, the learner keeps training."""
    gate = asyncio.Event()
    real_hello = DriverEndpoint.expect_hello

    async def held_hello(self, timeout=None):
        if self.worker_name == "collector-0" and restarted:
            await gate.wait()
        return await real_hello(self, timeout)

    restarted = False
    monkeypatch.setattr(DriverEndpoint, "expect_hello", held_hello)
    run = tmp_path / "run"
    cfg = tiny_config(run, async_pipeline={"num_collector_actors": 2})
    cfg.max_env_step = 10**6
    driver = asyncio.create_task(train_async(cfg, show_progress=False), name="driver")
    try:
        await wait_for_event(run, lambda e: e["event"] == "train" and e["train_iter"] >= 4)
        restarted = True
        os.kill(worker_pid("collector-0"), signal.SIGKILL)
        restart = await wait_for_event(run, lambda e: e["event"] == "restart", timeout_s=60)
        assert restart["worker"] == "collector-0" and restart["generation"] == 1
        assert restart["seed"] == spawn_seed(cfg.seed, "collector", 0, 1) != cfg.seed
        await wait_for_event(  # learning goes on while the replacement is held
            run, lambda e: e["event"] == "train" and e["train_iter"] >= restart["train_iter"] + 8
        )
        gate.set()
        await replacement_collected(run, restart)  # then the replacement joins in
    finally:
        gate.set()
        driver.cancel()
        with pytest.raises(asyncio.CancelledError):
            await driver


def test_restarts_are_limited_per_time_window():
    now = [0.0]
    window = RestartWindow(max_restarts=3, window_s=100.0, clock=lambda: now[0])
    assert [window.allow() for _ in range(3)] == [True, True, True]
    assert not window.allow()  # a 4th death within the window ends the run
    now[0] = 99.0
    assert not window.allow()
    now[0] = 100.0  # the first three restarts left the window
    assert [window.allow() for _ in range(3)] == [True, True, True]
    assert not window.allow()
    for day in range(1, 30):  # a month of one unrelated crash a day is fine
        now[0] = 86_400.0 * day
        assert window.allow()


def test_every_spawn_gets_its_own_seed():
    seeds = {
        (role, worker, gen): spawn_seed(7, role, worker, gen)
        for role in ("collector", "evaluator")
        for worker in range(3)
        for gen in range(4)
    }
    assert all(seed == 7 for (_r, _w, gen), seed in seeds.items() if gen == 0)  # as sync
    replacements = [seed for (_r, _w, gen), seed in seeds.items() if gen > 0]
    assert len(set(replacements)) == len(replacements) and 7 not in replacements
    assert spawn_seed(8, "collector", 0, 1) != spawn_seed(7, "collector", 0, 1)


async def test_training_starts_before_the_evaluator_has_started(tmp_path, monkeypatch):
    """The run waits for its collectors' handshakes only: while evaluator-0's hello is held, the
    learner trains past the first eval's point; released, the evaluator scores the due eval."""
    gate = asyncio.Event()
    real_hello = DriverEndpoint.expect_hello

    async def held_hello(self, timeout=None):
        if self.worker_name == "evaluator-0":
            await gate.wait()
        return await real_hello(self, timeout)

    monkeypatch.setattr(DriverEndpoint, "expect_hello", held_hello)
    run = tmp_path / "run"
    cfg = tiny_config(run)
    cfg.max_env_step = 10**6
    driver = asyncio.create_task(train_async(cfg, show_progress=False), name="driver")
    try:
        due = cfg.policy.eval_freq
        await wait_for_event(run, lambda e: e["event"] == "train" and e["train_iter"] > due)
        assert not [e for e in events(run) if e["event"] == "eval"]
        gate.set()
        scored = await wait_for_event(run, lambda e: e["event"] == "eval", timeout_s=60)
        assert scored["policy_version"] == due  # the version that was due, not a later one
    finally:
        gate.set()
        driver.cancel()
        with pytest.raises(asyncio.CancelledError):
            await driver
