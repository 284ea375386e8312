"""An env whose step never returns once it reaches a set step: a hung simulator.

Runs in: tests (named by `env.register_envs: tests.envs.hang_env:register_envs`, in every process
that builds envs). Where `HANG_DIR_VAR` names a directory, the step that hangs first writes a
file named by its process's pid there, so a test knows which process is stuck and since when.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

HANG_ID = "HangTest/Hang-v0"
HANG_AT_STEP = 5  # of each episode
HANG_DIR_VAR = "ZEROPIPE_TEST_HANG_DIR"


class HangEnv(gym.Env[np.ndarray, int]):
    """Four float observations, two actions; `step` blocks forever at step `HANG_AT_STEP`."""

    metadata: dict[str, Any] = {"render_modes": []}  # noqa: RUF012 (gymnasium's class attribute)

    def __init__(self) -> None:
        self.observation_space = gym.spaces.Box(-1.0, 1.0, shape=(4,), dtype=np.float32)
        self.action_space = gym.spaces.Discrete(2)
        self._steps = 0

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        self._steps = 0
        return np.zeros(4, dtype=np.float32), {}

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        self._steps += 1
        if self._steps == HANG_AT_STEP:
            where = os.environ.get(HANG_DIR_VAR)
            if where:
                (Path(where) / str(os.getpid())).touch()
            while True:
                time.sleep(3600)  # never returns; only a signal ends it
        return np.full(4, 0.5, "f4"), 0.0, False, False, {}


def register_envs() -> None:
    """Register the id (idempotent)."""
    if HANG_ID not in gym.registry:
        gym.register(id=HANG_ID, entry_point="tests.envs.hang_env:HangEnv", max_episode_steps=20)
