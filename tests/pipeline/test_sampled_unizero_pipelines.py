"""sampled_unizero in both pipelines: Box actions through the world model's root contexts,
search, buffer and loss (with reanalysis); discrete sampled actions on the chain."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.tiny import tiny_config
from zeropipe.config import config_from_dict
from zeropipe.pipeline.async_driver import train_async
from zeropipe.pipeline.build import build_collector
from zeropipe.pipeline.sync import train_sync

pytestmark = [pytest.mark.timeout(180), pytest.mark.usefixtures("no_leaks")]

WORLD = {"embed_dim": 16, "num_layers": 1, "num_heads": 2, "context_steps": 3, "dropout": 0.0}


def _config(path, continuous: bool, **policy):
    model = {"norm_type": "LN", "world_model": WORLD}
    raw = tiny_config(path).model_dump(mode="json")
    raw["policy"].update(
        type="sampled_unizero",
        learner_num_threads=1,
        target_update_type="ema",
        sampled={"num_of_sampled_actions": 3 if continuous else 2, "policy_loss_type": "kl"},
        **policy,
    )
    raw["policy"]["model"].update(model)
    if continuous:
        raw["env"].update(env_id="Pendulum-v1", max_episode_steps=40, eval_max_episode_steps=40)
        raw["policy"]["model"].update(continuous_action_space=True)
        raw["policy"]["model"].update(value_support_range=[-20, 21, 1])
        raw["policy"]["model"].update(reward_support_range=[-20, 21, 1])
    return config_from_dict(raw)


def _evals(run) -> list[dict]:
    lines = (run / "log" / "metrics.jsonl").read_text().splitlines()
    return [e for e in map(json.loads, lines) if e["event"] == "eval"]


def test_collects_float_actions_with_their_root_sampled_actions(tmp_path):
    collector = build_collector(_config(tmp_path / "run", continuous=True))
    try:
        segments = []
        while not segments:  # several steps: the root contexts extend over action vectors
            segments = collector.collect(temperature=1.0, epsilon=0.0).segments
        for segment in segments:
            n = segment.num_stored
            assert segment.actions.shape == (n, 1) and segment.actions.dtype == np.float32
            assert segment.root_sampled_actions.shape == (n, 3, 1)
            assert (np.abs(segment.root_sampled_actions) < 1.0).all()
            played = (segment.root_sampled_actions == segment.actions[:, None]).all(axis=2)
            assert played.any(axis=1).all()
    finally:
        collector.close()


def test_continuous_trains_and_evaluates_sync_with_reanalysis(tmp_path):
    cfg = _config(
        tmp_path / "run", True, reanalyze_ratio=0.5, buffer_reanalyze_freq=1.0, eval_freq=50
    )
    cfg.max_env_step = 200  # at most 100 learner steps: a reanalysis every budget, an eval every 50
    summary = train_sync(cfg)
    assert summary.train_iter > 0
    evals = _evals(tmp_path / "run")
    assert evals and all(np.isfinite(e["reward_mean"]) for e in evals)


@pytest.mark.slow
async def test_continuous_trains_and_evaluates_async(tmp_path):
    summary = await train_async(_config(tmp_path / "run", True), show_progress=False)
    assert summary.train_iter > 0
    assert _evals(tmp_path / "run")
