"""The sequential-halving schedule: visit counts worked out by hand from the paper's rule."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from zeropipe.mcts.halving import (
    considered_visit_sequence,
    considered_visit_table,
    root_considered_visits,
)


@pytest.mark.parametrize(
    ("m", "n", "expected"),
    [
        # ⌈log2 4⌉ = 2 phases: 4 actions × ⌊16/8⌋ = 2 rounds, then 2 actions × ⌊16/4⌋ = 4 rounds.
        (4, 16, [0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5]),
        # One phase: 2 actions × ⌊4/2⌋ = 2 rounds.
        (2, 4, [0, 0, 1, 1]),
        # More simulations than the phases use: the last phase (2 actions) repeats, cut at n.
        (3, 10, [0, 0, 0, 1, 1, 2, 2, 3, 3, 4]),
        # Fewer simulations than considered actions: Gumbel top-4 never completes.
        (4, 3, [0, 0, 0]),
        # A single action takes every visit.
        (1, 5, [0, 1, 2, 3, 4]),
    ],
)
def test_sequences_by_hand(m: int, n: int, expected: list[int]) -> None:
    assert list(considered_visit_sequence(m, n)) == expected


def test_sixteen_actions_fifty_simulations() -> None:
    # ⌈log2 16⌉ = 4: 16 actions × max(1, ⌊50/64⌋) = 1 round (16 zeros), 8 × ⌊50/32⌋ = 1 (8 ones),
    # 4 × ⌊50/16⌋ = 3 rounds (visits 2, 3, 4), 2 × ⌊50/8⌋ = 6 rounds (5..10), then 2 × 6 cut
    # after one round (11) at 50 entries.
    expected = [0] * 16 + [1] * 8 + [2] * 4 + [3] * 4 + [4] * 4
    for visit in range(5, 12):
        expected += [visit, visit]
    assert len(expected) == 50
    assert list(considered_visit_sequence(16, 50)) == expected


def test_every_phase_visits_the_survivors_equally() -> None:
    # The visits a schedule hands out: each entry c is one action going from c to c + 1 visits,
    # so at every prefix the counts are those of k actions at c and the rest at c + 1.
    for m, n in [(4, 50), (8, 100), (16, 200), (6, 37)]:
        sequence = considered_visit_sequence(m, n)
        assert sequence[:m] == (0,) * min(m, n)
        assert all(0 <= later - earlier <= 1 for earlier, later in itertools.pairwise(sequence))


def test_table_rows_and_per_root_rows() -> None:
    table = considered_visit_table(4, 8)
    assert table.shape == (5, 8) and table.dtype == np.int32
    assert table[2].tolist() == list(considered_visit_sequence(2, 8))
    assert table[4].tolist() == [0, 0, 0, 0, 1, 1, 2, 2]
    assert not table.flags.writeable
    # A root with 2 legal actions reads row 2; one with 6 reads row m = 4.
    mask = np.array([[True, False, True, False, False, False], [True] * 6])
    rows = root_considered_visits(mask, 4, 8)
    assert rows.tolist() == [table[2].tolist(), table[4].tolist()]


def _halving_can_follow(row: list[int], num_legal: int) -> bool:
    """Plays a schedule row on `num_legal` actions: each simulation must find an action whose
    visit count is the row's entry (any such action will do; the first is taken)."""
    visits = [0] * num_legal
    for required in row:
        eligible = [a for a in range(num_legal) if visits[a] == required]
        if not eligible:
            return False
        visits[eligible[0]] += 1
    return True


def test_lightzero_considered_count_is_a_defect_with_fewer_legal_actions() -> None:
    """LightZero reads the row min(m, num_simulations) (cnode.cpp:727) whatever the number of
    legal actions; mctx the row min(m, legal actions) (action_selection.py:144-147), as here.

    m = 4, 8 simulations, 3 legal actions. LightZero's row 4 is [0, 0, 0, 0, 1, 1, 2, 2]
    (worked out in `test_table_rows_and_per_root_rows`): after the three legal actions have one
    visit each, simulation 3 asks for an action with 0 visits and none exists (LightZero's
    `cselect_root_child` then falls back to the first legal action, whatever its score). Row 3,
    [0, 0, 0, 1, 1, 2, 2, 3] by hand (phases ⌈log2 3⌉ = 2: 3 × ⌊8/6⌋ = 1 round, then
    2 × ⌊8/4⌋ = 2 rounds, then the last phase again, cut at 8), can always be followed.
    """
    table = considered_visit_table(4, 8)
    lightzero_row = table[min(4, 8)].tolist()
    ours = root_considered_visits(np.array([[True, True, False, True]]), 4, 8)[0].tolist()
    assert ours == [0, 0, 0, 1, 1, 2, 2, 3]
    assert not _halving_can_follow(lightzero_row, 3)
    assert _halving_can_follow(ours, 3)
