"""`zeropipe train --status HOST:PORT` through the real CLI: the endpoint and its refusals."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.cli.test_cli import TINY, run_cli


@pytest.mark.timeout(240)
@pytest.mark.usefixtures("no_leaks")
def test_status_endpoint_serves_a_cli_run(tmp_path: Path):
    config = tmp_path / "tiny.yaml"
    config.write_text(TINY.format(exp="run").replace("max_env_step: 240", "max_env_step: 600"))
    cmd = [sys.executable, "-m", "zeropipe", "train", str(config), "--async-pipeline", "--quiet"]
    proc = subprocess.Popen(
        [*cmd, "--status", "127.0.0.1:0"],
        cwd=tmp_path,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = proc.stderr.readline()  # printed before the run starts (blocks until then)
        assert line.startswith("status endpoint: http://127.0.0.1:"), line
        base = line.split()[2].removesuffix("/metrics")
        with urllib.request.urlopen(base + "/metrics", timeout=30) as resp:
            families = {f.name for f in text_string_to_metric_families(resp.read().decode())}
        # counters as counters, and the eval gauges there from the start (NaN until an eval)
        expected = {"zeropipe_envsteps", "zeropipe_learner_steps", "zeropipe_restarts"}
        expected |= {"zeropipe_eval_reward_mean_last", "zeropipe_run_info", "zeropipe_loss"}
        assert expected <= families
        with urllib.request.urlopen(base + "/status", timeout=30) as resp:
            status = json.loads(resp.read())
        assert status["running"] is True
        _, err = proc.communicate(timeout=200)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    log = [json.loads(x) for x in (tmp_path / "run/log/metrics.jsonl").read_text().splitlines()]
    # The status showed the newest record at the time of the scrape (or none yet).
    pairs = {(r["envstep"], r["train_iter"]) for r in log} | {(0, 0)}
    assert (status["envstep"], status["train_iter"]) in pairs


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--status", "127.0.0.1:0"], "--async-pipeline"),  # the sync loop serves none
        (["--async-pipeline", "--status", "127.0.0.1:99999"], "HOST:PORT"),
        (["--async-pipeline", "--status", "localhost:x"], "HOST:PORT"),
    ],
)
def test_bad_status_requests_fail_before_writing(tmp_path: Path, args: list[str], needle: str):
    config = tmp_path / "tiny.yaml"
    config.write_text(TINY.format(exp="run"))
    proc = run_cli("train", str(config), *args, cwd=tmp_path)
    assert proc.returncode == 2 and needle in proc.stderr, proc.stderr
    assert not (tmp_path / "run").exists()
