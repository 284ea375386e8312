"""Leaf expansion and value backup for a batch of trees, compiled with numba.

Runs in: any. After the one batched model call of a simulation, `expand_and_backup_batch` links
each new node under its parent, stores its prior, and backs its value up to the root (MuZero
appendix B, single player). B denotes the batch of roots and A the actions. Entered through
`simulate.simulation_step`.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from zeropipe.mcts.selection import SearchParams
from zeropipe.mcts.tree import NO_PARENT, Tree


@njit(cache=True, inline="always")
def update_min_max(tree: Tree, b: int, q: float) -> None:
    """Widens the min-max Q statistics of tree b to include q."""
    tree.min_q[b] = min(tree.min_q[b], q)
    tree.max_q[b] = max(tree.max_q[b], q)


@njit(cache=True, error_model="numpy")
def expand_node(
    tree: Tree,
    b: int,
    node: int,
    parent: int,
    action: int,
    reward: float,
    value: float,
    logits: np.ndarray,
) -> None:
    """Links `node` as child `action` of `parent` in tree b, sets its prior and raw value.

    The prior is the max-subtracted softmax of `logits` ([A]) over all actions: the model gives
    no legality below the root, so interior nodes treat every action as legal (as LightZero).
    """
    tree.children_index[b, parent, action] = node
    tree.children_reward[b, parent, action] = reward
    tree.parents[b, node] = parent
    tree.action_from_parent[b, node] = action
    tree.node_raw_value[b, node] = value
    num_actions = logits.shape[0]
    top = logits[0]
    for a in range(1, num_actions):
        top = max(top, logits[a])
    total = 0.0
    for a in range(num_actions):
        total += math.exp(logits[a] - top)
    for a in range(num_actions):
        tree.children_prior[b, node, a] = math.exp(logits[a] - top) / total


@njit(cache=True, error_model="numpy")
def backup_path(tree: Tree, discount: float, b: int, leaf: int, value: float) -> None:
    """Backs `value` up from `leaf` to the root of tree b.

    Walking leaf → root: value_sum += G, visits += 1, min-max update with r + γ·v of the node,
    then G = r + γ·G (LightZero `cbackpropagate`, one player). Like LightZero, the root also
    updates the min-max statistics, with its reward taken as 0. v is the node's value rounded
    to float32 first, as LightZero's `CNode::value()` returns a float.
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
        reward = tree.children_reward[b, parent, action]
        tree.children_visits[b, parent, action] += 1
        tree.children_value[b, parent, action] = node_value
        update_min_max(tree, b, reward + discount * node_value)
        g = reward + discount * g
        node = parent


@njit(cache=True, error_model="numpy")
def expand_and_backup_batch(
    tree: Tree,
    params: SearchParams,
    node: int,
    parents: np.ndarray,
    actions: np.ndarray,
    rewards: np.ndarray,
    values: np.ndarray,
    logits: np.ndarray,
) -> None:
    """Expands node index `node` in every tree and backs up its value.

    Args:
        tree: the batch of trees.
        params: search constants.
        node: index of the new node (simulation s expands node s + 1).
        parents: [B] int64 parent of the new node (from `traverse_batch`).
        actions: [B] int64 action from the parent to the new node.
        rewards: [B] float32 predicted reward of that edge.
        values: [B] float32 predicted value of the new node.
        logits: [B, A] float32 predicted prior logits at the new node.
    """
    for b in range(parents.shape[0]):
        expand_node(tree, b, node, parents[b], actions[b], rewards[b], values[b], logits[b])
        backup_path(tree, params.discount, b, node, values[b])
