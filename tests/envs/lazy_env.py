"""A third-party env module that registers its id only when a function is called (as MinAtar
1.0.15's `minatar.gym.register_envs`): importing it registers nothing.

Runs in: tests (named by `env.register_envs: tests.envs.lazy_env:register_envs`, in every
process that builds envs).
"""

from __future__ import annotations

import gymnasium as gym

LAZY_ID = "Lazy/Bits-v0"
calls = 0  # how often register_envs ran in this process


def register_envs() -> None:
    """Register `LAZY_ID` (the test suite's bit-guessing env)."""
    global calls
    calls += 1
    if LAZY_ID not in gym.registry:
        gym.register(
            id=LAZY_ID,
            entry_point="tests.envs.third_party_env:BitsEnv",
            max_episode_steps=10,
        )


def broken() -> None:
    """A registration function that fails."""
    raise RuntimeError("no ROMs found")
