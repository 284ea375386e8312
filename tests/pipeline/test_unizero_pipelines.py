"""UniZero in both pipelines: train_iter reaches the learner; caches die with their weights."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from tests.tiny import tiny_config
from zeropipe.algos.network_search import root_inference
from zeropipe.config import config_from_dict
from zeropipe.learner.trainer import Trainer
from zeropipe.pipeline.async_driver import train_async
from zeropipe.pipeline.build import build_collector, build_driver, build_evaluator
from zeropipe.pipeline.sync import train_sync

pytestmark = [pytest.mark.timeout(180), pytest.mark.usefixtures("no_leaks")]

WORLD = {"embed_dim": 16, "num_layers": 1, "num_heads": 2, "context_steps": 3, "dropout": 0.0}


def unizero_config(path):
    model = {
        "kind": "mlp",
        "latent_dim": 16,
        "hidden_dim": 16,
        "num_layers": 1,
        "head_hidden_dim": 16,
        "norm_type": "LN",
        "value_support_range": [-5, 6, 1],
        "reward_support_range": [-5, 6, 1],
        "world_model": WORLD,
    }
    return tiny_config(
        path, type="unizero", model=model, target_update_type="ema", kv_cache_clear_interval=7
    )


def train_lines(run) -> list[dict]:
    lines = (run / "log" / "metrics.jsonl").read_text().splitlines()
    return [e for e in map(json.loads, lines) if e["event"] == "train"]


def check_train_iter_seen(run) -> None:
    lines = train_lines(run)
    assert lines
    for line in lines:
        # the loss saw the learner's train_iter of each step: the mean over the logged steps
        first = line["train_iter"] - line["learner_steps"]
        assert line["loss_train_iter"] == pytest.approx(first + (line["learner_steps"] - 1) / 2)


def test_train_iter_reaches_the_learner_sync(tmp_path):
    summary = train_sync(unizero_config(tmp_path / "run"))
    assert summary.train_iter > 0
    check_train_iter_seen(tmp_path / "run")


async def test_train_iter_reaches_the_learner_async(tmp_path):
    summary = await train_async(unizero_config(tmp_path / "run"), show_progress=False)
    assert summary.train_iter > 0
    check_train_iter_seen(tmp_path / "run")


def test_collector_caches_are_invalid_after_a_weight_load(tmp_path):
    cfg = unizero_config(tmp_path / "run")
    collector = build_collector(cfg)
    try:
        collector.collect(temperature=1.0, epsilon=0.0)
        frames = np.stack([t.stacked_obs() for t in collector.trajectories])
        stats = collector.roots.stats
        hits = stats.hits
        root_inference(collector.search, collector.roots, frames, collector.prev_actions)
        assert stats.hits > hits  # caches are in use
        state = {k: v + 0.01 for k, v in collector.search.network.state_dict().items()}
        collector.load_weights(state, version=1)
        hits, rebuilds = stats.hits, stats.rebuilds
        root_inference(collector.search, collector.roots, frames, collector.prev_actions)
        assert stats.hits == hits and stats.rebuilds > rebuilds
    finally:
        collector.close()


@pytest.mark.parametrize(("interval", "cleared_every_step"), [(1, True), (0, False)])
def test_collect_and_eval_clear_the_caches_by_one_rule(tmp_path, interval, cleared_every_step):
    """`kv_cache_clear_interval` steps of the envs clear every cache, in collect and in eval."""
    raw = unizero_config(tmp_path / "run").model_dump(mode="json")
    raw["policy"]["kv_cache_clear_interval"] = interval
    cfg = config_from_dict(raw)
    collector, evaluator = build_collector(cfg), build_evaluator(cfg)
    try:
        collector.collect(temperature=1.0, epsilon=0.0)
        evaluator.evaluate()
        for roots in (collector.roots, evaluator.roots):
            assert roots.stats.rebuilds + roots.stats.starts > 0
            assert (roots.stats.hits == 0) == cleared_every_step
    finally:
        collector.close()
        evaluator.close()


@pytest.mark.parametrize(
    ("clock", "longest_kept"), [("episode_step", 1), ("since_invalidation", 3)]
)
def test_collect_and_eval_keep_the_context_of_the_clock(tmp_path, clock, longest_kept):
    """Clearing after every step: 'episode_step' leaves each env its newest observation,
    'since_invalidation' keeps the recent ones (a window of 3 observations here). Chain episodes
    last at least 4 steps: 3 collect steps end none, and every eval episode fills a window."""
    raw = unizero_config(tmp_path / "run").model_dump(mode="json")
    raw["policy"].update(kv_cache_clear_interval=1, kv_cache_clock=clock)
    cfg = config_from_dict(raw)
    collector, evaluator = build_collector(cfg), build_evaluator(cfg)
    try:
        collector.collect(temperature=1.0, epsilon=0.0, num_segments=100, max_steps=3)
        evaluator.evaluate()
        for roots in (collector.roots, evaluator.roots):
            assert [len(obs) for obs in roots.state_dict()["obs"]] == [longest_kept] * 2
    finally:
        collector.close()
        evaluator.close()


def test_driver_caches_are_invalid_after_a_completed_budget(tmp_path):
    cfg = unizero_config(tmp_path / "run")
    comps = build_driver(cfg)
    trainer = Trainer(comps.learner, comps.buffer, cfg.policy)
    collector = build_collector(cfg)
    try:
        while comps.buffer.num_transitions <= cfg.policy.batch_size:
            comps.buffer.push(collector.collect(temperature=1.0, epsilon=0.0).segments)
    finally:
        collector.close()
    net = comps.learner.network.eval()
    contexts = net.new_root_contexts(1)
    obs = torch.zeros(1, 5)  # one-hot chain position
    with torch.no_grad():
        contexts.root(obs, [0], [-1])
        contexts.root(obs, [0], [0])
    assert contexts.stats.hits == 1
    trainer.add_budget(2, envstep=10**6)
    trainer.step()
    with torch.no_grad():
        contexts.root(obs, [0], [1])
    assert contexts.stats.hits == 2  # mid-budget: weights changed but the budget is not done
    trainer.step()  # completes the budget: its hook clears the world-model caches
    with torch.no_grad():
        contexts.root(obs, [0], [1])
    assert contexts.stats.hits == 2 and contexts.stats.rebuilds == 1
