"""Fixtures for pipeline tests: leak checks."""

from __future__ import annotations

import multiprocessing as mp
import os

import pytest


def shm_blocks() -> set[str]:
    """zeropipe shared-memory blocks currently in /dev/shm."""
    return {name for name in os.listdir("/dev/shm") if name.startswith("zeropipe_")}


@pytest.fixture
def no_leaks():
    """Assert that a test leaves no child process and no new zeropipe block behind."""
    before = shm_blocks()
    yield
    for child in mp.active_children():
        child.join(timeout=5)
    assert not mp.active_children(), f"processes left: {mp.active_children()}"
    assert shm_blocks() - before == set()
