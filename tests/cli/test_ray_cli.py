"""The real CLI on the `ray` backend: Ctrl-C stops the actors, writes the final checkpoint, exits
130, and leaves no Ray process that the run started."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import pytest

from tests.cli.test_cli import TINY
from tests.cli.test_run_recovery import start, wait_for

pytest.importorskip("ray", reason="the ray extra is not installed")


@pytest.mark.slow  # the fast path: test_cli's Ctrl-C on the process backend, a short Ray run
@pytest.mark.timeout(300)
@pytest.mark.usefixtures("no_ray_leaks")
def test_ctrl_c_on_the_ray_backend_shuts_down_cleanly(tmp_path: Path):
    config = tmp_path / "tiny.yaml"
    config.write_text(TINY.format(exp="run").replace("max_env_step: 240", "max_env_step: 1000000"))
    run = tmp_path / "run"
    proc = start(
        tmp_path,
        "--async-pipeline",
        "--set",
        "policy.async_pipeline.backend=ray",
        "--set",
        "policy.async_pipeline.shutdown_timeout_s=10",
    )
    wait_for(proc, run, lambda event: event["event"] == "train")
    os.killpg(proc.pid, signal.SIGINT)  # what a terminal's Ctrl-C sends: the whole group
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert (run / "ckpt" / "ckpt_latest.pth.tar").exists()
    log = [json.loads(line) for line in (run / "log" / "metrics.jsonl").read_text().splitlines()]
    assert log[-1]["event"] == "stop" and log[-1]["reason"] == "cancelled"
    assert log[-2]["event"] == "checkpoint" and log[-2]["reason"] == "stop"
    left = subprocess.run(
        ["ps", "-o", "pid,stat,args", "-g", str(proc.pid)], capture_output=True, text=True
    )
    # nothing alive of the run's own process group either: an exited Ray worker whose parent
    # has not reaped it yet (state Z, seen on a loaded machine) holds no resource but its pid
    alive = [row for row in left.stdout.splitlines()[1:] if row.split()[1][0] != "Z"]
    assert not alive, left.stdout
