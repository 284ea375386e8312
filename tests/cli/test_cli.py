"""The real CLI on a tiny config, through subprocess."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from tests.leaks import shm_blocks

TINY = """
exp_name: {exp}
seed: 0
max_env_step: 240
env: {{env_id: zeropipe/Chain-v0, collector_env_num: 2, evaluator_env_num: 2,
       n_evaluator_episode: 2, stop_value: 1000}}
policy:
  model: {{kind: mlp, latent_dim: 16, hidden_dim: 16, num_layers: 1, head_hidden_dim: 16,
          value_support_range: [-5, 6, 1], reward_support_range: [-5, 6, 1]}}
  num_simulations: 4
  game_segment_length: 8
  num_unroll_steps: 3
  td_steps: 3
  batch_size: 8
  replay_ratio: 0.5
  eval_freq: 20
  save_ckpt_freq: 20
  replay_buffer_size: 1000
"""


REPO = Path(__file__).resolve().parents[2]


def cli_env() -> dict[str, str]:
    """The environment of a CLI subprocess: ours, with the repository on the path, so that a
    config's `env.register_envs` may name a hook in the test tree (`tests.envs...`)."""
    paths = [str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}


def run_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "zeropipe", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=240,
        env=cli_env(),
    )


@pytest.fixture
def tiny_config(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.yaml"
    path.write_text(TINY.format(exp="run"))
    return path


@pytest.mark.timeout(300)
def test_train_end_to_end(tiny_config: Path):
    proc = run_cli("train", str(tiny_config), "--quiet", cwd=tiny_config.parent)
    assert proc.returncode == 0, proc.stderr
    run = tiny_config.parent / "run"
    assert (run / "config.yaml").exists()
    assert (run / "ckpt" / "ckpt_latest.pth.tar").exists()
    assert (run / "ckpt" / "ckpt_best.pth.tar").exists()
    assert list((run / "log").glob("events.out.tfevents.*"))
    events = [json.loads(line) for line in (run / "log" / "metrics.jsonl").read_text().splitlines()]
    kinds = {e["event"] for e in events}
    assert {"collect", "train", "eval", "stop"} <= kinds
    assert events[-1]["reason"] == "max_env_step" and events[-1]["envstep"] >= 240
    assert all({"time_s", "envstep", "train_iter"} <= e.keys() for e in events)


@pytest.mark.parametrize(
    ("override", "needle"),
    [
        ("policy.batch_sise=3", "batch_sise"),
        ("policy.batch_size=lots", "policy.batch_size"),
        ("env.env_id=NoSuchEnv-v9", "NoSuchEnv-v9"),
        # an action-kind mismatch is a config error at load time, not in the collector
        ("env.env_id=Pendulum-v1", "'Pendulum-v1' has Box actions of 1 dimensions"),
    ],
)
def test_bad_input_fails_before_writing(tiny_config: Path, override: str, needle: str):
    proc = run_cli("train", str(tiny_config), "--set", override, cwd=tiny_config.parent)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0]
    assert not (tiny_config.parent / "run").exists()


def test_config_prints_resolved_defaults(tiny_config: Path):
    proc = run_cli("config", str(tiny_config), cwd=tiny_config.parent)
    assert proc.returncode == 0
    assert "pb_c_base: 19652.0" in proc.stdout and "async_pipeline:" in proc.stdout


