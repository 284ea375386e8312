"""The runner core in real runs of both pipelines: one train line, one final-eval rule."""

from __future__ import annotations

import asyncio

import pytest

from tests.runlog import events
from tests.tiny import tiny_config
from zeropipe.pipeline.async_driver import train_async
from zeropipe.pipeline.sync import train_sync

pytestmark = [pytest.mark.timeout(240), pytest.mark.usefixtures("no_leaks")]

# Written out by hand: what every train line carries in both pipelines (besides the losses).
TRAIN_FIELDS = {
    "event",
    "time_s",
    "envstep",
    "train_iter",
    "learner_steps",
    "learner_steps_per_busy_s",
    "learner_steps_per_s",
    "learner_threads",
    "budget_queue_len",
    "buffer_transitions",
    "buffer_bytes_per_transition",
}


async def train_async_bounded(cfg):
    async with asyncio.timeout(180):
        return await train_async(cfg, show_progress=False)


@pytest.mark.parametrize("pipeline", ["sync", "async"])
def test_train_lines_and_final_eval_are_the_same_in_both_pipelines(tmp_path, pipeline):
    # update_per_collect 4 and max_train_iter 10: the run stops in the middle of a budget.
    cfg = tiny_config(tmp_path / "run", update_per_collect=4, eval_freq=10**6)
    cfg.max_train_iter = 10
    cfg.max_env_step = 10**6
    summary = train_sync(cfg) if pipeline == "sync" else asyncio.run(train_async_bounded(cfg))
    assert summary.stop_reason == "max_train_iter" and summary.train_iter == 10
    log = events(tmp_path / "run")
    trains = [e for e in log if e["event"] == "train"]
    assert trains and all(set(e) >= TRAIN_FIELDS for e in trains)
    # every learner step is in exactly one line, the cut budget's two included
    assert sum(e["learner_steps"] for e in trains) == 10
    assert trains[-1]["train_iter"] == 10
    # the final weights are scored once (neither pipeline evaluated before: eval_freq is huge)
    evals = [e for e in log if e["event"] == "eval"]
    assert [e["policy_version"] for e in evals] == [10]
    assert evals[0].get("final") is True  # marked, and kept out of the eval gate, in both


@pytest.mark.parametrize("pipeline", ["sync", "async"])
def test_train_lines_come_every_train_log_interval_steps(tmp_path, pipeline):
    cfg = tiny_config(tmp_path / "run", update_per_collect=4, eval_freq=10**6)
    cfg.train_log_interval = 3
    cfg.max_train_iter = 10
    cfg.max_env_step = 10**6
    train_sync(cfg) if pipeline == "sync" else asyncio.run(train_async_bounded(cfg))
    trains = [e for e in events(tmp_path / "run") if e["event"] == "train"]
    # at the multiples of 3 (not at the budgets' ends: every 4 steps), and at max_train_iter
    assert [e["train_iter"] for e in trains] == [3, 6, 9, 10]
    assert [e["learner_steps"] for e in trains] == [3, 3, 3, 1]
