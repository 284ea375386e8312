"""Fixtures shared by all tests: leak checks for tests that spawn processes or map shared memory."""

from __future__ import annotations

import multiprocessing as mp
from collections.abc import Iterator

import pytest

from tests.leaks import shm_blocks


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
