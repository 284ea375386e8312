"""One owner per run directory: an OS lock on `<run>/.zeropipe.lock`, held for the life of a run.

Runs in: driver. `RunDir` takes the lock when it opens a run directory (a new run or a resume, in
either pipeline) and lets it go when it closes. The lock is `flock(2)`: the kernel releases it
when the holder's last descriptor closes, so a run killed by SIGKILL (or the OOM killer) leaves a
lock file that the next run simply takes over, with no stale-pid guessing. The file holds the
holder's pid, read only to name it in the refusal. The descriptor is close-on-exec and workers are
spawned (not forked), so no worker keeps a dead driver's lock.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path

from zeropipe.outputs.errors import RunDirLocked

LOCK_NAME = ".zeropipe.lock"


class RunLock:
    """The held lock of one run directory (see the module docstring).

    Args:
        fd: the open lock file, flock-ed exclusively.
    """

    def __init__(self, fd: int) -> None:
        self.fd: int | None = fd

    @classmethod
    def acquire(cls, root: Path) -> RunLock:
        """Lock `root` (an existing directory) for this process and write its pid.

        Raises:
            RunDirLocked: another live process holds it (its pid named).
        """
        fd = os.open(root / LOCK_NAME, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _pid_in(fd)
            os.close(fd)
            raise RunDirLocked(_message(root, holder)) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        return cls(fd)

    def release(self) -> None:
        """Let the lock go (the file stays: removing it would race with the next owner)."""
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def check_unlocked(root: Path) -> None:
    """Fail early if a live process holds `root`, without changing anything there.

    Raises:
        RunDirLocked: another live process holds it (its pid named).
    """
    try:
        fd = os.open(root / LOCK_NAME, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return  # no lock file (or no directory): nobody holds it
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)  # released by the close below
    except BlockingIOError:
        raise RunDirLocked(_message(root, _pid_in(fd))) from None
    finally:
        os.close(fd)


def _pid_in(fd: int) -> str:
    with contextlib.suppress(OSError, ValueError):
        return str(int(os.pread(fd, 32, 0).decode().strip()))
    return "unknown"  # the holder had locked but not yet written its pid


def _message(root: Path, pid: str) -> str:
    return (
        f"run directory {root} is in use by another zeropipe process (pid {pid}); wait for it "
        "to end or stop it, or choose another directory with --set exp_name=DIR"
    )
