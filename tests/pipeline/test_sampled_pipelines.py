"""sampled_muzero and sampled_efficientzero (discrete and continuous) in both pipelines; their
options and K <= A are checked."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.tiny import tiny_config
from zeropipe.config import ConfigError, config_from_dict
from zeropipe.pipeline.async_driver import train_async
from zeropipe.pipeline.build import build_collector
from zeropipe.pipeline.sync import train_sync

pytestmark = [pytest.mark.timeout(180), pytest.mark.usefixtures("no_leaks")]

SAMPLED = {"num_of_sampled_actions": 2, "prior": "uniform"}


SAMPLED_TYPES = ("sampled_muzero", "sampled_efficientzero")


def _type_options(policy_type: str) -> dict:
    """A small value-prefix LSTM for sampled_efficientzero (the default 512 is slow here)."""
    if policy_type == "sampled_efficientzero":
        return {"value_prefix": {"lstm_hidden_size": 16}}
    return {}


def _config(path, policy_type="sampled_muzero", **sampled):
    return tiny_config(
        path,
        type=policy_type,
        learner_num_threads=1,
        sampled={**SAMPLED, **sampled},
        **_type_options(policy_type),
    )


def _evals(run) -> list[dict]:
    lines = (run / "log" / "metrics.jsonl").read_text().splitlines()
    return [e for e in map(json.loads, lines) if e["event"] == "eval"]


def test_a_sampled_option_on_muzero_is_a_config_error(tmp_path):
    raw = tiny_config(tmp_path).model_dump(mode="json")
    raw["policy"]["sampled"] = {"num_of_sampled_actions": 2}
    with pytest.raises(ConfigError, match=r"policy\.sampled.*sampled_muzero"):
        config_from_dict(raw)


def test_more_sampled_actions_than_actions_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match=r"num_of_sampled_actions=3 exceeds the env's 2"):
        build_collector(_config(tmp_path / "run", num_of_sampled_actions=3))


@pytest.mark.parametrize("prior", ["uniform", "density"])
def test_collected_targets_live_on_the_sampled_actions(tmp_path, prior):
    collector = build_collector(_config(tmp_path / "run", num_of_sampled_actions=1, prior=prior))
    try:
        segments = []
        while not segments:
            segments = collector.collect(temperature=1.0, epsilon=0.0).segments
        for segment in segments:
            # K = 1: the one sampled root action gets every visit and is the action played
            played = np.eye(2, dtype=np.float32)[segment.actions]
            np.testing.assert_array_equal(segment.child_visits, played)
    finally:
        collector.close()


def _continuous_config(path, policy_type="sampled_muzero", **policy):
    cfg = tiny_config(
        path,
        type=policy_type,
        learner_num_threads=1,
        sampled={"num_of_sampled_actions": 3, "prior": "uniform"},
        **_type_options(policy_type),
        **policy,
    )
    raw = cfg.model_dump(mode="json")
    raw["env"].update(env_id="Pendulum-v1", max_episode_steps=40, eval_max_episode_steps=40)
    raw["policy"]["model"].update(continuous_action_space=True, norm_type="LN")
    raw["policy"]["model"].update(value_support_range=[-20, 21, 1])
    raw["policy"]["model"].update(reward_support_range=[-20, 21, 1])
    return config_from_dict(raw)


def test_continuous_collects_float_actions_inside_the_bounds_with_their_sampled_actions(tmp_path):
    collector = build_collector(_continuous_config(tmp_path / "run"))
    try:
        segments = []
        while not segments:
            segments = collector.collect(temperature=1.0, epsilon=0.0).segments
        for segment in segments:
            n = segment.num_stored
            assert segment.actions.shape == (n, 1) and segment.actions.dtype == np.float32
            assert (np.abs(segment.actions) < 1.0).all()
            assert segment.root_sampled_actions.shape == (n, 3, 1)
            assert (np.abs(segment.root_sampled_actions) < 1.0).all()
            played = (segment.root_sampled_actions == segment.actions[:, None]).all(axis=2)
            assert played.any(axis=1).all()  # the action played is one of the root's samples
            np.testing.assert_allclose(segment.child_visits.sum(axis=1), 1.0, rtol=1e-6)
    finally:
        collector.close()


@pytest.mark.parametrize(
    "policy_type",  # one type on the fast path: both share the sampled search and reanalysis
    [pytest.param("sampled_muzero", marks=pytest.mark.slow), "sampled_efficientzero"],
)
def test_continuous_trains_and_evaluates_sync_with_reanalysis(tmp_path, policy_type):
    cfg = _continuous_config(
        tmp_path / "run", policy_type, reanalyze_ratio=0.5, buffer_reanalyze_freq=1.0, eval_freq=50
    )
    cfg.max_env_step = 200  # at most 100 learner steps: a reanalysis every budget, an eval every 50
    summary = train_sync(cfg)
    assert summary.train_iter > 0
    evals = _evals(tmp_path / "run")
    assert evals and all(np.isfinite(e["reward_mean"]) for e in evals)


def test_box_actions_without_the_continuous_policy_are_a_config_error(tmp_path):
    raw = tiny_config(tmp_path / "run", learner_num_threads=1).model_dump(mode="json")
    raw["env"]["env_id"] = "Pendulum-v1"  # muzero: one "discrete action" per Box dimension
    with pytest.raises(
        ConfigError, match=r"'Pendulum-v1' has Box actions of 1 dim.*sampled_muzero"
    ):
        build_collector(config_from_dict(raw))


def test_continuous_policy_on_discrete_actions_is_a_config_error(tmp_path):
    raw = _continuous_config(tmp_path / "run").model_dump(mode="json")
    raw["env"]["env_id"] = "zeropipe/Chain-v0"
    with pytest.raises(ConfigError, match=r"has 2 discrete actions; set policy\.model\.continuous"):
        build_collector(config_from_dict(raw))


def test_continuous_action_space_on_muzero_is_a_config_error(tmp_path):
    raw = tiny_config(tmp_path).model_dump(mode="json")
    raw["policy"]["model"]["continuous_action_space"] = True
    with pytest.raises(ConfigError, match=r"continuous_action_space is an option of.*sampled_mu"):
        config_from_dict(raw)


@pytest.mark.slow
@pytest.mark.parametrize("policy_type", SAMPLED_TYPES)
async def test_continuous_trains_and_evaluates_async(tmp_path, policy_type):
    cfg = _continuous_config(tmp_path / "run", policy_type)
    summary = await train_async(cfg, show_progress=False)
    assert summary.train_iter > 0
    assert _evals(tmp_path / "run")
