"""Fixtures shared by all tests: leak checks for tests that spawn processes or map shared memory."""

from __future__ import annotations

import multiprocessing as mp
import time
from collections.abc import Iterator

import pytest

from tests.leaks import ray_processes, shm_blocks


@pytest.fixture
def no_leaks() -> Iterator[None]:
    """Fail a test that leaves a child process alive or a new zeropipe block in /dev/shm."""
    before = shm_blocks()
    yield
    alive = mp.active_children()
    for proc in alive:
        proc.kill()
        proc.join(5)
    assert not alive, f"child processes left running: {alive}"
    assert not shm_blocks() - before, f"shared-memory blocks leaked: {shm_blocks() - before}"


@pytest.fixture
def no_ray_leaks() -> Iterator[set[int]]:
    """Fail a test that leaves a Ray process running (raylet, GCS, a worker or actor).

    Ray's processes exit shortly after `ray.shutdown()` returns, so the check waits for them up to
    a hard deadline. Yields the pids that were running before the test.
    """
    before = ray_processes()
    yield before
    deadline = time.monotonic() + 30
    while (left := ray_processes() - before) and time.monotonic() < deadline:
        time.sleep(0.2)  # polling for processes to exit, bounded by the deadline
    assert not left, f"Ray processes left running: {sorted(left)}"
