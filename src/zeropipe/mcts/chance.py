"""Chance nodes (Stochastic MuZero, Antonoglou et al. 2022): the CHANCE descent, compiled.

Runs in: any. A tree searched with the CHANCE rule alternates decision nodes (states, A actions)
and chance nodes (afterstates, C chance outcomes). Decision nodes pick with PUCT exactly as
`selection.puct_select` (LightZero semantics, parent-mean-Q chain, min-max normalisation) over
their first A children, whose Q is the afterstate's value (the decision → afterstate edge has no
reward and no discount). Chance nodes draw an outcome from their prior (LightZero samples with
`std::discrete_distribution`); the draw comes from a counter-based generator keyed by the tree's
`chance_seed` (drawn from the actor's `np.random.Generator` for every search), the tree, the node
and its visit count (`streams.keyed_uniform`), so a search is reproducible from its generator and
every visit of a chance node draws afresh. Decision-node ties are broken as PUCT's
(`selection.break_tie`; LightZero's stochastic tree keeps the same random tie list,
ctree_stochastic_muzero/lib/cnode.cpp:635-660). B denotes the batch of roots.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from zeropipe.mcts.backup import expand_node, update_min_max
from zeropipe.mcts.selection import SearchParams, break_tie, normalized_q
from zeropipe.mcts.streams import keyed_uniform
from zeropipe.mcts.tree import NO_PARENT, ROOT_INDEX, UNVISITED, Tree


@njit(cache=True, inline="always", error_model="numpy")
def chance_uniform(seed: np.uint64, b: int, node: int, visit: int) -> float:
    """A uniform draw in [0, 1) keyed by (seed, tree b, node, the node's visit count)."""
    return keyed_uniform(seed, b, node, visit)


@njit(cache=True, inline="always", error_model="numpy")
def sample_outcome(tree: Tree, b: int, node: int) -> int:
    """Draws a chance outcome of chance node `node` in tree b from its prior (inverse CDF)."""
    u = chance_uniform(tree.chance_seed[0], b, node, tree.node_visits[b, node])
    width = tree.node_width[b, node]
    total = 0.0
    for c in range(width):
        total += tree.children_prior[b, node, c]
    threshold = u * total
    cumulative = 0.0
    last = 0
    for c in range(width):
        p = tree.children_prior[b, node, c]
        if p > 0.0:
            last = c
            cumulative += p
            if cumulative > threshold:
                return c
    return last  # rounding: u·total at the very top of the CDF


@njit(cache=True, inline="always", error_model="numpy")
def _edge_q(tree: Tree, b: int, node: int, a: int, discount: float) -> float:
    """Q of child a of `node`: its value under a decision node, r + γ·v under a chance node."""
    if tree.node_is_chance[b, node]:
        return tree.children_reward[b, node, a] + discount * tree.children_value[b, node, a]
    return tree.children_value[b, node, a]


@njit(cache=True, inline="always", error_model="numpy")
def chance_mean_q(
    tree: Tree, b: int, node: int, is_root: bool, parent_q: float, discount: float
) -> float:
    """`selection.mean_q` with the edge Q of `_edge_q` (the parent-mean-Q chain of LightZero)."""
    total = 0.0
    count = 0
    for a in range(tree.node_width[b, node]):
        if tree.children_visits[b, node, a] > 0:
            total += _edge_q(tree, b, node, a, discount)
            count += 1
    if is_root:
        return total / count if count > 0 else 0.0
    return (parent_q + total) / (count + 1)


@njit(cache=True, inline="always", error_model="numpy")
def decision_select(
    tree: Tree,
    params: SearchParams,
    b: int,
    node: int,
    is_root: bool,
    unvisited_q: float,
    scores: np.ndarray,
) -> int:
    """PUCT over the first A children of decision node `node` (`selection.puct_select`'s score).

    Args:
        tree: the batch of trees.
        params: search constants.
        b: which tree.
        node: a decision node.
        is_root: whether `node` is the root, whose illegal actions are excluded.
        unvisited_q: the node's `chance_mean_q`, the Q assumed for unvisited children.
        scores: [max(A, C)] float64 scratch, left holding the first A scores (-inf on illegal
            root actions).

    Returns:
        The action of maximal score; ties are broken as `selection.break_tie` says.
    """
    parent_visits = tree.node_visits[b, node] - 1
    pb_c = math.log((parent_visits + params.pb_c_base + 1.0) / params.pb_c_base) + params.pb_c_init
    exploration = pb_c * math.sqrt(parent_visits)
    fill_q = normalized_q(tree, b, unvisited_q, params.value_delta_max)
    best = -np.inf
    choice = -1
    width = tree.node_width[b, node]
    for a in range(width):
        if is_root and not tree.root_legal[b, a]:
            scores[a] = -np.inf
            continue
        n = tree.children_visits[b, node, a]
        if n > 0:
            value_score = normalized_q(
                tree, b, tree.children_value[b, node, a], params.value_delta_max
            )
        else:
            value_score = fill_q
        score = value_score + exploration * tree.children_prior[b, node, a] / (1.0 + n)
        scores[a] = score
        if score > best:
            best = score
            choice = a
    if params.random_ties:
        choice = break_tie(tree, b, node, scores, choice, width)
    return choice


@njit(cache=True, error_model="numpy")
def descend_chance(tree: Tree, params: SearchParams, b: int, scores: np.ndarray) -> tuple[int, int]:
    """From the root of tree b to the first unexpanded edge: PUCT at decision nodes, a draw from
    the prior at chance nodes. The parent-mean-Q chain runs through both kinds of node.

    Returns:
        The edge: (parent node, action or chance outcome).
    """
    node = np.int64(ROOT_INDEX)
    is_root = True
    parent_q = 0.0
    while True:
        parent_q = chance_mean_q(tree, b, node, is_root, parent_q, params.discount)
        if tree.node_is_chance[b, node]:
            action = sample_outcome(tree, b, node)
        else:
            action = decision_select(tree, params, b, node, is_root, parent_q, scores)
        child = tree.children_index[b, node, action]
        if child == UNVISITED:
            return node, np.int64(action)
        node = np.int64(child)
        is_root = False


@njit(cache=True, error_model="numpy")
def traverse_chance_batch(
    tree: Tree, params: SearchParams, parents: np.ndarray, actions: np.ndarray
) -> None:
    """`selection.traverse_batch` for the CHANCE rule: writes every tree's next edge into
    `parents` and `actions` ([B] int64)."""
    scores = np.empty(tree.children_index.shape[2], dtype=np.float64)
    for b in range(tree.children_index.shape[0]):
        node, action = descend_chance(tree, params, b, scores)
        parents[b] = node
        actions[b] = action


@njit(cache=True, error_model="numpy")
def chance_backup_path(tree: Tree, discount: float, b: int, leaf: int, value: float) -> None:
    """`backup.backup_path` through decision and chance nodes (a kernel of its own: the branch
    below, inside the PUCT backup, made the PUCT search 3x slower).

    Walking leaf → root: value_sum += G, visits += 1; into a chance node (an afterstate) the edge
    has no reward and no discount, so its Q is v and G passes unchanged; into a decision node
    Q = r + γ·v and G = r + γ·G. The root updates the min-max statistics with γ·v, as PUCT's.
    """
    g = value
    node = leaf
    while True:
        tree.node_value_sum[b, node] += g
        tree.node_visits[b, node] += 1
        node_value = np.float32(tree.node_value_sum[b, node] / tree.node_visits[b, node])
        parent = tree.parents[b, node]
        if parent == NO_PARENT:
            update_min_max(tree, b, discount * node_value)
            return
        action = tree.action_from_parent[b, node]
        tree.children_visits[b, parent, action] += 1
        tree.children_value[b, parent, action] = node_value
        if tree.node_is_chance[b, node]:
            update_min_max(tree, b, node_value)
        else:
            reward = tree.children_reward[b, parent, action]
            update_min_max(tree, b, reward + discount * node_value)
            g = reward + discount * g
        node = parent


@njit(cache=True, error_model="numpy")
def chance_expand_and_backup_batch(
    tree: Tree,
    params: SearchParams,
    node: int,
    parents: np.ndarray,
    actions: np.ndarray,
    rewards: np.ndarray,
    values: np.ndarray,
    logits: np.ndarray,
) -> None:
    """`backup.expand_and_backup_batch` with `chance_backup_path` (node kinds are set by the
    caller before the model call)."""
    for b in range(parents.shape[0]):
        expand_node(tree, b, node, parents[b], actions[b], rewards[b], values[b], logits[b])
        chance_backup_path(tree, params.discount, b, node, values[b])
