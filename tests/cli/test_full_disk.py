"""A disk that fills under a run's logs (`log/metrics.jsonl`, `log/train.log`) is named in one
line and the run exits 1, its final checkpoint written: through the real CLI, the full disk made
by a config hook in the CLI's process (tests/cli/full_disk_hook.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.full_disk_hook import HOOK, VARIABLE
from tests.cli.test_cli import TINY, cli_env
from tests.cli.test_run_recovery import shm_of
from tests.leaks import live_pids
from zeropipe.outputs.checkpoint_format import read_checkpoint

pytestmark = [pytest.mark.usefixtures("no_leaks"), pytest.mark.timeout(300)]


def _train(tmp_path: Path, full: str, *args: str) -> tuple[int, str]:
    """`train tiny.yaml` in its own session with the disk filling at `full`; its exit status and
    stderr, once no process of that session is left and no shared-memory block of it."""
    tiny = TINY.format(exp="run").replace("Chain-v0", f"Chain-v0, register_envs: '{HOOK}'")
    (tmp_path / "tiny.yaml").write_text(tiny)
    proc = subprocess.Popen(
        [sys.executable, "-m", "zeropipe", "train", "tiny.yaml", "--quiet", *args],
        cwd=tmp_path,
        stderr=subprocess.PIPE,
        text=True,
        env={**cli_env(), VARIABLE: full},
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


@pytest.mark.parametrize("pipeline", [["--async-pipeline"], []], ids=["async", "sync"])
@pytest.mark.parametrize("full", ["metrics.jsonl:12", "train.log:3"])
def test_a_full_disk_under_the_logs_is_named_and_the_checkpoint_written(tmp_path, pipeline, full):
    # a limit far off: an async run's early collectors can bring the tiny run's 240 env steps
    # in before the driver's first stop check reads the full disk
    code, err = _train(tmp_path, full, *pipeline, "--set", "max_env_step=4000")
    name = full.split(":")[0]
    assert code == 1, err
    said = [line for line in err.splitlines() if "disk full" in line]
    assert len(said) == 1, err
    assert said[0].startswith("zeropipe: disk full: no space left on device writing ")
    written = Path(said[0].split(" writing ")[1].split(": ")[0])  # relative to the run's cwd
    assert (tmp_path / written).resolve() == (tmp_path / "run" / "log" / name).resolve()
    assert "Traceback" not in err and "Logging error" not in err, err
    payload = read_checkpoint(tmp_path / "run" / "ckpt" / "ckpt_latest.pth.tar")
    assert payload["envstep"] < 4000  # the run stopped on the full disk, not at its limit
    assert payload["learner"]["train_iter"] >= 0
