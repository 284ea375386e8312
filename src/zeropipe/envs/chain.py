"""A tiny deterministic chain MDP for tests, registered as ``zeropipe/Chain-v0``.

Runs in: any.

States 0..length-1 on a line, start at 0. Action 0 moves left (staying at 0 at the left end),
action 1 moves right. Entering the right end gives reward 1 and terminates; every other step gives
0. The observation is the one-hot position (float32 [length]). The registered id has a time limit
of `CHAIN_MAX_EPISODE_STEPS` steps, so always moving left ends in truncation. The optimal return
is 1 after `length - 1` steps.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from zeropipe.envs.spec import EnvError

CHAIN_ENV_ID = "zeropipe/Chain-v0"
CHAIN_MAX_EPISODE_STEPS = 20


class ChainEnv(gym.Env[np.ndarray, int]):
    """The chain MDP; see the module docstring.

    Args:
        length: Number of states (at least 2).
    """

    metadata: dict[str, Any] = {"render_modes": []}  # noqa: RUF012 (gymnasium's class attribute)

    def __init__(self, length: int = 5) -> None:
        if length < 2:
            raise EnvError(f"Chain env length must be at least 2, got {length}")
        self.length = length
        self.observation_space = gym.spaces.Box(0.0, 1.0, shape=(length,), dtype=np.float32)
        self.action_space = gym.spaces.Discrete(2)
        self._position = 0

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Go back to state 0."""
        super().reset(seed=seed)
        self._position = 0
        return self._observation(), {}

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """Move left (0) or right (1)."""
        if action not in (0, 1):
            raise EnvError(f"Chain env action must be 0 or 1, got {action!r}")
        if action == 1:
            self._position += 1
        else:
            self._position = max(0, self._position - 1)
        terminated = self._position == self.length - 1
        return self._observation(), float(terminated), terminated, False, {}

    def _observation(self) -> np.ndarray:
        observation = np.zeros(self.length, dtype=np.float32)
        observation[self._position] = 1.0
        return observation


def register_chain_env() -> None:
    """Register `CHAIN_ENV_ID` in gymnasium (idempotent)."""
    if CHAIN_ENV_ID not in gym.registry:
        gym.register(
            id=CHAIN_ENV_ID,
            entry_point="zeropipe.envs.chain:ChainEnv",
            max_episode_steps=CHAIN_MAX_EPISODE_STEPS,
            kwargs={"length": 5},
        )
