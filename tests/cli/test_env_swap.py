"""`--set env.env_id=...` on a config written for another env, through the real CLI: the stop
value is adapted with a printed note (or kept when set too), a model kind written for the other
observation kind is refused (tests/cli/test_bad_input.py), and a run no longer stops on the old
env's stop value."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.cli.test_cli import TINY, run_cli
from tests.leaks import shm_blocks
from zeropipe.cli.main import EXIT_OK, main

CONFIGS = Path(__file__).resolve().parents[2] / "configs"
PENDULUM = CONFIGS / "pendulum_sampled_efficientzero.yaml"


def _config(capsys, *args: str) -> tuple[dict, str]:
    assert main(["config", *args]) == EXIT_OK
    out, err = capsys.readouterr()
    return yaml.safe_load(out), err


def test_a_swapped_env_takes_its_registered_reward_threshold(capsys):
    cfg, err = _config(capsys, str(PENDULUM), "--set", "env.env_id=MountainCarContinuous-v0")
    # gymnasium registers MountainCarContinuous-v0 with reward_threshold=90.0
    assert cfg["env"]["stop_value"] == 90.0
    assert err.count("\n") == 1
    assert "-150 was written for Pendulum-v1" in err and "reward_threshold 90" in err


def test_a_swapped_env_without_a_threshold_gets_no_stop_value(capsys):
    cfg, err = _config(
        capsys, str(CONFIGS / "cartpole_muzero.yaml"), "--set", "env.env_id=zeropipe/Chain-v0"
    )
    assert cfg["env"]["stop_value"] == 1e9  # the field's default: never reached
    assert "195 was written for CartPole-v1" in err and "no reward_threshold" in err


@pytest.mark.parametrize(
    ("overrides", "want"),
    [
        (["env.env_id=MountainCarContinuous-v0", "env.stop_value=80"], 80.0),  # the user's value
        (["env.env_id=Pendulum-v1"], -150.0),  # the file's own env: nothing moved
        ([], -150.0),
    ],
)
def test_a_stop_value_set_by_hand_or_for_the_files_env_is_kept(capsys, overrides, want):
    sets = [item for o in overrides for item in ("--set", o)]
    cfg, err = _config(capsys, str(PENDULUM), *sets)
    assert cfg["env"]["stop_value"] == want
    assert err == ""


@pytest.mark.timeout(300)
def test_a_run_moved_to_another_env_does_not_stop_on_the_old_envs_stop_value(tmp_path: Path):
    """Written for CartPole with stop value 0, which every eval reaches: before the fix the run
    on Chain stopped with reason stop_value at its first eval, a false success."""
    text = TINY.format(exp="run").replace("zeropipe/Chain-v0", "CartPole-v1")
    text = text.replace("stop_value: 1000", "stop_value: 0")
    config = tmp_path / "cartpole.yaml"
    config.write_text(text)
    before = shm_blocks()
    proc = run_cli(
        "train", str(config), "--quiet", "--set", "env.env_id=zeropipe/Chain-v0", cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr
    assert "stop_value 0 was written for CartPole-v1" in proc.stderr
    assert "stopped: max_env_step at env step" in proc.stderr, proc.stderr
    saved = yaml.safe_load((tmp_path / "run" / "config.yaml").read_text())
    assert saved["env"] == {**saved["env"], "env_id": "zeropipe/Chain-v0", "stop_value": 1e9}
    assert shm_blocks() <= before
