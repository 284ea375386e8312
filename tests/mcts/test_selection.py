"""PUCT scores, Q normalisation and tie-breaking on a hand-built tree."""

from __future__ import annotations

import math

import numpy as np
import pytest

from zeropipe.mcts.selection import PuctParams, normalized_q, puct_select
from zeropipe.mcts.tree import Tree, allocate_tree

PARAMS = PuctParams(discount=1.0, pb_c_base=19652.0, pb_c_init=1.25, value_delta_max=0.01)


def _hand_tree() -> Tree:
    """One root with priors [.5, .3, .2], child visits [2, 1, 0] and child Q [1.0, 0.5, -]."""
    tree = allocate_tree(batch_size=1, num_nodes=4, num_actions=3)
    tree.children_prior[0, 0] = [0.5, 0.3, 0.2]
    tree.children_visits[0, 0] = [2, 1, 0]
    tree.children_value[0, 0] = [1.0, 0.5, 0.0]
    tree.children_index[0, 0] = [1, 2, -1]
    tree.node_visits[0, 0] = 4
    tree.node_value_sum[0, 0] = 3.0  # root value 0.75
    tree.root_legal[0] = True
    tree.min_q[0], tree.max_q[0] = 0.5, 1.0
    return tree


def test_puct_scores_match_the_formula() -> None:
    tree = _hand_tree()
    scores = np.empty(3)
    action = puct_select(tree, PARAMS, 0, 0, True, scores)
    pb_c = math.log((3 + 19652.0 + 1) / 19652.0) + 1.25
    explore = pb_c * math.sqrt(3)
    fill = (0.75 + 1.0 + 0.5) / 3  # node value and the visited children's Q
    expected = [
        1.0 + explore * 0.5 / 3,  # (1.0 - 0.5) / 0.5 = 1
        0.0 + explore * 0.3 / 2,  # the minimum normalises to 0
        (fill - 0.5) / 0.5 + explore * 0.2,
    ]
    np.testing.assert_allclose(scores, expected, rtol=1e-6)
    assert action == 0


def test_illegal_root_actions_are_never_selected() -> None:
    tree = _hand_tree()
    tree.root_legal[0, 0] = False
    scores = np.empty(3)
    assert puct_select(tree, PARAMS, 0, 0, True, scores) == 2
    assert scores[0] == -np.inf
    # Below the root every action is legal.
    assert puct_select(tree, PARAMS, 0, 0, False, scores) == 0


def test_ties_go_to_the_lowest_action() -> None:
    tree = allocate_tree(batch_size=1, num_nodes=2, num_actions=4)
    tree.children_prior[0, 0] = 0.25
    tree.root_legal[0] = True
    tree.node_visits[0, 0] = 1
    scores = np.empty(4)
    assert puct_select(tree, PARAMS, 0, 0, True, scores) == 0
    tree.children_prior[0, 0, 2] = 0.25 + 1e-7  # inside the 1e-6 tolerance: still a tie
    tree.children_visits[0, 0] = [1, 1, 1, 1]
    assert puct_select(tree, PARAMS, 0, 0, True, scores) == 0


@pytest.mark.parametrize(
    ("low", "high", "q", "expected"),
    [
        (np.inf, -np.inf, 0.4, 0.4),  # no range yet: unchanged (then clamped)
        (np.inf, -np.inf, 3.0, 1.0),
        (0.0, 2.0, 1.5, 0.75),
        (0.0, 0.001, 0.0005, 0.05),  # range below value_delta_max: divide by 0.01
        (0.0, 2.0, 5.0, 1.0),
    ],
)
def test_normalized_q(low: float, high: float, q: float, expected: float) -> None:
    tree = allocate_tree(batch_size=1, num_nodes=1, num_actions=1)
    tree.min_q[0], tree.max_q[0] = low, high
    assert normalized_q(tree, 0, q, 0.01) == pytest.approx(expected, rel=1e-4)
