"""Child selection and the batched root-to-leaf traversal, compiled with numba.

Runs in: any. Each selection rule is one small `@njit` function over one node of one tree
(`puct_select`); `select_child` dispatches on a rule code so that a later variant (Gumbel root
selection by sequential halving, sampled actions, chance outcomes) adds a function and a code, not
a second search loop. B denotes the batch of roots and A the actions.

Semantics follow MuZero appendix B as implemented by LightZero's C++ tree (`cselect_child`,
`compute_mean_q`, `CMinMaxStats`), with the deviations documented on each function. The per-node
functions are inlined into the traversal (`inline="always"`), and every kernel uses numba's
"numpy" error model (see `simulate.py` for why both are safe and worth it).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numba import njit

from zeropipe.mcts.tree import ROOT_INDEX, UNVISITED, Tree

# Selection rule codes understood by `select_child`. Only PUCT exists today; Gumbel root and
# interior rules get their own codes here.
PUCT = 0

# Scores within this distance of the best count as tied; the lowest such action wins. LightZero
# uses the same tolerance but breaks its ties at random, which makes a seeded search unrepeatable.
TIE_TOLERANCE = 1e-6


class PuctParams(NamedTuple):
    """Scalar constants the compiled kernels read (from `SearchConfig`)."""

    discount: float
    pb_c_base: float
    pb_c_init: float
    value_delta_max: float


@njit(cache=True, inline="always", error_model="numpy")
def normalized_q(tree: Tree, b: int, q: float, value_delta_max: float) -> float:
    """Maps q into [0, 1] with the min-max statistics of tree b.

    As in LightZero (`CMinMaxStats::normalize` then the clamp in `cucb_score`): the range is
    divided out only once max > min, and the result is clamped to [0, 1] in every case.
    """
    low = tree.min_q[b]
    delta = tree.max_q[b] - low
    if delta > 0.0:
        q = (q - low) / max(delta, value_delta_max)
    return min(max(q, 0.0), 1.0)


@njit(cache=True, inline="always", error_model="numpy")
def unvisited_q(tree: Tree, b: int, node: int, discount: float) -> float:
    """Q assumed for the unvisited children of `node`: the mean of the node's value and the
    r + γ·v of its visited children.

    Deviation from LightZero's `compute_mean_q`, chosen for the brief: LightZero averages the
    visited children's q with the *parent's* running mean q (0 at the root) and drops that term at
    the root once a child is visited. Using the node's own value (value_sum / visits, which at the
    root includes the network value) gives every node, root included, the same rule.
    """
    visits = tree.node_visits[b, node]
    total = tree.node_value_sum[b, node] / visits if visits > 0 else 0.0
    count = 1
    for a in range(tree.children_visits.shape[2]):
        if tree.children_visits[b, node, a] > 0:
            total += tree.children_reward[b, node, a] + discount * tree.children_value[b, node, a]
            count += 1
    return total / count


@njit(cache=True, inline="always", error_model="numpy")
def puct_select(
    tree: Tree, params: PuctParams, b: int, node: int, is_root: bool, scores: np.ndarray
) -> int:
    """Picks the child of `node` in tree b with the highest PUCT score (MuZero appendix B eq. 2).

    score(a) = Q_norm(a) + pb_c · prior(a) · sqrt(N_p) / (1 + n(a)) with
    pb_c = log((N_p + c_base + 1) / c_base) + c_init and N_p the sum of the children's visits
    (mctx; equals LightZero's visit_count - 1). Illegal root actions are never picked; interior
    nodes treat every action as legal. Ties within TIE_TOLERANCE go to the lowest action.

    Args:
        tree: the batch of trees.
        params: search constants.
        b: which tree.
        node: the node whose child is chosen (expanded).
        is_root: whether `node` is the root, whose illegal actions are excluded.
        scores: [A] float64 scratch buffer.

    Returns:
        The chosen action.
    """
    num_actions = tree.children_visits.shape[2]
    parent_visits = 0
    for a in range(num_actions):
        parent_visits += tree.children_visits[b, node, a]
    pb_c = math.log((parent_visits + params.pb_c_base + 1.0) / params.pb_c_base) + params.pb_c_init
    exploration = pb_c * math.sqrt(parent_visits)
    fill_q = normalized_q(
        tree, b, unvisited_q(tree, b, node, params.discount), params.value_delta_max
    )
    best = -np.inf
    for a in range(num_actions):
        if is_root and not tree.root_legal[b, a]:
            scores[a] = -np.inf
            continue
        n = tree.children_visits[b, node, a]
        if n > 0:
            q = tree.children_reward[b, node, a] + params.discount * tree.children_value[b, node, a]
            value_score = normalized_q(tree, b, q, params.value_delta_max)
        else:
            value_score = fill_q
        scores[a] = value_score + exploration * tree.children_prior[b, node, a] / (1.0 + n)
        best = max(best, scores[a])
    for a in range(num_actions):
        if scores[a] >= best - TIE_TOLERANCE:
            return a
    return -1  # unreachable: the root has a legal action and interior nodes have all of them


@njit(cache=True, inline="always", error_model="numpy")
def select_child(
    tree: Tree,
    params: PuctParams,
    b: int,
    node: int,
    is_root: bool,
    rule: int,
    scores: np.ndarray,
) -> int:
    """Dispatches to the selection rule `rule` (see the codes at the top of this module)."""
    if rule == PUCT:
        return puct_select(tree, params, b, node, is_root, scores)
    raise ValueError("select_child: unknown selection rule code")


@njit(cache=True, error_model="numpy")
def traverse_batch(
    tree: Tree,
    params: PuctParams,
    root_rule: int,
    interior_rule: int,
    parents: np.ndarray,
    actions: np.ndarray,
) -> None:
    """Walks every tree from its root to the first unexpanded edge.

    Args:
        tree: the batch of trees.
        params: search constants.
        root_rule: selection rule code used at the root.
        interior_rule: selection rule code used below the root.
        parents: [B] int64 output: the node whose child will be expanded.
        actions: [B] int64 output: the action of that edge. Together they address the parent
            latent and the recurrent model's input.
    """
    scores = np.empty(tree.children_index.shape[2], dtype=np.float64)
    for b in range(tree.children_index.shape[0]):
        node = np.int64(ROOT_INDEX)
        action = select_child(tree, params, b, node, True, root_rule, scores)
        child = tree.children_index[b, node, action]
        while child != UNVISITED:
            node = np.int64(child)  # one integer type for `node`: one compiled specialisation
            action = select_child(tree, params, b, node, False, interior_rule, scores)
            child = tree.children_index[b, node, action]
        parents[b] = node
        actions[b] = action
