"""The rules of 2048 as array code: moves by row lookup tables, legality, spawns and chance codes.

Runs in: any (the 2048 env steps through these functions; tests and benchmarks call them directly).

A board is a uint8 [4, 4] array of tile *exponents*: 0 is an empty cell, e is the tile 2**e.
Exponents stop at 15 (the tile 32768): two 32768 tiles do not merge, so a row always encodes in
four 4-bit nibbles. Real play never gets there (a 65536 tile needs a board full of large tiles).

Moves. Every row of four exponents is one of 16**4 = 65,536 codes; `ROW_LEFT` holds, for each
code, the row after sliding it left and `ROW_LEFT_REWARD` the sum of the tiles it merged. The
tables are built once, vectorised, at import (tens of ms). A move in any direction reads the
board as four "lines" whose position 0 is the side the tiles move to, looks the lines up, and
writes them back. `moves` does all four directions of a batch of boards at once, so the env
learns its next afterstates, rewards and legal mask from one table lookup per step.

Merge rule (the standard game): tiles slide towards the move direction; two equal neighbours merge
once, the pair nearest the move side first, and a merged tile does not merge again in the same
move: [2,2,2,2] → [4,4,0,0], [2,2,4,0] → [4,4,0,0], [2,2,2,0] → [4,2,0,0] (all moving left).

Actions (as LightZero's and gym-2048's 2048 envs): 0 up, 1 right, 2 down, 3 left.

Chance codes. A spawn of exponent 1 (tile 2) or 2 (tile 4) at flat cell c (row-major, 0..15) has
code ``2 * c + (exponent - 1)``: 32 spawn codes. Code 32 (`NO_SPAWN_CODE`) means "no tile
spawned", which only follows an illegal move; `CHANCE_SPACE_SIZE` = 33 codes in all.
"""

from __future__ import annotations

import numpy as np

BOARD_SIDE = 4
NUM_CELLS = BOARD_SIDE * BOARD_SIDE
NUM_ACTIONS = 4
ACTION_NAMES = ("up", "right", "down", "left")
MAX_EXPONENT = 15
NUM_EXPONENTS = MAX_EXPONENT + 1  # observation planes: exponents 0 (empty) .. 15
FOUR_PROBABILITY = 0.1  # a new tile is a 4 with this probability, else a 2 (the original game)
SPAWN_CODES = 2 * NUM_CELLS
NO_SPAWN_CODE = SPAWN_CODES
CHANCE_SPACE_SIZE = SPAWN_CODES + 1

_NIBBLE_WEIGHTS = np.array([4096, 256, 16, 1], dtype=np.int64)  # position 0 is the high nibble


def _compact_left(rows: np.ndarray) -> np.ndarray:
    """Slide the non-empty cells of rows [R, 4] to the left, keeping their order."""
    order = np.argsort(rows == 0, axis=1, kind="stable")
    return np.take_along_axis(rows, order, axis=1)


