"""An ALE Atari game with the DQN / LightZero preprocessing; frame skip applied in one place.

Runs in: collector | evaluator.

The env is created with ``frameskip=1, repeat_action_probability=0.0, full_action_space=False``
(see `registry.make_gym_env`), so the ALE itself neither skips nor repeats. ALE v5 ids default to
a skip of 4 and sticky actions 0.25, and wrapping them again silently halves the control rate
(LightZero PR #494). The steps below are the classic wrapper stack (Mnih et al. 2015; Machado et
al. 2018 for sticky actions; LightZero `wrap_lightzero`), as one class:

- noop reset: 1..`noop_max` single-frame no-ops after a new game (random start states);
- sticky actions: each frame repeats the previously executed action with `sticky_action_prob`;
- max-and-skip: one agent step is `frame_skip` frames, the frame is the pixel max of the last two
  (Atari sprites flicker between frames);
- episodic life (collect only): a lost life ends the training episode, the game goes on after a
  no-op step (and FIRE) as in baselines' EpisodicLifeEnv;
- fire reset: games whose action 1 is FIRE get FIRE, then action 2, after every (re)start (these
  automatic steps are not agent steps: their rewards, zero in practice, are not counted);
- time limit: `max_episode_steps` / `eval_max_episode_steps` agent steps per game, besides the
  ALE's own frame limit (`max_num_frames_per_episode`, 108000 frames for the registered ids);
- warp: grayscale (the ALE's luminance) or RGB, area-resized to `obs_size`, uint8 [C, S, S]
  (not scaled to [0, 1] here: the replay stores uint8, the model scales);
- reward clipping to the sign (collect only, `clip_rewards`).

Why not gymnasium's wrappers: `AtariPreprocessing` needs OpenCV and resets the game on a lost life
rather than continuing it; a stack of per-frame wrappers copies every frame's screen. Driving the
ALE directly fetches only the two screens that are max-pooled. The env's `reset` is still used, so
seeding goes through the ALE's own path.

Why not ale-py's vector env (`ale_py.vector_env.AtariVectorEnv`, games stepped by C++ threads):
its preprocessing gives other observations for the same seed and actions. It presses FIRE before
the no-ops rather than after them, draws 0..noop_max-1 no-ops from its own C++ RNG, restarts the
whole game on a lost life with episodic life (rather than continuing it), counts its time limit in
frames and resizes with OpenCV's fixed-point INTER_AREA. Nor can Python threads step these games in
parallel: `ALEInterface.act` holds the GIL. Most of a step is the emulator itself (`act`, about
three quarters of the CPU time of a Pong step; screen fetches and the resize share the rest), and
tests/envs/test_atari_trace.py pins the observations frame by frame for any faster path.
"""

from __future__ import annotations

from typing import Literal

import ale_py
import gymnasium as gym
import numpy as np

from zeropipe.config import EnvConfig
from zeropipe.envs.frame import AreaResize
from zeropipe.envs.game import GameStep

_NOOP = 0
_FIRE = 1


