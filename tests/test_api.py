"""The Python API (`zeropipe.load_config`, `train`, `evaluate`) on a tiny config."""

from __future__ import annotations

from pathlib import Path

import pytest

import zeropipe
from tests.cli.test_cli import TINY
from zeropipe.config import ConfigError


@pytest.fixture
def tiny_yaml(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.yaml"
    path.write_text(TINY.format(exp=tmp_path / "run"))
    return path


def test_load_config_takes_a_mapping_of_dotted_keys(tiny_yaml):
    cfg = zeropipe.load_config(
        tiny_yaml, {"policy.batch_size": 16, "policy.replay_buffer_size": 1e6}
    )
    assert cfg.policy.batch_size == 16 and cfg.policy.replay_buffer_size == 1_000_000
    assert isinstance(cfg.policy.replay_buffer_size, int)


def test_load_config_blames_the_override(tiny_yaml):
    with pytest.raises(ConfigError) as info:
        zeropipe.load_config(tiny_yaml, {"policy.batch_sise": 16, "policy.batch_size": "abc"})
    assert sorted(info.value.lines) == [
        "overrides['policy.batch_sise']: unknown key 'batch_sise' in policy; "
        "did you mean 'batch_size'?",
        "overrides['policy.batch_size']: policy.batch_size: Input should be a valid integer, "
        "unable to parse string as an integer (got 'abc')",
    ]


def test_async_keys_need_the_async_pipeline(tiny_yaml):
    with pytest.raises(ConfigError, match=r"pipeline='async'"):
        zeropipe.train(tiny_yaml, {"policy.async_pipeline.num_collector_actors": 2})
    assert not (tiny_yaml.parent / "run").exists()


def test_async_settings_in_the_yaml_need_the_async_pipeline(tiny_yaml):
    tiny_yaml.write_text(tiny_yaml.read_text() + "  async_pipeline: {max_policy_lag: 2}\n")
    with pytest.raises(ConfigError) as info:
        zeropipe.train(tiny_yaml)
    (line,) = info.value.lines
    assert line.startswith(f"{tiny_yaml}: policy.async_pipeline.max_policy_lag: ") and (
        "pipeline='async'" in line
    )
    assert not (tiny_yaml.parent / "run").exists()


def test_a_run_directory_without_resume_is_refused(tiny_yaml):
    with pytest.raises(ConfigError, match="resume=True"):
        zeropipe.train(tiny_yaml.parent)


@pytest.mark.timeout(240)
def test_train_sync_then_evaluate_the_run(tiny_yaml):
    summary = zeropipe.train(tiny_yaml, {"max_env_step": 40})
    assert summary.stop_reason == "max_env_step" and summary.envstep >= 40
    run = tiny_yaml.parent / "run"
    score = zeropipe.evaluate(run, episodes=1)
    assert len(score.episode_returns) == 1
    resumed = zeropipe.train(run, {"max_env_step": 80}, resume=True)
    assert resumed.envstep >= 80


@pytest.mark.timeout(240)
@pytest.mark.usefixtures("no_leaks")
def test_train_async(tiny_yaml):
    cfg = zeropipe.load_config(tiny_yaml, {"max_env_step": 40})
    summary = zeropipe.train(cfg, {"policy.async_pipeline.num_collector_actors": 1}, "async")
    assert summary.stop_reason == "max_env_step"
    assert (tiny_yaml.parent / "run" / "ckpt" / "ckpt_latest.pth.tar").is_file()


def test_an_env_swap_is_checked_as_the_cli_does(tmp_path):
    path = tmp_path / "mlp.yaml"
    path.write_text("env: {env_id: CartPole-v1}\npolicy: {model: {kind: mlp}}\n")
    overrides = {"env.env_id": "ALE/Breakout-v5", "exp_name": str(tmp_path / "run")}
    with pytest.raises(ConfigError, match=r"policy\.model\.kind=conv"):
        zeropipe.train(path, overrides)
    assert not (tmp_path / "run").exists()
