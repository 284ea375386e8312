"""Reclaiming the shared-memory blocks of snapshot publishers whose process is gone.

Runs in: driver (a new publisher reclaims before it creates its own blocks). A process killed with
SIGKILL cannot unlink its blocks; its pid, in every block name, tells that nobody will.
"""

from __future__ import annotations

import contextlib
import logging
import os

try:  # POSIX shared memory, the module SharedMemory itself uses.
    import _posixshmem as posixshmem
except ImportError:  # pragma: no cover - Windows
    posixshmem = None

logger = logging.getLogger("zeropipe.transport.snapshot")


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # it exists, under another user
        return True
    return True


def reclaim_stale_blocks(prefix: str = "zeropipe_", shm_dir: str = "/dev/shm") -> list[str]:
    """Unlinks the blocks of publishers whose process no longer exists.

    Args:
        prefix: The publishers' block-name prefix (names are ``f"{prefix}{pid}_{token}_{i}"``).
        shm_dir: Where POSIX shared memory is visible as files.

    Returns:
        The names of the blocks that were unlinked.
    """
    if posixshmem is None or not os.path.isdir(shm_dir):  # pragma: no cover - not POSIX
        return []
    reclaimed = []
    for name in os.listdir(shm_dir):
        if not name.startswith(prefix):
            continue
        pid_text = name[len(prefix) :].split("_", 1)[0]
        if not pid_text.isdigit() or _pid_alive(int(pid_text)):
            continue
        with contextlib.suppress(FileNotFoundError):  # another process reclaimed it first
            posixshmem.shm_unlink("/" + name)
            reclaimed.append(name)
    if reclaimed:
        logger.warning(
            "reclaimed %d shared-memory block(s) left by dead runs: %s",
            len(reclaimed),
            ", ".join(sorted(reclaimed)),
        )
    return reclaimed
