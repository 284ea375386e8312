"""The real CLI on a tiny config, through subprocess."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

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


def run_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "zeropipe", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=240,
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
