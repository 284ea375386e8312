"""What a test may leave behind: zeropipe shared-memory blocks in /dev/shm."""

from __future__ import annotations

import os


def shm_blocks() -> set[str]:
    """Names of zeropipe shared-memory blocks currently in /dev/shm that this test could own.

    A block's name encodes its creator's pid (`zeropipe_<pid>_...`). Blocks of a live process
    that is neither this one nor one of its descendants belong to someone else (another test
    session on a shared machine) and are not counted; blocks of a dead creator are.
    """
    return {
        name
        for name in os.listdir("/dev/shm")
        if name.startswith("zeropipe_") and not _foreign(name)
    }


def _foreign(name: str) -> bool:
    pid_text = name[len("zeropipe_") :].split("_", 1)[0]
    if not pid_text.isdigit():
        return False
    pid = int(pid_text)
    if pid == os.getpid() or not os.path.exists(f"/proc/{pid}"):
        return False
    return not _descends_from_us(pid)


def _descends_from_us(pid: int) -> bool:
    me = os.getpid()
    while pid > 1:
        try:
            with open(f"/proc/{pid}/stat") as f:
                stat = f.read()
        except OSError:
            return False
        pid = int(stat.rsplit(")", 1)[1].split()[1])  # field 4: ppid (after the comm field)
        if pid == me:
            return True
    return False


def ray_processes() -> set[int]:
    """Pids of live Ray processes on this machine (raylet, GCS, Ray workers and actors, agents).

    Ray starts its processes in their own sessions, so a process-group check does not see them;
    tests compare this set before and after a run instead (other sessions on a shared machine
    do not run Ray).
    """
    pids = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read().replace(b"\0", b" ")
            with open(f"/proc/{entry}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state == "Z":
            continue  # exited, waiting to be reaped by its parent
        if cmdline.startswith(b"ray::") or b"/site-packages/ray/" in cmdline:
            pids.add(int(entry))
    return pids


_STAT_FIELDS = {"pgrp": 2, "session": 3}  # of /proc/PID/stat after the command name


def live_pids(field: str, value: int) -> list[int]:
    """Pids of the processes that are not zombies and whose `field` ("pgrp" or "session") is
    `value`."""
    index = _STAT_FIELDS[field]
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:  # gone meanwhile
            continue
        fields = stat.rsplit(")", 1)[1].split()  # state, ppid, pgrp, session, ...
        if fields[0] != "Z" and int(fields[index]) == value:
            pids.append(int(entry))
    return pids
