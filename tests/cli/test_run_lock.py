"""One owner per run directory, through the real CLI: a second writer is refused naming the
holder's pid (exit 2), and a lock left by a SIGKILLed process is taken over."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.test_cli import TINY, run_cli

pytestmark = pytest.mark.usefixtures("no_leaks")

# Holds the run directory's lock as a live zeropipe run does (outputs/run_lock.py's protocol:
# flock on <run>/.zeropipe.lock holding the pid) until its stdin closes or it is killed.
HOLDER = """
import fcntl, os, sys
root = sys.argv[1]
os.makedirs(root, exist_ok=True)
fd = os.open(os.path.join(root, ".zeropipe.lock"), os.O_RDWR | os.O_CREAT, 0o644)
fcntl.flock(fd, fcntl.LOCK_EX)
os.ftruncate(fd, 0)
os.write(fd, f"{os.getpid()}\\n".encode())
print("held", flush=True)
sys.stdin.read()
"""


def hold(run: Path) -> subprocess.Popen:
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(run)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdout.readline() == "held\n"
    return proc


def kill(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGKILL)  # the kernel releases its flock, the file stays
    proc.communicate(timeout=30)


def refusal(proc: subprocess.CompletedProcess) -> str:
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2, proc.stderr
    assert len(lines) == 1, proc.stderr
    return lines[0]


@pytest.mark.timeout(300)
def test_a_second_writer_is_refused_naming_the_holder_and_a_killed_ones_lock_is_taken_over(
    tmp_path: Path,
):
    (tmp_path / "tiny.yaml").write_text(TINY.format(exp="run"))
    run = tmp_path / "run"
    holder = hold(run)
    try:
        line = refusal(run_cli("train", "tiny.yaml", "--quiet", cwd=tmp_path))
        assert f"pid {holder.pid}" in line and "in use" in line
        assert sorted(p.name for p in run.iterdir()) == [".zeropipe.lock"]  # nothing written
    finally:
        kill(holder)
    assert (run / ".zeropipe.lock").read_text() == f"{holder.pid}\n"  # a stale lock file
    first = run_cli("train", "tiny.yaml", "--quiet", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    assert (run / ".zeropipe.lock").read_text() != f"{holder.pid}\n"
    before = (run / "log" / "metrics.jsonl").read_bytes()
    holder = hold(run)
    try:
        resume = run_cli("train", "run", "--quiet", "--resume", cwd=tmp_path)
        line = refusal(resume)
        assert f"pid {holder.pid}" in line
        assert (run / "log" / "metrics.jsonl").read_bytes() == before
    finally:
        kill(holder)
    assert not os.path.exists(f"/proc/{holder.pid}")
