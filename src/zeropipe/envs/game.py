"""One environment instance behind a uniform interface: the `Game` protocol and its gymnasium form.

Runs in: collector | evaluator.

A `Game` separates an *episode* (what the learner sees end in `terminated`/`truncated`) from a
*game* (what a score is reported for). They differ only for Atari with episodic life, where a lost
life ends a training episode but the game goes on; see `atari.AtariGame`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import gymnasium as gym
import numpy as np

from zeropipe.envs.env_state import env_state, set_env_state
from zeropipe.envs.spec import scale_action


@dataclass(frozen=True)
class GameStep:
    """The result of one agent step of one game.

    Attributes:
        frame: Observation after the step, shape `EnvSpec.frame_shape`.
        reward: Training reward (clipped where configured).
        raw_reward: Unclipped reward, summed into the reported game return.
        terminated: The episode ended in a terminal state (a lost life with episodic life).
        truncated: The episode hit a time limit; never set together with `terminated`.
        game_over: The game itself ended; the next episode starts a new game.
        action_mask: bool [A] legal actions at `frame`, or None when every action is legal.
        chance: the step's chance outcome as an int code, when the env reports one as
            `info["chance"]` (e.g. 2048's spawn); None otherwise.
    """

    frame: np.ndarray
    reward: float
    raw_reward: float
    terminated: bool
    truncated: bool
    game_over: bool
    action_mask: np.ndarray | None
    chance: int | None = None


class Game(Protocol):
    """One environment instance as `EnvBatch` drives it."""

    def reset(self, seed: int | None = None) -> tuple[np.ndarray, np.ndarray | None]:
        """Start a new game; a seed re-seeds every RNG of the game. Returns (frame, action_mask)."""
        ...

    def next_episode(self) -> tuple[np.ndarray, np.ndarray | None]:
        """Start the episode after a finished one (continuing the game if it is not over)."""
        ...

    def step(self, action: int | np.ndarray) -> GameStep:
        """Play one agent step: an action index in [0, A), or a [D] float action in [-1, 1]."""
        ...

    def render(self) -> np.ndarray | None:
        """The current screen, uint8 [H, W, 3], for a game made with render_mode="rgb_array"."""
        ...

    def state(self) -> Any:
        """The game mid-episode as plain data (`envs/env_state.py`), or None if it cannot be
        captured (a resumed run then starts a new episode)."""
        ...

    def set_state(self, state: Any) -> None:
        """Continue from a `state()` of a game made from the same config."""
        ...

    def close(self) -> None:
        """Release the environment."""
        ...


def info_action_mask(info: dict[str, Any], num_actions: int) -> np.ndarray | None:
    """The legal-action mask an env publishes as `info["action_mask"]`, if any.

    Args:
        info: The info dict of a reset or step.
        num_actions: A.

    Returns:
        bool [A], or None when the env provides no mask.
    """
    mask = info.get("action_mask")
    if mask is None:
        return None
    return np.asarray(mask, dtype=bool).reshape(num_actions)


def gym_frame(obs: Any, dtype: np.dtype, channels_last: bool) -> np.ndarray:
    """A fresh frame of `dtype` from a gymnasium Box observation; with `channels_last`, an
    (H, W, C) image becomes (C, H, W), the layout of the conv encoder."""
    frame = np.array(obs, dtype=dtype)
    if channels_last:
        frame = np.ascontiguousarray(frame.transpose(2, 0, 1))
    return frame


class GymGame:
    """A gymnasium env with Discrete or Box actions and Box observations; frames are `gym_frame`
    copies. A Box action arrives in [-1, 1]^D and is scaled to the space's bounds.

    Args:
        env: The env, created with its time limit already applied.
        frame_dtype: The frame dtype (`EnvSpec.frame_dtype`): float32, or uint8 for uint8 spaces.
        channels_last: Observations are (H, W, C) images, handed on as (C, H, W).
    """

    def __init__(
        self, env: gym.Env, frame_dtype: np.dtype | None = None, channels_last: bool = False
    ) -> None:
        self._env = env
        self._dtype = np.dtype(np.float32 if frame_dtype is None else frame_dtype)
        self._channels_last = channels_last
        space = env.action_space
        self._bounds: tuple[np.ndarray, np.ndarray] | None = None
        if isinstance(space, gym.spaces.Box):
            self._bounds = (space.low.astype(np.float64), space.high.astype(np.float64))
            self._num_actions = int(space.shape[0])
            self._action_start = 0
        else:
            assert isinstance(space, gym.spaces.Discrete)
            self._num_actions = int(space.n)
            self._action_start = int(space.start)

    def reset(self, seed: int | None = None) -> tuple[np.ndarray, np.ndarray | None]:
        """Reset the env, seeding its RNG when a seed is given. Returns (frame, action_mask)."""
        obs, info = self._env.reset(seed=seed)
        frame = gym_frame(obs, self._dtype, self._channels_last)
        return frame, info_action_mask(info, self._num_actions)

    def next_episode(self) -> tuple[np.ndarray, np.ndarray | None]:
        """Reset without a seed: the env's RNG stream continues."""
        return self.reset()

    def step(self, action: int | np.ndarray) -> GameStep:
        """Step the env; an episode's end is also the game's end."""
        if self._bounds is None:
            env_action: Any = int(action) + self._action_start
        else:
            env_action = scale_action(np.asarray(action), *self._bounds)
        obs, reward, terminated, truncated, info = self._env.step(env_action)
        terminated = bool(terminated)
        truncated = bool(truncated) and not terminated
        return GameStep(
            frame=gym_frame(obs, self._dtype, self._channels_last),
            reward=float(reward),
            raw_reward=float(reward),
            terminated=terminated,
            truncated=truncated,
            game_over=terminated or truncated,
            action_mask=info_action_mask(info, self._num_actions),
            chance=None if info.get("chance") is None else int(info["chance"]),
        )

    def render(self) -> np.ndarray | None:
        """The env's `render()`: uint8 [H, W, 3] when made with render_mode="rgb_array"."""
        return self._env.render()  # type: ignore[return-value]

    def state(self) -> list[dict[str, Any]] | None:
        """`env_state` of the env (None for an env that keeps its state in a native object)."""
        return env_state(self._env)

    def set_state(self, state: list[dict[str, Any]]) -> None:
        """`set_env_state`."""
        set_env_state(self._env, state)

    def close(self) -> None:
        """Close the env."""
        self._env.close()
