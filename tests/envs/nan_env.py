"""An env that turns non-finite at a set step: its observation or its reward becomes NaN.

Runs in: tests (named by `env.register_envs: tests.envs.nan_env:register_envs`, in every process
that builds envs).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

NAN_OBSERVATION_ID = "NanTest/NanObservation-v0"
NAN_REWARD_ID = "NanTest/NanReward-v0"
NAN_AT_STEP = 3  # of each episode


class NanEnv(gym.Env[np.ndarray, int]):
    """Four float observations, two actions; `field` turns NaN at step `NAN_AT_STEP`."""

    metadata: dict[str, Any] = {"render_modes": []}  # noqa: RUF012 (gymnasium's class attribute)

    def __init__(self, field: str) -> None:
        self.field = field
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
        bad = self._steps == NAN_AT_STEP
        observation = np.full(4, np.nan if bad and self.field == "observation" else 0.5, "f4")
        reward = float("nan") if bad and self.field == "reward" else 0.0
        return observation, reward, False, False, {}


def register_envs() -> None:
    """Register both ids (idempotent)."""
    for env_id, field in ((NAN_OBSERVATION_ID, "observation"), (NAN_REWARD_ID, "reward")):
        if env_id not in gym.registry:
            gym.register(
                id=env_id,
                entry_point="tests.envs.nan_env:NanEnv",
                max_episode_steps=20,
                kwargs={"field": field},
            )
