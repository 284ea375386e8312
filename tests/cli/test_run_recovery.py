"""The real CLI when things go wrong: a repeated command, SIGKILL, double Ctrl-C, bad checkpoint."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.cli.test_cli import TINY, default_sigint, run_cli
from tests.crafted import write_crafted_checkpoint
from tests.leaks import live_pids
from zeropipe.cli.curves import complete_lines
from zeropipe.outputs.checkpoint_format import read_checkpoint

pytestmark = pytest.mark.usefixtures("no_leaks")


def files_of(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def metrics(run: Path) -> list[dict]:
    path = run / "log" / "metrics.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in complete_lines(path.read_text()) if line]


def start(tmp_path: Path, *args: str, sigint=default_sigint) -> subprocess.Popen:
    """The CLI in its own process group (as a terminal or a scheduler would run it); `sigint`
    sets the SIGINT disposition it starts with."""
    return subprocess.Popen(
        [sys.executable, "-m", "zeropipe", "train", str(tmp_path / "tiny.yaml"), "--quiet", *args],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=sigint,
    )


def ignored_sigint() -> None:
    """SIGINT ignored, as a shell script starts its background jobs (`cmd &`)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def wait_for(proc: subprocess.Popen, run: Path, predicate, timeout_s: float = 180) -> dict:
    """Poll the metrics log for a matching event (bounded by a deadline)."""
    deadline = time.monotonic() + timeout_s
    while True:
        for event in metrics(run):
            if predicate(event):
                return event
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        assert time.monotonic() < deadline, "event never appeared"
        time.sleep(0.1)  # polling a file for a condition, bounded by the deadline


def shm_of(pid: int) -> set[str]:
    return {n for n in os.listdir("/dev/shm") if n.startswith(f"zeropipe_{pid}_")}


def sigterm_once_training(
    tmp_path: Path, pipeline: list[str], sigint=default_sigint, before_sigterm=None
) -> tuple[subprocess.Popen, str]:
    """A long run of the tiny config in `run/`, sent SIGTERM (to the driver alone) once its first
    train line is logged, `before_sigterm(run)` first; the ended process and its stderr."""
    (tmp_path / "tiny.yaml").write_text(TINY.format(exp="run").replace("240", "100000"))
    run = tmp_path / "run"
    # an async setting only with the async pipeline: a sync train refuses it
    args = [*pipeline, *(["--set", "policy.async_pipeline.shutdown_timeout_s=20"] * bool(pipeline))]
    proc = start(tmp_path, *args, sigint=sigint)
    try:
        wait_for(proc, run, lambda e: e["event"] == "train")
        if before_sigterm is not None:
            before_sigterm(run)
        proc.send_signal(signal.SIGTERM)
        _out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate(timeout=30)
    return proc, err


def _ckpt_dir_made_a_file(run: Path) -> None:
    """A file where the checkpoint directory was: every save fails, as on an unwritable disk."""
    shutil.rmtree(run / "ckpt")
    (run / "ckpt").write_text("not a directory")


