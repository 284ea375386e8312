"""What a test may leave behind: zeropipe shared-memory blocks in /dev/shm."""

from __future__ import annotations

import os


def shm_blocks() -> set[str]:
    """Names of zeropipe shared-memory blocks currently in /dev/shm."""
    return {name for name in os.listdir("/dev/shm") if name.startswith("zeropipe_")}
