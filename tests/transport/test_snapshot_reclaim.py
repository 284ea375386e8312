"""Blocks of a publisher killed with its whole process group are reclaimed at the next start."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from zeropipe.transport import ParamLayout, SnapshotPublisher
from zeropipe.transport.stale_blocks import reclaim_stale_blocks

pytestmark = [pytest.mark.timeout(60), pytest.mark.usefixtures("no_leaks")]

PUBLISHER = textwrap.dedent(
    """
    import sys, numpy as np
    from zeropipe.transport import ParamLayout, SnapshotPublisher
    params = {"w": np.ones((64, 64), np.float32)}
    publisher = SnapshotPublisher(ParamLayout.from_state_dict(params))
    publisher.acquire(publisher.publish(1, params))
    publisher.publish(2, params)
    print(" ".join(publisher.block_names), flush=True)
    sys.stdin.read()  # hold the blocks until killed
    """
)


def test_blocks_of_a_sigkilled_publisher_are_reclaimed_at_the_next_start():
    proc = subprocess.Popen(
        [sys.executable, "-c", PUBLISHER],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own group, with its resource tracker, as a CLI driver
    )
    names = proc.stdout.readline().split()
    assert len(names) == 2 and all(n.startswith(f"zeropipe_{proc.pid}_") for n in names)
    os.killpg(proc.pid, signal.SIGKILL)  # what an OOM kill of the group does: nothing runs
    proc.communicate(timeout=30)
    assert set(names) <= set(os.listdir("/dev/shm"))  # leaked until someone reclaims them
    params = {"b": np.zeros(3, np.float32)}
    with SnapshotPublisher(ParamLayout.from_state_dict(params)):  # the next run's start
        assert not set(names) & set(os.listdir("/dev/shm"))


def test_blocks_of_live_processes_and_foreign_names_are_left_alone(tmp_path):
    shm_dir = tmp_path / "shm"
    shm_dir.mkdir()
    for name in (f"zeropipe_{os.getpid()}_ab_0", "zeropipe_bench_x", "other_1_x"):
        (shm_dir / name).touch()
    assert reclaim_stale_blocks(shm_dir=str(shm_dir)) == []