class AtariGame:
    """One Atari game; see the module docstring for the preprocessing.

    Args:
        env: An ALE env created with frameskip=1 and no sticky actions.
        cfg: The env config (skip, stickiness, noops, life handling, frame format).
        mode: "collect" (episodic life and reward clipping as configured) or "eval" (full games,
            raw rewards).
    """

    def __init__(self, env: gym.Env, cfg: EnvConfig, mode: Literal["collect", "eval"]) -> None:
        self._env = env
        self._ale = env.unwrapped.ale  # type: ignore[attr-defined]
        self._action_set = list(self._ale.getMinimalActionSet())
        meanings = env.unwrapped.get_action_meanings()  # type: ignore[attr-defined]
        self._needs_fire = len(meanings) >= 3 and meanings[_FIRE] == "FIRE"
        self._frame_skip = cfg.frame_skip
        self._sticky_prob = cfg.sticky_action_prob
        self._noop_max = cfg.noop_max
        collect = mode == "collect"
        self._episode_life = cfg.episode_life and collect
        self._clip_rewards = cfg.clip_rewards and collect
        self._max_steps = cfg.max_episode_steps if collect else cfg.eval_max_episode_steps
        height, width = self._ale.getScreenDims()
        screen_shape = (height, width) if cfg.gray_scale else (height, width, 3)
        self._grab = self._ale.getScreenGrayscale if cfg.gray_scale else self._ale.getScreenRGB
        self._screens = np.zeros((2, *screen_shape), dtype=np.uint8)  # last two frames of a step
        self._pooled = False  # whether both screens belong to the last step
        self._resize = AreaResize(height, width, cfg.obs_size)
        self._rng = np.random.default_rng()
        self._previous_action = self._action_set[_NOOP]
        self._lives = 0
        self._steps = 0
        self._game_over = True

    @property
    def ale(self) -> ale_py.ALEInterface:
        """The emulator, for tests and diagnostics (`getEpisodeFrameNumber`); never act on it."""
        return self._ale

    def reset(self, seed: int | None = None) -> tuple[np.ndarray, None]:
        """Start a new game: noop start, then FIRE if the game needs it.

        Args:
            seed: Re-seeds the ALE and this game's noop/sticky RNG; None continues both streams.

        Returns:
            (frame uint8 [C, S, S], None: every action is legal).
        """
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        self._env.reset(seed=seed)
        self._previous_action = self._action_set[_NOOP]
        self._steps = 0
        num_noops = int(self._rng.integers(1, self._noop_max + 1)) if self._noop_max > 0 else 0
        for _ in range(num_noops):
            self._ale.act(self._action_set[_NOOP])
            if self._ale.game_over():
                self._env.reset()
        self._grab(self._screens[1])
        self._pooled = False
        if self._needs_fire and not self._fire():
            return self.reset()
        self._lives = self._ale.lives()
        self._game_over = False
        return self._frame(), None

    def next_episode(self) -> tuple[np.ndarray, None]:
        """Continue the game after a lost life (a no-op step, then FIRE), or start a new game."""
        if self._game_over:
            return self.reset()
        self._advance(_NOOP)
        if self._ale.game_over() or (self._needs_fire and not self._fire()):
            return self.reset()
        self._lives = self._ale.lives()
        return self._frame(), None

    def step(self, action: int) -> GameStep:
        """Play one agent step (`frame_skip` frames) with an action index in [0, A)."""
        raw_reward = self._advance(action)
        self._steps += 1
        lives = self._ale.lives()
        life_lost = self._episode_life and 0 < lives < self._lives
        self._lives = lives
        game_terminated = self._ale.game_over(with_truncation=False)
        out_of_time = self._ale.game_truncated() or (
            self._max_steps is not None and self._steps >= self._max_steps
        )
        terminated = game_terminated or life_lost
        self._game_over = game_terminated or out_of_time
        return GameStep(
            frame=self._frame(),
            reward=float(np.sign(raw_reward)) if self._clip_rewards else raw_reward,
            raw_reward=raw_reward,
            terminated=terminated,
            truncated=out_of_time and not terminated,
            game_over=self._game_over,
            action_mask=None,
        )

    def render(self) -> np.ndarray | None:
        """The ALE screen, uint8 [210, 160, 3], when made with render_mode="rgb_array"."""
        return self._env.render()  # type: ignore[return-value]

    def state(self) -> None:
        """None: the emulator's state lives in the ALE; a resumed run starts a new game."""
        return None

    def set_state(self, state: None) -> None:
        """Nothing to restore (`state` is always None)."""

    def close(self) -> None:
        """Close the env."""
        self._env.close()

    def _advance(self, action: int) -> float:
        """Play `frame_skip` frames with sticky actions; keep the screens of the last two frames.

        Returns:
            The summed raw reward.
        """
        reward = 0.0
        chosen = self._action_set[action]
        last = self._frame_skip - 1
        for frame in range(self._frame_skip):
            if self._sticky_prob == 0.0 or self._rng.random() >= self._sticky_prob:
                self._previous_action = chosen
            reward += self._ale.act(self._previous_action)
            if frame == last - 1:
                self._grab(self._screens[0])
            if self._ale.game_over():
                break
        self._grab(self._screens[1])
        # Pool only two consecutive frames of this step (not when the game ended early).
        self._pooled = frame == last and self._frame_skip > 1
        return float(reward)

    def _fire(self) -> bool:
        """Press FIRE then action 2 (baselines' FireResetEnv). Returns False if the game ended."""
        for action in (_FIRE, 2):
            self._advance(action)
            if self._ale.game_over():
                return False
        return True

    def _frame(self) -> np.ndarray:
        """The current observation, uint8 [C, S, S]."""
        screen = (
            np.maximum(self._screens[0], self._screens[1]) if self._pooled else self._screens[1]
        )
        return self._resize(screen)
