"""2048 rules as arrays: merges in all four directions, rewards, legality, spawns, chance codes."""

from __future__ import annotations

import numpy as np
import pytest

from zeropipe.envs import board2048
from zeropipe.envs.board2048 import from_tiles, moves, to_tiles

UP, RIGHT, DOWN, LEFT = range(4)


def _move(tiles: list[list[int]], action: int) -> tuple[np.ndarray, int, bool]:
    after, rewards, legal = moves(from_tiles(tiles)[None])
    return to_tiles(after[0, action]), int(rewards[0, action]), bool(legal[0, action])


def _row_left(row: list[int]) -> tuple[list[int], int]:
    tiles, reward, _ = _move([row, [0] * 4, [0] * 4, [0] * 4], LEFT)
    return tiles[0].tolist(), reward


@pytest.mark.parametrize(
    ("row", "expected", "reward"),
    [
        ([2, 2, 4, 0], [4, 4, 0, 0], 4),  # the merged 4 does not merge again with the old 4
        ([2, 2, 2, 2], [4, 4, 0, 0], 8),
        ([2, 2, 2, 0], [4, 2, 0, 0], 4),  # the pair nearest the move side merges first
        ([0, 2, 2, 2], [4, 2, 0, 0], 4),
        ([4, 4, 8, 8], [8, 16, 0, 0], 24),
        ([2, 0, 0, 2], [4, 0, 0, 0], 4),
        ([4, 2, 2, 0], [4, 4, 0, 0], 4),
        ([8, 8, 8, 0], [16, 8, 0, 0], 16),
        ([0, 0, 0, 2], [2, 0, 0, 0], 0),
        ([2, 4, 8, 16], [2, 4, 8, 16], 0),
        ([32768, 32768, 2, 2], [32768, 32768, 4, 0], 4),  # 32768 is the largest tile
    ],
)
def test_row_moves_left(row: list[int], expected: list[int], reward: int) -> None:
    assert _row_left(row) == (expected, reward)


def _textbook_row_left(exponents: list[int]) -> tuple[list[int], int]:
    """The game's rule written plainly: slide, merge neighbours once from the left, slide."""
    tiles = [e for e in exponents if e]
    merged: list[int] = []
    reward = 0
    while tiles:
        if len(tiles) > 1 and tiles[0] == tiles[1] and tiles[0] < board2048.MAX_EXPONENT:
            merged.append(tiles[0] + 1)
            reward += 2 ** (tiles[0] + 1)
            tiles = tiles[2:]
        else:
            merged.append(tiles.pop(0))
    return merged + [0] * (4 - len(merged)), reward


def test_row_table_matches_the_textbook_rule_for_every_row() -> None:
    for code in range(16**4):
        row = [(code >> shift) & 15 for shift in (12, 8, 4, 0)]
        expected, reward = _textbook_row_left(row)
        assert board2048.ROW_LEFT[code].tolist() == expected, row
        assert board2048.ROW_LEFT_REWARD[code] == reward, row


def test_each_direction_moves_and_merges_towards_its_side() -> None:
    board = [[2, 2, 2, 0], [0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]]
    tiles, reward, legal = _move(board, RIGHT)
    assert tiles[0].tolist() == [0, 0, 2, 4] and reward == 4 and legal
    column = [[2, 0, 0, 0], [2, 0, 0, 0], [2, 0, 0, 0], [0, 0, 0, 0]]
    tiles, reward, legal = _move(column, UP)
    assert tiles[:, 0].tolist() == [4, 2, 0, 0] and reward == 4 and legal
    tiles, reward, legal = _move(column, DOWN)
    assert tiles[:, 0].tolist() == [0, 0, 2, 4] and reward == 4 and legal
    tiles, reward, legal = _move(column, LEFT)
    assert tiles.tolist() == column and reward == 0 and not legal


def test_all_directions_of_a_full_board_match_rotated_left_moves() -> None:
    rng = np.random.default_rng(3)
    boards = rng.integers(0, 5, size=(200, 4, 4)).astype(np.uint8)
    after, rewards, legal = moves(boards)
    for index, board in enumerate(boards):
        # Rotating the board so that the move side is on the left turns every move into "left".
        for action, turns in ((UP, 1), (RIGHT, 2), (DOWN, 3), (LEFT, 0)):
            rotated = np.rot90(board, turns)
            left, left_reward, left_legal = moves(rotated[None])
            np.testing.assert_array_equal(np.rot90(left[0, LEFT], -turns), after[index, action])
            assert rewards[index, action] == left_reward[0, LEFT]
            assert legal[index, action] == left_legal[0, LEFT]


