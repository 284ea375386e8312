"""The 2048 game as a gymnasium env, registered as ``zeropipe/2048-v0``, and its random baseline.

Runs in: any (collectors and evaluators step it through `EnvBatch`; benchmarks and tests too).

Rules (see `board2048` for the move tables): a 4×4 board starts with two spawned tiles; after each
legal move one new tile appears on a uniformly chosen empty cell, a 2 with probability 0.9, else a
4. The reward of a move is the sum of the tiles its merges create (the game's score increment).
The episode terminates when no move changes the board. The id has no time limit; set
`EnvConfig.max_episode_steps` for one.

Observation: float32 [16, 4, 4] one-hot exponent planes, plane e marking the cells that hold 2**e
(plane 0 marks the empty cells); float32 because `GymGame` hands vector envs' frames on as float32.

Info (reset and step): ``action_mask`` bool [4] (the legal moves, read by `GymGame`; all False at
a terminal board), ``score`` (the game's score so far) and ``max_tile``. Step info also has
``chance``, the chance outcome of the step as an int code in [0, `CHANCE_SPACE_SIZE`) = [0, 33):
``2 * cell + (exponent - 1)`` for a spawn of tile 2**exponent at flat cell ``cell`` (row-major),
or 32 (`NO_SPAWN_CODE`) when no tile spawned; and ``illegal_move`` (bool).

Illegal moves. zeropipe's search and action selection only pick actions of the mask, so an illegal
move is a policy bug; taken anyway it is a no-op step: the board is unchanged, no tile spawns,
the reward is 0, the episode does not end (a legal move exists, else it would have ended), and
info has ``illegal_move=True`` and ``chance=NO_SPAWN_CODE``.

Seeding: gymnasium's ``reset(seed=...)`` seeds `np_random`, which alone draws every spawn, so a
seeded reset followed by the same actions replays the same game.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from zeropipe.envs import board2048
from zeropipe.envs.board2048 import NO_SPAWN_CODE, NUM_ACTIONS, NUM_EXPONENTS
from zeropipe.envs.spec import EnvError

GAME_2048_ENV_ID = "zeropipe/2048-v0"


class Game2048Env(gym.Env[np.ndarray, int]):
    """2048 on a 4×4 board; see the module docstring for rules, observation and info."""

    metadata: dict[str, Any] = {"render_modes": []}  # noqa: RUF012 (gymnasium's class attribute)

    def __init__(self) -> None:
        side = board2048.BOARD_SIDE
        self.observation_space = gym.spaces.Box(
            0.0, 1.0, shape=(NUM_EXPONENTS, side, side), dtype=np.float32
        )
        self.action_space = gym.spaces.Discrete(NUM_ACTIONS)
        self._board = np.zeros((side, side), dtype=np.uint8)
        self._score = 0
        self._after = np.zeros((NUM_ACTIONS, side, side), dtype=np.uint8)  # [4, 4, 4]
        self._rewards = np.zeros(NUM_ACTIONS, dtype=np.int64)  # [4]
        self._legal = np.zeros(NUM_ACTIONS, dtype=bool)  # [4]

    @property
    def board(self) -> np.ndarray:
        """A copy of the board: uint8 [4, 4] tile exponents (0 empty)."""
        return self._board.copy()

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Start a game: an empty board with two spawned tiles."""
        super().reset(seed=seed)
        self._board[:] = 0
        self._score = 0
        board2048.spawn(self._board, self.np_random)
        board2048.spawn(self._board, self.np_random)
        self._plan_moves()
        return board2048.planes(self._board), self._info()

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """Play a move (0 up, 1 right, 2 down, 3 left), then spawn a tile if it was legal.

        Raises:
            EnvError: The action is not in [0, 4).
        """
        if not 0 <= int(action) < NUM_ACTIONS:
            raise EnvError(f"2048 action must be in [0, {NUM_ACTIONS}), got {action!r}")
        if not self._legal[action]:
            info = self._info(chance=NO_SPAWN_CODE, illegal_move=True)
            return board2048.planes(self._board), 0.0, False, False, info
        reward = int(self._rewards[action])
        self._board[:] = self._after[action]
        self._score += reward
        chance = board2048.spawn(self._board, self.np_random)
        self._plan_moves()
        terminated = not self._legal.any()
        info = self._info(chance=chance, illegal_move=False)
        return board2048.planes(self._board), float(reward), terminated, False, info

    def set_board(self, board: np.ndarray, score: int = 0) -> np.ndarray:
        """Replace the board (for tests and analysis); the RNG stream is untouched.

        Args:
            board: uint8 [4, 4] tile exponents, e.g. from `board2048.from_tiles`.
            score: The score to continue from.

        Returns:
            The observation float32 [16, 4, 4] of the new board.

        Raises:
            EnvError: Wrong shape or an exponent above 15.
        """
        board = np.asarray(board)
        if board.shape != self._board.shape or not 0 <= board.min() <= board.max() <= 15:
            raise EnvError(f"a 2048 board is 4×4 exponents in [0, 15], got {board}")
        self._board[:] = board
        self._score = score
        self._plan_moves()
        return board2048.planes(self._board)

    def _plan_moves(self) -> None:
        after, rewards, legal = board2048.moves(self._board[None])
        self._after, self._rewards, self._legal = after[0], rewards[0], legal[0]

    def _info(self, **extra: Any) -> dict[str, Any]:
        return {
            "action_mask": self._legal.copy(),
            "score": self._score,
            "max_tile": 1 << int(self._board.max()),
            **extra,
        }


def register_2048_env() -> None:
    """Register `GAME_2048_ENV_ID` in gymnasium (idempotent); it has no time limit."""
    if GAME_2048_ENV_ID not in gym.registry:
        gym.register(id=GAME_2048_ENV_ID, entry_point="zeropipe.envs.env2048:Game2048Env")


def random_policy_scores(num_games: int, seed: int) -> np.ndarray:
    """Final scores of a uniformly random legal-move policy: the baseline a 2048 agent must beat.

    One env is reset with `seed` once and then plays `num_games` games in a row (its RNG stream
    continues through the resets); the moves are drawn from ``default_rng(seed)``.

    Args:
        num_games: Games to play.
        seed: Seeds both the spawns and the moves.

    Returns:
        int64 [num_games] final scores (sums of merged tile values).
    """
    env = Game2048Env()
    rng = np.random.default_rng(seed)
    scores = np.zeros(num_games, dtype=np.int64)
    _, info = env.reset(seed=seed)
    for game in range(num_games):
        if game > 0:
            _, info = env.reset()
        terminated = False
        while not terminated:
            action = int(rng.choice(np.flatnonzero(info["action_mask"])))
            _, _, terminated, _, info = env.step(action)
        scores[game] = info["score"]
    return scores
