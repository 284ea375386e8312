"""`zeropipe config --describe` through the real CLI: only the fields the config reads, in lines
that fit 100 columns."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.cli.test_cli import REPO, run_cli

ATARI = ("frame_skip", "sticky_action_prob", "noop_max", "gray_scale", "obs_size", "clip_rewards")
RAY = ("ray_address", "ray_local_mode", "collector_resources", "evaluator_resources")
CONV = ("num_channels", "num_res_blocks", "downsample", "head_channels")
MLP = ("latent_dim", "hidden_dim", "dynamics_residual")


def described(tmp_path: Path, config: str, *sets: str) -> tuple[str, set[str]]:
    """The output, and the keys it names (at any depth)."""
    args = [a for s in sets for a in ("--set", s)]
    proc = run_cli("config", str(REPO / "configs" / config), "--describe", *args, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    long = [line for line in proc.stdout.splitlines() if len(line) > 100]
    assert not long, long
    keys: set[str] = set()
    stack = [yaml.safe_load(proc.stdout)]  # still YAML: the wrapped notes are comment lines
    while stack:
        for key, value in stack.pop().items():
            keys.add(key)
            if isinstance(value, dict) and key not in RAY:
                stack.append(value)
    return proc.stdout, keys


@pytest.mark.timeout(120)
def test_a_cartpole_config_shows_no_atari_ray_or_conv_field(tmp_path):
    text, keys = described(tmp_path, "cartpole_muzero.yaml")
    assert not keys & {*ATARI, *RAY, *CONV}, keys & {*ATARI, *RAY, *CONV}
    assert {*MLP, "frame_stack", "backend", "worker_niceness", "td_steps"} <= keys
    assert "  # " in text  # a description too long for its line goes on below it


@pytest.mark.timeout(120)
def test_an_atari_config_shows_its_atari_and_conv_fields(tmp_path):
    _, keys = described(tmp_path, "pong_muzero.yaml")
    assert {*ATARI, *CONV} <= keys and not keys & {*RAY, *MLP}


@pytest.mark.timeout(120)
def test_the_ray_backend_shows_the_ray_fields(tmp_path):
    _, keys = described(tmp_path, "cartpole_muzero.yaml", "policy.async_pipeline.backend=ray")
    assert set(RAY) <= keys and "worker_niceness" not in keys
