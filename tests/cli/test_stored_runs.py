"""Runs written by earlier releases, stored: 0.1.0's (no config_version, numpy arrays pickled in
its checkpoints, a buffer state without the masks' width) and the current format's. Each one,
copied elsewhere, resumes through the real CLI where it stopped and trains on, and its best
checkpoint evaluates: a format change that breaks an older run's files fails here."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from tests.cli.test_cli import run_cli
from tests.runlog import events
from zeropipe.config.versions import CONFIG_VERSION

pytestmark = [pytest.mark.usefixtures("no_leaks"), pytest.mark.timeout(300)]

STORED = Path(__file__).parent / "fixtures" / "stored_runs"
# (run, its config_version, env step and train_iter of its ckpt_latest)
RUNS = [("v0_1_cartpole_muzero", 1, 204, 46), ("v2_cartpole_muzero", 2, 214, 49)]


@pytest.mark.parametrize(("name", "version", "envstep", "train_iter"), RUNS)
def test_a_stored_run_resumes_where_it_stopped(tmp_path, name, version, envstep, train_iter):
    run = tmp_path / "copied"
    shutil.copytree(STORED / name, run)
    assert yaml.safe_load((run / "config.yaml").read_text()).get("config_version", 1) == version
    proc = run_cli(
        "train", "copied", "--resume", "--quiet", "--set", "max_env_step=300", cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr
    resumed = [e for e in events(run) if e["event"] == "resume"]
    assert [(e["envstep"], e["train_iter"]) for e in resumed] == [(envstep, train_iter)]
    stop = [e for e in events(run) if e["event"] == "stop"][-1]
    assert stop["envstep"] >= 300 and stop["train_iter"] > train_iter
    assert yaml.safe_load((run / "config.yaml").read_text())["config_version"] == CONFIG_VERSION


@pytest.mark.parametrize(("name", "version", "envstep", "train_iter"), RUNS)
def test_a_stored_runs_best_checkpoint_evaluates(tmp_path, name, version, envstep, train_iter):
    run = tmp_path / "copied"
    shutil.copytree(STORED / name, run)
    proc = run_cli("eval", "copied", "--episodes", "1", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    first = proc.stdout.splitlines()[0]
    assert first.startswith("episodes 1  mean ") and "recorded at save time: mean " in first