def test_reward_is_the_sum_of_merged_tiles_over_all_rows() -> None:
    board = [[2, 2, 0, 0], [4, 4, 4, 4], [8, 0, 8, 2], [16, 32, 64, 128]]
    tiles, reward, legal = _move(board, LEFT)
    assert tiles.tolist() == [[4, 0, 0, 0], [8, 8, 0, 0], [16, 2, 0, 0], [16, 32, 64, 128]]
    assert reward == 4 + 8 + 8 + 16 and legal


def test_a_board_without_moves_has_no_legal_action() -> None:
    checker = [[2, 4, 2, 4], [4, 2, 4, 2], [2, 4, 2, 4], [4, 2, 4, 2]]
    _, rewards, legal = moves(from_tiles(checker)[None])
    assert not legal.any() and not rewards.any()


def test_spawn_picks_a_2_or_4_with_odds_9_to_1_uniformly_over_empty_cells() -> None:
    rng = np.random.default_rng(0)
    num_spawns = 40_000
    # Row 0 full: the 12 empty cells of rows 1-3 are the only candidates.
    board = from_tiles([[2, 4, 8, 16], [0] * 4, [0] * 4, [0] * 4])
    counts = np.zeros((16, 3), dtype=np.int64)  # [cell, exponent]
    for _ in range(num_spawns):
        trial = board.copy()
        code = board2048.spawn(trial, rng)
        cell, exponent = board2048.decode_chance(code)
        assert np.flatnonzero(trial != board).tolist() == [cell]
        assert trial.reshape(-1)[cell] == exponent
        counts[cell, exponent] += 1
    assert counts[:4].sum() == 0 and counts[:, 0].sum() == 0
    fours = counts[:, 2].sum() / num_spawns
    assert abs(fours - 0.1) < 5 * np.sqrt(0.1 * 0.9 / num_spawns)  # 5 sigma: ±0.0075
    per_cell = counts[4:].sum(axis=1)
    expected = num_spawns / 12
    sigma = np.sqrt(num_spawns * (1 / 12) * (11 / 12))
    assert np.all(np.abs(per_cell - expected) < 5 * sigma), per_cell


def test_spawn_on_a_full_board_is_an_error() -> None:
    board = from_tiles([[2, 4, 2, 4], [4, 2, 4, 2], [2, 4, 2, 4], [4, 2, 4, 2]])
    with pytest.raises(ValueError, match="full 2048 board"):
        board2048.spawn(board, np.random.default_rng(0))


def test_chance_codes_cover_every_spawn_once() -> None:
    codes = {board2048.chance_code(cell, exp) for cell in range(16) for exp in (1, 2)}
    assert codes == set(range(board2048.SPAWN_CODES))
    assert board2048.CHANCE_SPACE_SIZE == board2048.NO_SPAWN_CODE + 1 == 33
    assert all(board2048.decode_chance(board2048.chance_code(5, e)) == (5, e) for e in (1, 2))


def test_planes_are_one_hot_exponents() -> None:
    board = from_tiles([[0, 2, 4, 8], [0] * 4, [0] * 4, [0, 0, 0, 32768]])
    planes = board2048.planes(board)
    assert planes.shape == (16, 4, 4) and planes.dtype == np.float32
    np.testing.assert_array_equal(planes.sum(axis=0), np.ones((4, 4)))
    assert planes[0].sum() == 12 and planes[1, 0, 1] == planes[3, 0, 3] == planes[15, 3, 3] == 1


@pytest.mark.parametrize(
    "tiles", [[[3, 0, 0, 0]] + [[0] * 4] * 3, [[0] * 4] * 3, [[65536] + [0] * 3] * 4]
)
def test_from_tiles_rejects_bad_boards(tiles: list[list[int]]) -> None:
    with pytest.raises(ValueError, match="2048"):
        from_tiles(tiles)
