"""Workers die with their driver: a SIGKILLed async driver leaves no worker behind, even one
stuck in an env step that never returns, and no shared-memory block. Through the real CLI, on
both backends: a Ray actor needs no guard of ours (its raylet goes with a private Ray's driver,
and Ray's own worker code exits the actor without the interpreter), which the ray case pins."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.cli.test_cli import TINY, cli_env
from tests.envs.hang_env import HANG_DIR_VAR, HANG_ID
from tests.leaks import live_pids
from zeropipe.transport.stale_blocks import reclaim_stale_blocks

pytestmark = [pytest.mark.usefixtures("no_leaks"), pytest.mark.timeout(180)]

GONE_WITHIN_S = 20.0  # the parent-death signal is immediate; the watchdog looks every 0.5 s


def _living(group: int) -> list[int]:
    """Pids of the processes of process group `group` that are not zombies."""
    return live_pids("pgrp", group)


def _alive(pid: int) -> bool:
    """Whether process `pid` exists and is not a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _blocks_of(pid: int) -> set[str]:
    return {n for n in os.listdir("/dev/shm") if n.startswith(f"zeropipe_{pid}_")}


def _wait(condition, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)  # polling the process table, bounded by the deadline
    return True


@pytest.mark.parametrize("backend", ["process", "ray"])
def test_a_worker_hung_in_an_env_step_dies_with_its_sigkilled_driver(tmp_path: Path, backend):
    if backend == "ray":
        pytest.importorskip("ray")
    config = TINY.format(exp="run").replace(
        "env_id: zeropipe/Chain-v0",
        f"env_id: {HANG_ID}, register_envs: 'tests.envs.hang_env:register_envs'",
    )
    (tmp_path / "hang.yaml").write_text(config)
    hung = tmp_path / "hung"
    hung.mkdir()
    driver = subprocess.Popen(
        [sys.executable, "-m", "zeropipe", "train", "hang.yaml", "--quiet", "--async-pipeline",
         "--set", f"policy.async_pipeline.backend={backend}"],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**cli_env(), HANG_DIR_VAR: str(hung)},
        start_new_session=True,  # its own group: the test can find (and clean up) every child
    )  # fmt: skip
    try:
        assert _wait(lambda: any(hung.iterdir()) or driver.poll() is not None, 120)
        assert driver.poll() is None, driver.stderr.read() if driver.stderr else ""
        worker = int(next(hung.iterdir()).name)
        assert _alive(worker)  # a Ray actor is in a process group of its own
        driver.send_signal(signal.SIGKILL)  # the driver only, as an OOM kill picks one process
        driver.wait(30)
        if backend == "ray":  # Ray's own agents take up to ~90 s: the hung actor is ours
            assert _wait(lambda: not _alive(worker), GONE_WITHIN_S)
            return
        assert _wait(lambda: not _living(driver.pid), GONE_WITHIN_S), _living(driver.pid)
        assert _wait(lambda: not _blocks_of(driver.pid), GONE_WITHIN_S), _blocks_of(driver.pid)
    finally:
        for pid in _living(driver.pid):
            os.kill(pid, signal.SIGKILL)
        if driver.poll() is None:
            driver.kill()
        driver.communicate(timeout=30)
        reclaim_stale_blocks(prefix=f"zeropipe_{driver.pid}_")  # left where a check failed


# A parent that starts a spawned child whose only guard is the watchdog (no parent-death
# signal), prints the child's pid and exits at once, without waiting for it.
WATCHDOG_ONLY = """
import multiprocessing as mp, os, sys, time
from zeropipe.workers import parent_watch

def child():
    parent_watch._set_parent_death_signal = lambda: False
    parent_watch.die_with_parent(0.1)
    time.sleep(120)  # a hung step that releases the GIL

if __name__ == "__main__":
    proc = mp.get_context("spawn").Process(target=child)
    proc.start()
    time.sleep(2)  # the child has set up its watchdog
    print(proc.pid, flush=True)
    os._exit(0)
"""


def test_the_watchdog_alone_ends_a_worker_whose_parent_died(tmp_path: Path):
    script = tmp_path / "parent.py"
    script.write_text(WATCHDOG_ONLY)
    parent = subprocess.Popen(
        [sys.executable, str(script)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=cli_env(),
        start_new_session=True,  # its group outlives it: the test finds the child by it
    )
    try:
        child = int(parent.stdout.readline())  # the child inherits the pipe: no EOF to wait for
        assert parent.wait(30) == 0
        assert _wait(lambda: child not in _living(parent.pid), GONE_WITHIN_S)
    finally:
        for pid in _living(parent.pid):
            os.kill(pid, signal.SIGKILL)
        parent.communicate(timeout=30)