def default_sigint() -> None:
    """Ctrl-C must reach the child even when this test runs in a background job (SIGINT ignored)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _metrics_has(run: Path, event: str) -> bool:
    path = run / "log" / "metrics.jsonl"
    return path.exists() and f'"event": "{event}"' in path.read_text()


@pytest.mark.timeout(240)
@pytest.mark.parametrize(
    "pipeline",  # sync's Ctrl-C path runs on the fast path through test_run_recovery's SIGTERM
    [  # test, which takes that path (cli/async_run.py: sigterm_as_ctrl_c)
        pytest.param(["--async-pipeline"], id="async"),
        pytest.param([], id="sync", marks=pytest.mark.slow),
    ],
)
def test_ctrl_c_shuts_down_cleanly(tmp_path: Path, pipeline: list[str]):
    shm_before = shm_blocks()
    config = tmp_path / "tiny.yaml"
    config.write_text(TINY.format(exp="run").replace("max_env_step: 240", "max_env_step: 1000000"))
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "zeropipe",
            "train",
            str(config),
            *pipeline,
            "--quiet",
            # an async setting only with the async pipeline: a sync train refuses it
            *(["--set", "policy.async_pipeline.shutdown_timeout_s=10"] * bool(pipeline)),
        ],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=default_sigint,
    )
    deadline = time.monotonic() + 180
    while not _metrics_has(tmp_path / "run", "train"):
        assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read()
        time.sleep(0.1)  # polling a file for a condition, bounded by the deadline
    os.killpg(proc.pid, signal.SIGINT)  # what a terminal's Ctrl-C sends: the whole group
    sent = time.monotonic()
    _out, err = proc.communicate(timeout=10 + 20)
    assert time.monotonic() - sent < 10 + 20
    assert proc.returncode == 130, err
    assert (tmp_path / "run" / "ckpt" / "ckpt_latest.pth.tar").exists()
    left = subprocess.run(
        ["ps", "-o", "pid,stat,args", "-g", str(proc.pid)], capture_output=True, text=True
    )
    assert left.returncode != 0, left.stdout  # ps finds no process of the group
    assert shm_blocks() - shm_before == set()  # blocks of other sessions' live runs not counted


@pytest.mark.parametrize(
    ("override", "needle"),
    [
        ("policy.async_pipeline.ray_local_mode=true", "ray_local_mode"),
        pytest.param(
            "policy.async_pipeline.collector_num_gpus=0.5",
            "collector_num_gpus",
            marks=pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU share is valid here"),
        ),
    ],
)
def test_async_options_that_cannot_be_honoured(tiny_config: Path, override: str, needle: str):
    proc = run_cli(
        "train", str(tiny_config), "--async-pipeline", "--set", override, cwd=tiny_config.parent
    )
    assert proc.returncode == 2
    assert needle in proc.stderr and not (tiny_config.parent / "run").exists()


@pytest.mark.slow  # the fast path: test_resume_equals_uninterrupted (the same evals and losses)
@pytest.mark.timeout(300)
def test_resume_continues_learner_buffer_and_counters(tiny_config: Path):
    first = run_cli("train", str(tiny_config), "--quiet", cwd=tiny_config.parent)
    assert first.returncode == 0, first.stderr
    metrics = tiny_config.parent / "run" / "log" / "metrics.jsonl"
    before = [json.loads(line) for line in metrics.read_text().splitlines()]
    stop = before[-1]
    again = run_cli(
        "train",
        str(tiny_config),
        "--quiet",
        "--resume",
        "--set",
        "max_env_step=480",
        cwd=tiny_config.parent,
    )
    assert again.returncode == 0, again.stderr
    after = [json.loads(line) for line in metrics.read_text().splitlines()][len(before) :]
    resume = after[0]
    assert resume["event"] == "resume"
    assert (resume["envstep"], resume["train_iter"]) == (stop["envstep"], stop["train_iter"])
    first_train = next(e for e in after if e["event"] == "train")
    assert first_train["buffer_transitions"] > 240  # the replay buffer came back too
    assert after[-1]["event"] == "stop" and after[-1]["envstep"] >= 480


def test_resume_without_checkpoint_fails_before_writing(tiny_config: Path):
    proc = run_cli("train", str(tiny_config), "--resume", cwd=tiny_config.parent)
    assert proc.returncode == 2 and "no checkpoint" in proc.stderr
    assert not (tiny_config.parent / "run").exists()