@pytest.mark.slow  # the fast path has tests/outputs/test_run_dir.py for the same policy
@pytest.mark.timeout(300)
def test_the_same_command_twice_never_changes_the_first_run(tmp_path: Path):
    (tmp_path / "tiny.yaml").write_text(TINY.format(exp="run").replace("240", "48"))
    first = run_cli("train", "tiny.yaml", "--quiet", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    before = files_of(tmp_path / "run")
    for pipeline in ([], ["--async-pipeline"]):
        again = run_cli("train", "tiny.yaml", "--quiet", *pipeline, cwd=tmp_path)
        assert again.returncode == 2
        assert "already holds a run" in again.stderr and "--resume" in again.stderr
    assert files_of(tmp_path / "run") == before


def test_a_corrupt_checkpoint_on_resume_is_a_clear_error(tmp_path: Path):
    (tmp_path / "tiny.yaml").write_text(TINY.format(exp="run"))
    ckpt = tmp_path / "run" / "ckpt"
    ckpt.mkdir(parents=True)
    (ckpt / "ckpt_latest.pth.tar").write_bytes(b"PK\x03\x04 truncated")
    proc = run_cli("train", "tiny.yaml", "--resume", cwd=tmp_path)
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert "checkpoint error" in lines[-1] and "run/ckpt/ckpt_latest.pth.tar" in lines[-1]
    assert "Traceback" not in proc.stderr
    assert sorted(p.name for p in tmp_path.joinpath("run").iterdir()) == ["ckpt"]


@pytest.mark.timeout(120)
def test_resume_refuses_a_crafted_checkpoint_without_running_it(tmp_path: Path):
    """A shared run whose ckpt_latest runs code when unpickled (here: creates a file); the
    previous checkpoint is good, and resuming from it instead would hide the replaced file."""
    (tmp_path / "tiny.yaml").write_text(TINY.format(exp="run"))
    ckpt, marker = tmp_path / "run" / "ckpt", tmp_path / "marker"
    write_crafted_checkpoint(ckpt / "ckpt_latest.pth.tar", marker)
    (ckpt / "ckpt_latest.prev.pth.tar").write_bytes(b"")  # never reached
    proc = run_cli("train", "tiny.yaml", "--resume", "--quiet", cwd=tmp_path)
    assert not marker.exists()
    assert proc.returncode == 1, proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("zeropipe: checkpoint error: --resume: ")
    assert "run/ckpt/ckpt_latest.pth.tar was refused: loading it would call io.open;" in line
    assert sorted(p.name for p in tmp_path.joinpath("run").iterdir()) == ["ckpt"]


@pytest.mark.timeout(420)
@pytest.mark.parametrize(
    "pipeline",
    [
        pytest.param(["--async-pipeline"], id="async"),
        pytest.param([], id="sync", marks=pytest.mark.slow),
    ],
)
def test_sigkill_then_resume_reaches_the_stop_rule(tmp_path: Path, pipeline: list[str]):
    interval = 6
    (tmp_path / "tiny.yaml").write_text(TINY.format(exp="run").replace("240", "100000"))
    run = tmp_path / "run"
    sets = ["--set", f"checkpoint.latest_interval_train_iter={interval}"]
    proc = start(tmp_path, *pipeline, *sets)
    try:
        wait_for(proc, run, lambda e: e["event"] == "checkpoint" and e["train_iter"] > interval)
        if pipeline:
            wait_for(proc, run, lambda e: e["event"] == "publish")
        os.killpg(proc.pid, signal.SIGKILL)  # an OOM kill or a scheduler's hard stop
        proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate(timeout=30)
    killed_at = max(e["train_iter"] for e in metrics(run))
    if pipeline:
        assert shm_of(proc.pid), "the SIGKILLed driver left no block: nothing to reclaim"
    target = max(e["envstep"] for e in metrics(run)) + 48
    again = run_cli(
        "train", "tiny.yaml", "--quiet", "--resume", *pipeline, *sets,
        "--set", f"max_env_step={target}", cwd=tmp_path,
    )  # fmt: skip
    assert again.returncode == 0, again.stderr
    log = metrics(run)
    (resume,) = [e for e in log if e["event"] == "resume"]
    chunk = 4  # max_train_chunk_steps: the interval is checked between chunks
    assert resume["train_iter"] >= killed_at - interval - chunk
    after = log[log.index(resume) :]
    assert next(e for e in after if e["event"] == "train")["buffer_transitions"] > 0
    assert after[-1]["event"] == "stop" and after[-1]["reason"] == "max_env_step"
    assert after[-1]["envstep"] >= target
    assert not shm_of(proc.pid)  # the dead run's blocks were reclaimed at the next start


@pytest.mark.timeout(300)
def test_a_double_ctrl_c_still_leaves_a_loadable_checkpoint(tmp_path: Path):
    (tmp_path / "tiny.yaml").write_text(TINY.format(exp="run").replace("240", "100000"))
    run = tmp_path / "run"
    proc = start(
        tmp_path, "--async-pipeline", "--set", "checkpoint.latest_interval_s=0",
        "--set", "policy.async_pipeline.shutdown_timeout_s=20",
    )  # fmt: skip
    try:
        wait_for(proc, run, lambda e: e["event"] == "train")
        os.killpg(proc.pid, signal.SIGINT)
        saved = wait_for(proc, run, lambda e: e["event"] == "checkpoint", timeout_s=30)
        os.killpg(proc.pid, signal.SIGINT)  # impatient: a second Ctrl-C during the shutdown wait
        _out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert saved["reason"] == "stop"
    payload = read_checkpoint(run / "ckpt" / "ckpt_latest.pth.tar")
    assert payload["learner"]["train_iter"] == saved["train_iter"]
    assert not shm_of(proc.pid)


@pytest.mark.timeout(300)
@pytest.mark.parametrize(
    ("pipeline", "sigint"),  # the fast path: each pipeline once, and each SIGINT disposition once
    [
        pytest.param(["--async-pipeline"], ignored_sigint, id="async-sigint-ignored"),
        pytest.param([], default_sigint, id="sync-"),
        pytest.param(["--async-pipeline"], default_sigint, id="async-", marks=pytest.mark.slow),
        pytest.param([], ignored_sigint, id="sync-sigint-ignored", marks=pytest.mark.slow),
    ],
)
def test_sigterm_writes_the_final_checkpoint_and_exits_143(
    tmp_path: Path, pipeline: list[str], sigint
):
    """`kill PID` (a scheduler's stop) takes the Ctrl-C path, sent to the driver alone; also in
    a process that started with SIGINT ignored (before the fix it kept training)."""
    run = tmp_path / "run"
    proc, err = sigterm_once_training(tmp_path, pipeline, sigint=sigint)
    assert proc.returncode == 143, err
    log = metrics(run)
    reason = "cancelled" if pipeline else "interrupted"  # each pipeline's word for Ctrl-C
    assert log[-1]["event"] == "stop" and log[-1]["reason"] == reason
    saved = log[-2]
    assert saved["event"] == "checkpoint" and saved["reason"] == "stop"
    assert err.splitlines()[-1] == (  # what was kept, and how to go on
        "zeropipe: terminated (SIGTERM); the final checkpoint was written "
        f"(run/ckpt/ckpt_latest.pth.tar, env step {saved['envstep']}, train_iter "
        f"{saved['train_iter']}); continue the run with: zeropipe train run --resume"
    )
    payload = read_checkpoint(run / "ckpt" / "ckpt_latest.pth.tar")
    assert payload["learner"]["train_iter"] == log[-2]["train_iter"]
    assert not shm_of(proc.pid)


@pytest.mark.timeout(300)
@pytest.mark.parametrize("pipeline", [[], ["--async-pipeline"]], ids=["sync", "async"])
def test_a_failed_final_checkpoint_after_sigterm_exits_1_naming_it(tmp_path: Path, pipeline):
    """The checkpoint directory is gone (a file in its place, as an unwritable disk would fail
    every save): SIGTERM's final checkpoint fails, and that is the exit (1, one line), not the
    interrupt's 143 that hid it."""
    run = tmp_path / "run"
    proc, err = sigterm_once_training(tmp_path, pipeline, before_sigterm=_ckpt_dir_made_a_file)
    assert proc.returncode == 1, err
    assert "zeropipe: checkpoint error:" in err and "ckpt_latest" in err, err
    log = metrics(run)
    assert log[-1]["event"] == "stop"
    assert [e["kind"] for e in log if e["event"] == "checkpoint_error"][-1] == "final"
    assert not live_pids("session", proc.pid)
    assert not shm_of(proc.pid)


def _caught_signals(pid: int) -> int:
    """The signals `pid` has a handler for (/proc/PID/status SigCgt); 0 once it is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            return int(f.read().split("SigCgt:")[1].split()[0], 16)
    except (OSError, IndexError):
        return 0


def _worker_importing(session: int) -> bool:
    """A spawned worker of `session` is past its interpreter's start-up (Python's SIGINT handler
    is installed) and, as workers do in their first second, importing numpy and torch."""
    for pid in live_pids("session", session):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                spawned = b"spawn_main" in f.read()
        except OSError:
            continue
        if spawned and _caught_signals(pid) & (1 << (signal.SIGINT - 1)):
            return True
    return False


@pytest.mark.timeout(180)
def test_a_ctrl_c_while_the_workers_start_ends_the_run_quietly(tmp_path: Path):
    """Ctrl-C reaches the whole process group, the workers too, while they import torch."""
    (tmp_path / "tiny.yaml").write_text(TINY.format(exp="run"))
    proc = start(tmp_path, "--async-pipeline")
    try:
        deadline = time.monotonic() + 120
        while not _worker_importing(proc.pid):
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            assert time.monotonic() < deadline, "no worker started"
            time.sleep(0.005)  # polling /proc for a condition, bounded by the deadline
        os.killpg(proc.pid, signal.SIGINT)
        _out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    assert err.strip().splitlines()[-1].startswith("zeropipe: interrupted"), err
    assert not live_pids("session", proc.pid)
    assert not shm_of(proc.pid)
