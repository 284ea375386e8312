"""A worker process dies with its driver, even inside an env step that never returns.

Runs in: collector | evaluator (`die_with_parent`, first thing in `process.worker_main`).

A worker notices a driver that exits between requests (the pipe closes: `DriverGone`), but not
one that is SIGKILLed while the worker is busy: a slow env step keeps the worker (and, through
the multiprocessing resource tracker it shares with the driver, the driver's shared-memory
blocks) alive until the step ends, and a hung step keeps them forever. Two guards:

- Linux: the parent-death signal (`prctl(PR_SET_PDEATHSIG, SIGKILL)`), delivered by the kernel
  when the thread that started the worker ends; the driver starts its workers from its event
  loop's thread, which lives as long as the driver. SIGKILL, because a step hung in native code
  never returns to the interpreter to run a handler.
- Everywhere: a daemon thread that checks every `WATCH_INTERVAL_S` whether the worker still has
  its parent (a dead parent's children are handed to another process, so `getppid()` changes),
  and kills the worker when it has not. It needs the GIL, which a Python step releases between
  bytecodes.

The worker owns nothing that needs an orderly exit: it only maps the driver's blocks (the
driver's resource tracker unlinks them once every process holding them is gone).
"""

from __future__ import annotations

import ctypes
import logging
import multiprocessing
import os
import signal
import sys
import threading
import time

log = logging.getLogger("zeropipe.worker")

WATCH_INTERVAL_S = 0.5  # how long a worker may outlive its driver where no signal comes
_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def die_with_parent(interval_s: float = WATCH_INTERVAL_S) -> int:
    """Make this process exit when its parent dies: the parent-death signal where Linux has it,
    and a watchdog thread everywhere.

    Args:
        interval_s: how often the watchdog looks at the parent.

    Returns:
        The parent's pid being watched.
    """
    parent = multiprocessing.parent_process()
    parent_pid = parent.pid if parent is not None and parent.pid else os.getppid()
    _set_parent_death_signal()
    if os.getppid() != parent_pid:  # the parent died before the signal was set
        _die(parent_pid)
    watchdog = threading.Thread(
        target=_watch_loop, args=(parent_pid, interval_s), name="parent-watch", daemon=True
    )
    watchdog.start()
    return parent_pid


def _set_parent_death_signal() -> bool:
    """SIGKILL when the parent ends (Linux); False where the platform has no such signal."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) == 0
    except (OSError, AttributeError):  # no libc prctl: the watchdog alone
        return False


def _watch_loop(parent_pid: int, interval_s: float) -> None:
    while os.getppid() == parent_pid:
        time.sleep(interval_s)  # a watchdog: nothing to wait on that fires on a parent's death
    _die(parent_pid)


def _die(parent_pid: int) -> None:
    log.warning("the driver (pid %d) is gone; worker pid %d exits", parent_pid, os.getpid())
    os.kill(os.getpid(), signal.SIGKILL)
