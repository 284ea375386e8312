"""PUCT scores, the parent-mean-Q chain, Q normalisation and tie-breaking on hand-built trees."""

from __future__ import annotations

import math

import numpy as np
import pytest

from zeropipe.mcts.selection import (
    PUCT,
    SearchParams,
    mean_q,
    normalized_q,
    puct_select,
    traverse_batch,
)
from zeropipe.mcts.tree import Tree, allocate_tree

PARAMS = SearchParams(
    discount=1.0,
    pb_c_base=19652.0,
    pb_c_init=1.25,
    value_delta_max=0.01,
    maxvisit_init=50.0,
    value_scale=0.1,
)


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
    # LightZero's root mean Q: the mean of the visited children's Q, the root's value aside.
    fill = mean_q(tree, 0, 0, True, 0.0, PARAMS.discount)
    assert fill == pytest.approx((1.0 + 0.5) / 2)
    action, node_mean = puct_select(tree, PARAMS, 0, 0, True, 0.0, scores)
    assert node_mean == fill
    pb_c = math.log((3 + 19652.0 + 1) / 19652.0) + 1.25  # N = root visits - 1 = 3
    explore = pb_c * math.sqrt(3)
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
    assert puct_select(tree, PARAMS, 0, 0, True, 0.0, scores)[0] == 2
    assert scores[0] == -np.inf
    # Below the root every action is legal.
    assert puct_select(tree, PARAMS, 0, 0, False, 0.75, scores)[0] == 0


def test_ties_go_to_the_lowest_action() -> None:
    tree = allocate_tree(batch_size=1, num_nodes=6, num_actions=4)
    tree.children_prior[0, 0] = 0.25
    tree.root_legal[0] = True
    tree.node_visits[0, 0] = 1
    scores = np.empty(4)
    assert puct_select(tree, PARAMS, 0, 0, True, 0.0, scores)[0] == 0
    # LightZero keeps a tie list within 1e-6 of the running maximum but restarts it at every
    # strictly larger score, so its deterministic pick (the list's first entry) is the first
    # exact maximum: a score larger by ~5e-7 still wins.
    tree.children_prior[0, 0, 2] = 0.25 + 4e-7  # float32: +4.2e-7
    tree.children_visits[0, 0] = [1, 1, 1, 1]
    tree.node_visits[0, 0] = 5
    assert puct_select(tree, PARAMS, 0, 0, True, 0.0, scores)[0] == 2
    assert 0.0 < scores[2] - scores[0] < 1e-6


def test_mean_q_chain_below_the_root() -> None:
    tree = _hand_tree()
    tree.children_reward[0, 0] = [0.5, 0.0, 0.0]
    # Non-root: (parent_q + Σ visited q) / (k + 1), whatever the node's own value.
    assert mean_q(tree, 0, 0, False, 0.2, 1.0) == pytest.approx((0.2 + 1.5 + 0.5) / 3)
    # At the root, 0 while no child is visited (parent_q plays no part there).
    empty = allocate_tree(batch_size=1, num_nodes=2, num_actions=3)
    assert mean_q(empty, 0, 0, True, 0.7, 1.0) == 0.0


def test_interior_choice_follows_the_parent_mean_q_chain() -> None:
    """A two-level tree where the parent-mean-Q chain picks action 1 below the root.

    Root: child 0 (node 1) visited twice, r = 0.5, v = 0.1 (q0 = 0.6), child 1 unvisited,
    priors [.99, .01]. Node 1: child 0 visited once with q = 0.9, child 1 unvisited, priors
    [.5, .5]. Min-max range [0, 1], so normalisation is the identity. The root picks 0. At
    node 1, N = 1: child 0 scores 0.9 + 1.25·.5/2 = 1.2125 (pb_c ≈ 1.25); child 1 scores its
    unvisited Q + 1.25·.5 = 0.625 more. LightZero's chain: (q0 + 0.9) / 2 = 0.75 → 1.375, so
    action 1. The old node-value rule, (v(node 1) + 0.9) / 2 = 0.5 → 1.125, chose action 0.
    """
    tree = allocate_tree(batch_size=1, num_nodes=4, num_actions=2)
    tree.root_legal[0] = True
    tree.node_visits[0, :3] = [3, 2, 1]
    tree.node_value_sum[0, :3] = [1.2, 0.2, 0.0]
    tree.children_index[0, 0] = [1, -1]
    tree.children_visits[0, 0] = [2, 0]
    tree.children_reward[0, 0] = [0.5, 0.0]
    tree.children_value[0, 0] = [0.1, 0.0]
    tree.children_prior[0, 0] = [0.99, 0.01]
    tree.children_index[0, 1] = [2, -1]
    tree.children_visits[0, 1] = [1, 0]
    tree.children_reward[0, 1] = [0.9, 0.0]
    tree.children_prior[0, 1] = [0.5, 0.5]
    tree.min_q[0], tree.max_q[0] = 0.0, 1.0
    parents = np.zeros(1, dtype=np.int64)
    actions = np.zeros(1, dtype=np.int64)
    traverse_batch(tree, PARAMS, PUCT, parents, actions)
    assert (parents[0], actions[0]) == (1, 1)
    scores = np.empty(2)
    # Node 1's parent_q is the root's mean Q, q0 = 0.6; its own mean is (0.6 + 0.9) / 2.
    assert puct_select(tree, PARAMS, 0, 1, False, 0.6, scores) == (1, pytest.approx(0.75))
    pb_c = math.log((1 + 19652.0 + 1) / 19652.0) + 1.25
    np.testing.assert_allclose(scores, [0.9 + pb_c * 0.25, 0.75 + pb_c * 0.5], rtol=1e-6)


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
