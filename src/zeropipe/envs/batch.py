"""`EnvBatch`: the envs of one collector or evaluator, stepped together in-process, auto-resetting.

Runs in: collector | evaluator.

Seeding. Env i is seeded ``seed + i`` at its first reset. Afterwards its RNG stream continues
through auto-resets, so a batch built with the same seed and fed the same actions plays the same
episodes. In eval mode every `EnvBatch.reset` re-seeds from ``seed + i``, so an evaluator that calls
`reset()` at the start of each evaluation plays identical episodes for identical actions (the
reference fixed its evaluator seeds for this reason, LightZero PR #494). `EnvBatch.reseed` makes
the next `reset` re-seed in either mode, optionally from a new base seed.

Non-finite output. Every observation and reward an env returns is checked to be finite where it
comes in: a NaN or infinity stops the run with `NonFiniteEnvOutput`, naming the env id, the env,
the step and the field, instead of failing later somewhere that names none of them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from zeropipe.config import EnvConfig
from zeropipe.envs.game import Game
from zeropipe.envs.registry import EnvMode, make_game
from zeropipe.envs.spec import EnvError, EnvSpec, NonFiniteEnvOutput


@dataclass(frozen=True)
class BatchStep:
    """The outcome of one `EnvBatch.step` (n = num_envs, A = actions).

    Attributes:
        frames: [n, *frame] observations after the step; for an env whose episode ended, its final
            observation (the next episode's first one is in `reset_frames`).
        rewards: float32 [n] training rewards (sign-clipped for Atari in collect mode if set).
        terminated: bool [n] terminal states (in collect mode with episodic life, a lost life).
        truncated: bool [n] time limits hit; never set together with `terminated`.
        action_masks: bool [n, A] legal actions at `frames`.
        reset_frames: env index -> first observation of its new episode (it auto-reset).
        reset_action_masks: env index -> bool [A] legal actions at that observation.
        episode_returns: env index -> raw, unclipped return of a finished game (with episodic
            life only when the game itself ends; it sums all lives).
        episode_lengths: env index -> agent steps of that finished game.
        chances: int64 [n] each env's chance outcome of the step when every env reported one
            (`GameStep.chance`, e.g. 2048's spawn code), else None.
    """

    frames: np.ndarray
    rewards: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray
    action_masks: np.ndarray
    reset_frames: dict[int, np.ndarray]
    reset_action_masks: dict[int, np.ndarray]
    episode_returns: dict[int, float]
    episode_lengths: dict[int, int]
    chances: np.ndarray | None = None


class EnvBatch:
    """`num_envs` envs of one config stepped together, in-process, auto-resetting.

    Args:
        cfg: The env config.
        num_envs: Number of envs n.
        mode: "collect" or "eval"; eval uses `eval_max_episode_steps`, plays full Atari games
            with raw rewards, and re-seeds on every `reset`.
        seed: Base seed; env i uses ``seed + i``.

    Raises:
        EnvError: Bad id, unsupported spaces, num_envs < 1 or an unknown mode.
    """

    def __init__(self, cfg: EnvConfig, num_envs: int, mode: EnvMode, seed: int) -> None:
        if mode not in ("collect", "eval"):
            raise EnvError(f"EnvBatch mode must be 'collect' or 'eval', got {mode!r}")
        if num_envs < 1:
            raise EnvError(f"EnvBatch needs at least one env, got num_envs={num_envs}")
        self.num_envs = num_envs
        self.mode = mode
        self.env_id = cfg.env_id
        self._batch_steps = 0  # steps of this batch, for naming where an env went wrong
        self._seed = seed
        self._needs_seed = True
        self._games: list[Game] = []
        self.spec: EnvSpec
        try:
            for _ in range(num_envs):
                game, self.spec = make_game(cfg, mode)
                self._games.append(game)
        except BaseException:
            self.close()
            raise
        self._returns = np.zeros(num_envs, dtype=np.float64)
        self._lengths = np.zeros(num_envs, dtype=np.int64)
        self._all_legal = np.ones(self.spec.action_space_size, dtype=bool)
        self._started = False

    def reseed(self, seed: int | None = None) -> None:
        """Make the next `reset` seed env i with ``seed + i`` again.

        Args:
            seed: New base seed; None keeps the current one.
        """
        if seed is not None:
            self._seed = seed
        self._needs_seed = True

    def reset(self) -> tuple[np.ndarray, np.ndarray]:
        """Start a new game in every env (seeded on the first call, after `reseed`, and in eval).

        Returns:
            frames [n, *frame] and bool action masks [n, A].
        """
        seeded = self._needs_seed or self.mode == "eval"
        frames = np.empty((self.num_envs, *self.spec.frame_shape), dtype=self.spec.frame_dtype)
        masks = np.empty((self.num_envs, self.spec.action_space_size), dtype=bool)
        for index, game in enumerate(self._games):
            frame, mask = game.reset(self._seed + index if seeded else None)
            self._check_frame(index, frame, "reset")
            frames[index] = frame
            masks[index] = self._all_legal if mask is None else mask
        self._needs_seed = False
        self._returns[:] = 0.0
        self._lengths[:] = 0
        self._started = True
        return frames, masks

    def step(self, actions: np.ndarray) -> BatchStep:
        """Step every env once; envs whose episode ends auto-reset.

        Args:
            actions: int [n] action indices in [0, A), or float [n, D] actions in [-1, 1] for a
                Box action space (each game scales them to the env's bounds).

        Returns:
            The `BatchStep`.

        Raises:
            EnvError: Called before `reset`, or actions of the wrong shape or out of range.
        """
        actions = self._checked_actions(actions)
        n, spec = self.num_envs, self.spec
        frames = np.empty((n, *spec.frame_shape), dtype=spec.frame_dtype)
        masks = np.empty((n, spec.action_space_size), dtype=bool)
        rewards = np.empty(n, dtype=np.float32)
        terminated = np.zeros(n, dtype=bool)
        truncated = np.zeros(n, dtype=bool)
        chances = np.zeros(n, dtype=np.int64)
        out = BatchStep(frames, rewards, terminated, truncated, masks, {}, {}, {}, {}, chances)
        self._batch_steps += 1
        for index, game in enumerate(self._games):
            result = game.step(actions[index])
            self._check_step(index, result.frame, result.reward, result.raw_reward)
            frames[index] = result.frame
            masks[index] = self._all_legal if result.action_mask is None else result.action_mask
            rewards[index] = result.reward
            terminated[index] = result.terminated
            truncated[index] = result.truncated
            if result.chance is None:
                out = replace(out, chances=None)
            elif out.chances is not None:
                out.chances[index] = result.chance
            self._returns[index] += result.raw_reward
            self._lengths[index] += 1
            if result.game_over:
                out.episode_returns[index] = float(self._returns[index])
                out.episode_lengths[index] = int(self._lengths[index])
                self._returns[index] = 0.0
                self._lengths[index] = 0
            if result.terminated or result.truncated:
                frame, mask = game.next_episode()
                self._check_frame(index, frame, "reset")
                out.reset_frames[index] = frame
                out.reset_action_masks[index] = self._all_legal.copy() if mask is None else mask
        return out

    def state_dict(self) -> dict[str, Any] | None:
        """Every env mid-episode and the running returns, as plain data; None when an env's
        state cannot be captured (`Game.state`)."""
        games = [game.state() for game in self._games]
        if any(state is None for state in games):
            return None
        return {
            "games": games,
            "returns": self._returns.copy(),
            "lengths": self._lengths.copy(),
            "needs_seed": self._needs_seed,
            "started": self._started,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Continue from a `state_dict()` of a batch made from the same config and seed."""
        for game, game_state in zip(self._games, state["games"], strict=True):
            game.set_state(game_state)
        self._returns[:] = state["returns"]
        self._lengths[:] = state["lengths"]
        self._needs_seed = bool(state["needs_seed"])
        self._started = bool(state["started"])

    def close(self) -> None:
        """Close every env (safe to call twice)."""
        games, self._games = self._games, []
        for game in reversed(games):
            game.close()

    def __enter__(self) -> EnvBatch:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _check_step(self, index: int, frame: np.ndarray, reward: float, raw: float) -> None:
        """Raise `NonFiniteEnvOutput` for a NaN/inf reward or observation of env `index`'s step."""
        where = f"step {self._lengths[index] + 1} of its episode, batch step {self._batch_steps}"
        for value in (raw, reward):
            if not math.isfinite(value):
                raise NonFiniteEnvOutput(self._non_finite(index, "reward", f"{value}", where))
        self._check_frame(index, frame, where)

    def _check_frame(self, index: int, frame: np.ndarray, where: str) -> None:
        frame = np.asarray(frame)
        if np.issubdtype(frame.dtype, np.floating) and not np.isfinite(frame).all():
            bad = int(np.size(frame) - np.isfinite(frame).sum())
            what = f"{bad} of {np.size(frame)} values NaN or infinite"
            raise NonFiniteEnvOutput(self._non_finite(index, "observation", what, where))

    def _non_finite(self, index: int, field: str, what: str, where: str) -> str:
        return (
            f"env {self.env_id!r} ({self.mode} env {index}) returned a non-finite {field} at "
            f"{where} ({what}); the run stops here: fix the env or wrap it so its {field}s are "
            "finite"
        )

    def _checked_actions(self, actions: np.ndarray) -> np.ndarray:
        if not self._started:
            raise EnvError("EnvBatch.step() called before reset()")
        if not self._games:
            raise EnvError("EnvBatch.step() called after close()")
        actions = np.asarray(actions)
        if self.spec.continuous:
            return self._checked_continuous(actions)
        if actions.shape != (self.num_envs,) or not np.issubdtype(actions.dtype, np.integer):
            raise EnvError(
                f"EnvBatch.step() needs int actions of shape ({self.num_envs},), "
                f"got {actions.dtype} {actions.shape}"
            )
        if actions.min() < 0 or actions.max() >= self.spec.action_space_size:
            raise EnvError(
                f"actions must lie in [0, {self.spec.action_space_size}), got {actions.tolist()}"
            )
        return actions

    def _checked_continuous(self, actions: np.ndarray) -> np.ndarray:
        shape = (self.num_envs, self.spec.action_dim)
        if actions.shape != shape or not np.issubdtype(actions.dtype, np.floating):
            raise EnvError(
                f"EnvBatch.step() needs float actions of shape {shape}, "
                f"got {actions.dtype} {actions.shape}"
            )
        if not np.isfinite(actions).all() or np.abs(actions).max() > 1.0:
            raise EnvError(f"continuous actions must lie in [-1, 1], got {actions.tolist()}")
        return actions
