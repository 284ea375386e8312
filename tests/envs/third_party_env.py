"""A third-party gymnasium env module of the test suite's own: importing it registers two ids.

Runs in: tests (imported through the ``tests.envs.third_party_env:ThirdParty/...`` env ids, in
every process that builds envs).

``ThirdParty/Bits-v0``: bool [4] observations, 2 actions, reward 1 when the action equals bit 0;
10 steps per episode. ``ThirdParty/Pixels-v0``: the same game seen as a uint8 (6, 6, 2) image in
gymnasium's (H, W, C) layout (channel 0 lit when bit 0 is set, channel 1 always dark).
"""

from __future__ import annotations

from typing import Any, ClassVar

import gymnasium as gym
import numpy as np

BITS_ID = "ThirdParty/Bits-v0"
PIXELS_ID = "ThirdParty/Pixels-v0"
_EPISODE_STEPS = 10


class BitsEnv(gym.Env):
    """Guess bit 0 of a random bool vector; `pixels` shows it as a uint8 image instead."""

    metadata: ClassVar[dict[str, Any]] = {"render_modes": []}

    def __init__(self, pixels: bool = False) -> None:
        self._pixels = pixels
        self.action_space = gym.spaces.Discrete(2)
        if pixels:
            self.observation_space = gym.spaces.Box(0, 255, (6, 6, 2), dtype=np.uint8)
        else:
            self.observation_space = gym.spaces.Box(0, 1, (4,), dtype=bool)
        self._bits = np.zeros(4, dtype=bool)
        self._t = 0

    def _obs(self) -> np.ndarray:
        if not self._pixels:
            return self._bits.copy()
        image = np.zeros((6, 6, 2), dtype=np.uint8)
        image[:, :, 0] = 255 * int(self._bits[0])
        return image

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[Any, dict]:
        super().reset(seed=seed)
        self._bits = self.np_random.random(4) < 0.5
        self._t = 0
        return self._obs(), {}

    def step(self, action: int) -> tuple[Any, float, bool, bool, dict]:
        reward = float(int(action) == int(self._bits[0]))
        self._bits = self.np_random.random(4) < 0.5
        self._t += 1
        return self._obs(), reward, False, self._t >= _EPISODE_STEPS, {}


for _env_id, _pixels in ((BITS_ID, False), (PIXELS_ID, True)):
    if _env_id not in gym.registry:
        gym.register(_env_id, entry_point=BitsEnv, kwargs={"pixels": _pixels})