def _build_row_tables() -> tuple[np.ndarray, np.ndarray]:
    """`ROW_LEFT` uint8 [65536, 4] and `ROW_LEFT_REWARD` int64 [65536] for every row code."""
    codes = np.arange(16**BOARD_SIDE, dtype=np.int64)
    rows = ((codes[:, None] // _NIBBLE_WEIGHTS) % 16).astype(np.int64)  # [R, 4]
    rows = _compact_left(rows)
    reward = np.zeros(codes.shape[0], dtype=np.int64)
    # One left-to-right pass: after merging pair (i, i+1) the cell i+1 is empty, so the merged
    # tile can never merge again in this move (no double merge).
    for i in range(BOARD_SIDE - 1):
        merge = (rows[:, i] != 0) & (rows[:, i] == rows[:, i + 1]) & (rows[:, i] < MAX_EXPONENT)
        rows[merge, i] += 1
        rows[merge, i + 1] = 0
        reward[merge] += np.left_shift(1, rows[merge, i])
    return _compact_left(rows).astype(np.uint8), reward


ROW_LEFT, ROW_LEFT_REWARD = _build_row_tables()


def _line_cells() -> np.ndarray:
    """int [4 actions, 4 lines, 4 positions] flat cells; position 0 is where tiles move to."""
    grid = np.arange(NUM_CELLS).reshape(BOARD_SIDE, BOARD_SIDE)
    up, right, down, left = grid.T, grid[:, ::-1], grid[::-1, :].T, grid
    return np.stack([up, right, down, left])


_LINE_CELLS = _line_cells()  # [4, 4, 4]
_FLAT_LINE_CELLS = _LINE_CELLS.reshape(NUM_ACTIONS, NUM_CELLS)  # [4, 16]
# For each action, the line position of each flat cell: un-does the gather of `_LINE_CELLS`.
_CELL_POSITIONS = np.argsort(_FLAT_LINE_CELLS, axis=1)  # [4, 16]


def moves(boards: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """All four moves of a batch of boards (before any spawn).

    Args:
        boards: uint8 [B, 4, 4] exponents.

    Returns:
        afterstates uint8 [B, 4 actions, 4, 4], rewards int64 [B, 4] (the merged tile values) and
        legal bool [B, 4] (the move changes the board).
    """
    flat = boards.reshape(-1, NUM_CELLS)
    lines = flat[:, _LINE_CELLS]  # [B, 4, 4, 4]
    codes = lines.astype(np.int64) @ _NIBBLE_WEIGHTS  # [B, 4, 4]
    moved = ROW_LEFT[codes].reshape(-1, NUM_ACTIONS, NUM_CELLS)  # [B, 4, 16] in line order
    after = np.take_along_axis(moved, _CELL_POSITIONS[None], axis=2)  # [B, 4, 16] in cell order
    rewards = ROW_LEFT_REWARD[codes].sum(axis=2)  # [B, 4]
    legal = (after != flat[:, None, :]).any(axis=2)
    return after.reshape(-1, NUM_ACTIONS, BOARD_SIDE, BOARD_SIDE), rewards, legal


def spawn(board: np.ndarray, rng: np.random.Generator) -> int:
    """Put a new tile on a uniformly chosen empty cell of `board`, in place.

    The tile is a 2 with probability 0.9, else a 4 (the original game's rule).

    Args:
        board: uint8 [4, 4] exponents with at least one empty cell.
        rng: The env's random generator.

    Returns:
        The chance code ``2 * cell + (exponent - 1)`` in [0, 32).

    Raises:
        ValueError: The board has no empty cell.
    """
    empty = np.flatnonzero(board.reshape(-1) == 0)
    if empty.size == 0:
        raise ValueError("cannot spawn a tile on a full 2048 board")
    cell = int(empty[rng.integers(empty.size)])
    exponent = 2 if rng.random() < FOUR_PROBABILITY else 1
    board.reshape(-1)[cell] = exponent
    return chance_code(cell, exponent)


def chance_code(cell: int, exponent: int) -> int:
    """The chance code of a spawn of tile 2**exponent (exponent 1 or 2) at flat cell `cell`."""
    return 2 * cell + exponent - 1


def decode_chance(code: int) -> tuple[int, int]:
    """(flat cell, exponent) of a spawn chance code in [0, 32)."""
    return code // 2, code % 2 + 1


def planes(board: np.ndarray) -> np.ndarray:
    """The observation of a board: one-hot exponent planes.

    Args:
        board: uint8 [4, 4] exponents.

    Returns:
        float32 [16, 4, 4]; plane e is 1 where the cell holds exponent e (plane 0: empty cells).
    """
    exponents = np.arange(NUM_EXPONENTS, dtype=np.uint8)[:, None, None]
    return (board[None] == exponents).astype(np.float32)


def from_tiles(tiles: np.ndarray | list[list[int]]) -> np.ndarray:
    """A board of exponents from tile values (0 for empty), e.g. [[2, 2, 4, 0], ...].

    Raises:
        ValueError: Not a 4×4 grid of 0 and powers of two from 2 to 32768.
    """
    values = np.asarray(tiles, dtype=np.int64)
    if values.shape != (BOARD_SIDE, BOARD_SIDE):
        raise ValueError(f"a 2048 board is 4×4 tiles, got shape {values.shape}")
    exponents = np.zeros(values.shape, dtype=np.int64)
    nonzero = values > 0
    exponents[nonzero] = np.log2(values[nonzero]).round().astype(np.int64)
    valid = (values == 0) | ((exponents >= 1) & (exponents <= MAX_EXPONENT))
    if not valid.all() or (np.left_shift(1, exponents[nonzero]) != values[nonzero]).any():
        raise ValueError(f"2048 tiles must be 0 or powers of two in [2, 32768], got {values}")
    return exponents.astype(np.uint8)


def to_tiles(board: np.ndarray) -> np.ndarray:
    """Tile values int64 [..., 4, 4] of boards of exponents (0 stays 0)."""
    exponents = board.astype(np.int64)
    return np.where(exponents > 0, np.left_shift(1, exponents), 0)
