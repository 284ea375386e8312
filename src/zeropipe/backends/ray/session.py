"""The driver's connection to Ray: join a cluster, or start a private Ray and stop it at the end.

Runs in: driver (``open`` and ``close`` block for seconds: the backend runs them on a thread).

- ``ray_address`` set (``auto``, ``HOST:PORT``, ``ray://HOST:PORT``): join that cluster and
  disconnect at the end; the cluster outlives the run, only the run's actors are removed.
- unset, or ``ray_local_mode``: start a private single-node Ray on this machine (``address=
  "local"``: never an existing cluster, whatever ``RAY_ADDRESS`` says) and shut it down at the
  end, so no Ray process that the run started outlives it. Its logical CPUs are exactly what the
  actors ask for, so they never wait for a core the machine does not have (they share the cores,
  as worker processes do); the dashboard is off.
- Ray already initialised in this process (an embedding application): use it, never shut it down.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import math
import os
import select
import signal
import time
from pathlib import Path
from typing import Any

from zeropipe.config import AsyncPipelineConfig

log = logging.getLogger("zeropipe.ray")

EXIT_GRACE_S = 10.0  # how long a private Ray's processes get to exit after ray.shutdown()
PR_SET_CHILD_SUBREAPER = 36  # linux/prctl.h


def actor_cpus(ap: AsyncPipelineConfig) -> int:
    """Logical CPUs all collector and evaluator actors ask for."""
    return (
        ap.num_collector_actors * ap.collector_num_cpus
        + ap.num_evaluator_actors * ap.evaluator_num_cpus
    )


class RaySession:
    """Ray for one run: opened before the actors start, closed after they stopped.

    Args:
        ap: the async pipeline settings (`ray_address`, `ray_local_mode`, resources).
    """

    def __init__(self, ap: AsyncPipelineConfig) -> None:
        self.ap = ap
        self.connected = False  # whether this run called ray.init (and so must disconnect)
        self.owned = False  # whether this run started Ray's processes (the private Ray)
        self.address = ""

    def open(self) -> None:
        """Connect to (or start) Ray. Blocking: call it on a thread."""
        import ray

        if ray.is_initialized():
            log.info("using the Ray this process already connected to")
            return
        kwargs: dict[str, Any] = {
            "include_dashboard": False,
            "configure_logging": False,  # leave the application's logging alone
            "log_to_driver": True,  # worker logs on the driver's console, as with processes
        }
        if self.ap.ray_local_mode:
            log.warning(
                "ray_local_mode: Ray %s has no local mode (ray.init(local_mode=True) is gone); "
                "running the actors in a private single-node Ray on this machine instead",
                ray.__version__,
            )
        if self.ap.ray_address:
            context = ray.init(address=self.ap.ray_address, **kwargs)
        else:
            gpus = self.ap.num_collector_actors * self.ap.collector_num_gpus
            gpus += self.ap.num_evaluator_actors * self.ap.evaluator_num_gpus
            # Ray's workers are the raylet's children; when it stops first they are orphaned, and
            # under an init that does not reap (containers) they stayed as zombies in the run's
            # process group. As a subreaper the driver inherits them and reaps them in close().
            _set_child_subreaper(True)
            context = ray.init(
                address="local",
                num_cpus=max(1, actor_cpus(self.ap)),
                num_gpus=math.ceil(gpus) if gpus else 0,
                resources=self._local_resources(),
                **kwargs,
            )
            self.owned = True
        self.connected = True
        self.address = str(context.address_info.get("gcs_address", ""))
        where = "joined" if not self.owned else "started a private"
        log.info("%s Ray at %s (driver pid %d)", where, self.address, os.getpid())

    def _local_resources(self) -> dict[str, float]:
        """Custom resources the actors ask for, offered by the private Ray so they can start."""
        needed: dict[str, float] = {}
        for count, resources in (
            (self.ap.num_collector_actors, self.ap.collector_resources),
            (self.ap.num_evaluator_actors, self.ap.evaluator_resources),
        ):
            for name, amount in resources.items():
                needed[name] = needed.get(name, 0.0) + count * amount
        return needed

    def close(self) -> None:
        """Disconnect, and stop the private Ray (idempotent). Blocking: call it on a thread.

        A joined cluster keeps running; Ray connected by the application is left alone.
        """
        if not self.connected:
            return
        import ray

        self.connected = False
        # ray.shutdown() stops a private Ray's raylet and GCS but returns while its worker
        # processes are still exiting (seen: an actor's process alive after the CLI exited).
        started = _ray_descendants() if self.owned else []
        ray.shutdown()  # a private Ray's processes stop; a joined cluster's do not
        _await_exit(started, EXIT_GRACE_S)
        if self.owned:
            _reap(started)
            _set_child_subreaper(False)
        log.info("stopped the private Ray" if self.owned else "left the Ray cluster")
        self.owned = False


def _ray_descendants() -> list[int]:
    """PIDs of this process's descendants that are Ray processes (Linux /proc; else [])."""
    parent_of: dict[int, int] = {}
    for entry in Path("/proc").glob("[0-9]*"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            parent_of[int(entry.name)] = int(
                (entry / "stat").read_text().rsplit(")", 1)[1].split()[1]
            )
    children: dict[int, list[int]] = {}
    for pid, ppid in parent_of.items():
        children.setdefault(ppid, []).append(pid)
    found, todo = [], list(children.get(os.getpid(), []))
    while todo:
        pid = todo.pop()
        todo.extend(children.get(pid, []))
        with contextlib.suppress(OSError):
            if b"ray" in Path(f"/proc/{pid}/cmdline").read_bytes():
                found.append(pid)
    return found


def _await_exit(pids: list[int], timeout_s: float) -> None:
    """Wait (on pidfds, no polling) up to `timeout_s` for `pids` to exit; SIGKILL the rest."""
    waiting: dict[int, int] = {}  # pidfd -> pid
    for pid in pids:
        with contextlib.suppress(OSError):  # already gone
            waiting[os.pidfd_open(pid)] = pid
    deadline = time.monotonic() + timeout_s
    try:
        while waiting and (left := deadline - time.monotonic()) > 0:
            ready, _, _ = select.select(list(waiting), [], [], left)
            for fd in ready:
                os.close(fd)
                waiting.pop(fd)
        for pid in waiting.values():
            log.warning("Ray process %d did not exit after shutdown; killing it", pid)
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
    finally:
        for fd in waiting:
            os.close(fd)


def _reap(pids: list[int]) -> None:
    """Collect the exit status of those of `pids` that are (by now) this process's children."""
    for pid in pids:
        with contextlib.suppress(ChildProcessError, OSError):
            os.waitpid(pid, 0)  # exited or SIGKILLed by now: returns at once


def _set_child_subreaper(on: bool) -> None:
    """Make this process the reaper of its orphaned descendants (Linux; a no-op elsewhere)."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, int(on), 0, 0, 0)
