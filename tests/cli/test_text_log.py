"""`log/train.log` through the real CLI: each process's records open with a `start:` line (what
runs) and close with a `stop:` line (where, and why it stopped)."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.cli.test_cli import TINY, _metrics_has, cli_env, default_sigint, run_cli
from tests.leaks import shm_blocks

STAMP = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} zeropipe.driver INFO: "


def records(run: Path) -> list[str]:
    """train.log's records, their time stamps checked and cut off."""
    lines = (run / "log" / "train.log").read_text().splitlines()
    assert all(re.match(STAMP, line) for line in lines if "zeropipe." in line[:40]), lines
    return [re.sub(STAMP, "", line) for line in lines if re.match(STAMP, line)]


@pytest.mark.timeout(300)
def test_a_run_and_its_resume_each_log_a_start_and_a_stop_line(tmp_path: Path):
    config = tmp_path / "tiny.yaml"
    config.write_text(TINY.format(exp="run").replace("max_env_step: 240", "max_env_step: 40"))
    assert run_cli("train", str(config), "--quiet", cwd=tmp_path).returncode == 0
    proc = run_cli("train", "run", "--resume", "--set", "max_env_step=80", "--quiet", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    lines = records(tmp_path / "run")
    starts = [i for i, line in enumerate(lines) if line.startswith("start: ")]
    stops = [i for i, line in enumerate(lines) if line.startswith("stop: ")]
    assert starts == [0, stops[0] + 1] and stops[1] == len(lines) - 1, lines
    assert lines[0].startswith(
        "start: new run run: policy.type muzero on zeropipe/Chain-v0, sync pipeline, seed 0; "
        "stops at max_env_step 40, max_train_iter 10000000 or stop_value 1000 (pid "
    ), lines[0]
    assert lines[starts[1]].startswith("start: resuming run run: "), lines
    assert "max_env_step 80," in lines[starts[1]]
    for stop, limit in zip(stops, (40, 80), strict=True):
        assert lines[stop].startswith("stop: max_env_step at env step "), lines[stop]
        assert lines[stop].endswith(f"s: it reached max_env_step {limit}"), lines[stop]


@pytest.mark.timeout(300)
def test_a_terminated_run_logs_why_it_stopped(tmp_path: Path):
    shm_before = shm_blocks()
    config = tmp_path / "tiny.yaml"
    config.write_text(TINY.format(exp="run").replace("max_env_step: 240", "max_env_step: 1000000"))
    proc = subprocess.Popen(
        [sys.executable, "-m", "zeropipe", "train", str(config), "--quiet"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=default_sigint,
        env=cli_env(),
    )
    deadline = time.monotonic() + 180
    while not _metrics_has(tmp_path / "run", "train"):
        assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read()
        time.sleep(0.1)  # polling a file for a condition, bounded by the deadline
    proc.send_signal(signal.SIGTERM)
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, err
    last = records(tmp_path / "run")[-1]
    assert last.startswith("stop: interrupted at env step "), last
    assert last.endswith("s: interrupted (Ctrl-C or SIGTERM); resume it with train --resume"), last
    assert shm_blocks() - shm_before == set()
