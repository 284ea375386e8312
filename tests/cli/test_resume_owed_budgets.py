"""The learner steps a run still owes when it stops are in its checkpoint, and the resumed run
trains them: an async run's budget queue (collected ahead of the learner), or a budget cut by a
Ctrl-C. Through the real CLI; the owed budgets are written into a finished run's checkpoint, so
the count is known (a real interrupt leaves a queue whose length depends on timing)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from tests.cli.test_cli import TINY, cli_env, run_cli
from tests.cli.test_run_recovery import shm_of
from tests.leaks import live_pids
from zeropipe.outputs.checkpoint_format import encode, read_checkpoint

pytestmark = [pytest.mark.usefixtures("no_leaks"), pytest.mark.timeout(300)]

# budgets as a run leaves them: one cut after 2 of its 5 steps, one not begun (3 + 4 owed)
OWED = [
    {"steps": 5, "reanalyze_interval": None, "progress": 2},
    {"steps": 4, "reanalyze_interval": None, "progress": 0},
]
OWED_STEPS = 7


def _resume(tmp_path: Path, *args: str) -> tuple[int, str]:
    """`train run --resume` in its own session; its exit status and stderr, once no process of
    that session is left and the driver's shared-memory blocks are gone."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "zeropipe", "train", "run", "--resume", "--quiet", *args],
        cwd=tmp_path,
        stderr=subprocess.PIPE,
        text=True,
        env=cli_env(),
        start_new_session=True,
    )
    try:
        _out, err = proc.communicate(timeout=240)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=30)
    assert not live_pids("session", proc.pid), "a worker outlived its driver"
    assert not shm_of(proc.pid)
    return proc.returncode, err


def _events(run: Path, event: str) -> list[dict]:
    lines = [json.loads(x) for x in (run / "log" / "metrics.jsonl").read_text().splitlines()]
    return [e for e in lines if e["event"] == event]


def _owe_in_log(run: Path, steps: int) -> None:
    """Set the owed learner steps of the run's last checkpoint record."""
    log = run / "log" / "metrics.jsonl"
    lines = [json.loads(x) for x in log.read_text().splitlines()]
    last = max(i for i, e in enumerate(lines) if e["event"] == "checkpoint")
    lines[last]["owed_steps"] = steps
    log.write_text("".join(json.dumps(e) + "\n" for e in lines))


@pytest.mark.parametrize(
    "pipeline",
    [
        pytest.param(["--async-pipeline"], id="async"),
        # slow: the fast path's sync resume is the uninterrupted run (test_resume_equals_...)
        pytest.param([], id="sync", marks=pytest.mark.slow),
    ],
)
def test_a_resumed_run_trains_the_budgets_its_checkpoint_owes(tmp_path: Path, pipeline):
    (tmp_path / "tiny.yaml").write_text(TINY.format(exp="run"))
    first = run_cli("train", "tiny.yaml", "--quiet", *pipeline, cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    run = tmp_path / "run"
    latest = run / "ckpt" / "ckpt_latest.pth.tar"
    payload = read_checkpoint(latest)
    assert payload["budgets"] == []  # a limit stop trains every budget before it ends
    stopped = _events(run, "stop")[-1]
    payload["budgets"] = OWED
    torch.save(encode(payload), latest)
    _owe_in_log(run, OWED_STEPS)  # as the run's last checkpoint record would say

    # the env steps are spent (the same max_env_step): only the owed steps are left to train
    code, err = _resume(tmp_path, *pipeline)
    assert code == 0, err
    resumed = _events(run, "stop")[-1]
    assert resumed["envstep"] == stopped["envstep"]
    assert resumed["train_iter"] == stopped["train_iter"] + OWED_STEPS
    assert read_checkpoint(latest)["budgets"] == []
