"""A replaced collector plays with its own seed: the seed is read from what the new process
produces (the reset frames its envs start from), not from the seed the driver logs for it."""

from __future__ import annotations

import asyncio
import multiprocessing as mp
import os
import signal

import gymnasium as gym
import numpy as np
import pytest

from tests.pipeline.test_worker_faults import replacement_collected
from tests.runlog import wait_for_event
from tests.tiny import tiny_config
from zeropipe.pipeline.async_driver import train_async
from zeropipe.pipeline.run_state import RunState

pytestmark = [pytest.mark.timeout(240), pytest.mark.usefixtures("no_leaks")]

ENV_ID = "CartPole-v1"  # its reset frame depends on the seed (the chain env's does not)
NUM_ENVS = 2  # tiny_config's collector_env_num


def reset_frames(seed: int) -> list[np.ndarray]:
    """The first frames of envs seeded `seed + i` (envs/batch.py: env i of a batch built with
    base seed `seed`), from gymnasium itself."""
    env = gym.make(ENV_ID)
    try:
        return [env.reset(seed=seed + i)[0] for i in range(NUM_ENVS)]
    finally:
        env.close()


def starts_from(frames: list[np.ndarray], seed: int) -> bool:
    """Whether any of `frames` is the reset frame of an env seeded from base `seed`."""
    expected = reset_frames(seed)
    return any(np.array_equal(f, e) for f in frames for e in expected)


async def test_a_replaced_collector_starts_its_envs_from_its_own_seed(tmp_path, monkeypatch):
    # The first frame of every episode collector-0 played (frame stack 1: obs[0] of a segment
    # that starts an episode), as the driver receives them.
    episode_starts: list[np.ndarray] = []
    real_absorb = RunState.absorb_collect

    def absorb_collect(self, outcome, **worker_fields):
        if worker_fields.get("worker") == "collector-0":
            episode_starts.extend(s.obs[0] for s in outcome.segments if s.start_step == 0)
        return real_absorb(self, outcome, **worker_fields)

    monkeypatch.setattr(RunState, "absorb_collect", absorb_collect)
    run = tmp_path / "run"
    cfg = tiny_config(run, learner_num_threads=1)
    cfg.env.env_id = ENV_ID
    cfg.max_env_step = 10**6
    assert cfg.env.collector_env_num == NUM_ENVS
    driver = asyncio.create_task(train_async(cfg, show_progress=False), name="driver")
    try:
        await wait_for_event(run, lambda e: e["event"] == "collect")
        (worker,) = [p for p in mp.active_children() if p.name == "zeropipe-collector-0"]
        os.kill(worker.pid, signal.SIGKILL)
        restart = await wait_for_event(run, lambda e: e["event"] == "restart", timeout_s=60)
        await replacement_collected(run, restart)  # its first collect reached the driver
    finally:
        driver.cancel()
        with pytest.raises(asyncio.CancelledError):
            await driver
    assert restart["worker"] == "collector-0" and restart["seed"] != cfg.seed
    # the first process started its envs from the run seed (collector 0 adds no offset) ...
    assert starts_from(episode_starts, cfg.seed)
    # ... and its replacement from the seed logged for it: it does not replay those episodes
    assert starts_from(episode_starts, restart["seed"]), "the replacement did not use its seed"
