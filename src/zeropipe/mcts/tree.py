"""The search tree as a preallocated struct of arrays over a batch of roots.

Runs in: any. B denotes the batch of roots, N = num_simulations + 1 the nodes per root and A the
actions. Node 0 is the root; the leaf expanded by simulation s is node s + 1, so a node index also
addresses the latent store of the search. Every variant shares one layout: the Gumbel fields (raw
network values, root Gumbel noise, the sequential-halving schedule) and the chance fields (node
kinds and widths, the outcome seed) are allocated for PUCT too, where they stay unread; the
tie-break seed is read by PUCT and the chance rule's decision nodes. The tree is
a NamedTuple so that the numba kernels in `selection.py` and `backup.py` take it as one argument and
read its fields by name; the arrays are mutated in place, the tuple itself never changes.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

ROOT_INDEX = 0
NO_PARENT = -1  # parents[b, ROOT_INDEX]
UNVISITED = -1  # children_index of an edge whose child has not been expanded


class Tree(NamedTuple):
    """Search statistics of B trees, each with N preallocated nodes of A children.

    Attributes:
        children_index: [B, N, A] int32 node index of each child, UNVISITED before expansion.
        children_prior: [B, N, A] float32 prior of each child (softmax of the node's logits; at
            the root over legal actions, possibly mixed with Dirichlet noise).
        children_visits: [B, N, A] int32 visits of each child (equals the child's node_visits).
        children_reward: [B, N, A] float32 reward predicted for the edge when it was expanded.
        children_value: [B, N, A] float32 mean value of each child node (0 while unvisited).
        node_visits: [B, N] int32 visits of each node; the root starts with 1 (LightZero).
        node_value_sum: [B, N] float32 sum of the returns backed up through each node; the
            root starts at 0, so the network's root value never enters the tree (LightZero).
        parents: [B, N] int32 parent node, NO_PARENT for the root.
        action_from_parent: [B, N] int32 action that leads from the parent to the node.
        root_legal: [B, A] bool legal root actions; interior nodes treat every action as legal.
        min_q: [B] float32 smallest Q seen in each tree (+inf while none).
        max_q: [B] float32 largest Q seen in each tree (-inf while none).
        node_raw_value: [B, N] float32 network value predicted for each node (Gumbel's mixed
            value reads it).
        root_gumbel: [B, A] float32 Gumbel noise g of each root action (Gumbel root rule).
        root_considered: [B, S] int32 visit count that the root action chosen at simulation
            index s must have (sequential halving; S = N - 1 simulations).
        node_is_chance: [B, N] bool whether each node is a chance node (an afterstate; the CHANCE
            rule only). The edge into a chance node has reward 0 and no discount: its Q is the
            afterstate's value (Antonoglou et al. 2022).
        node_width: [B, N] int32 children of each node that exist (the CHANCE rule: A at a
            decision node, the chance space size at a chance node; A everywhere otherwise).
        chance_seed: [1] uint64 seed of the chance outcomes drawn in the descent (CHANCE rule).
        tie_seed: [1] uint64 seed of the PUCT tie-breaks (`selection.break_tie`; read only
            with `SearchParams.random_ties`).
    """

    children_index: np.ndarray
    children_prior: np.ndarray
    children_visits: np.ndarray
    children_reward: np.ndarray
    children_value: np.ndarray
    node_visits: np.ndarray
    node_value_sum: np.ndarray
    parents: np.ndarray
    action_from_parent: np.ndarray
    root_legal: np.ndarray
    min_q: np.ndarray
    max_q: np.ndarray
    node_raw_value: np.ndarray
    root_gumbel: np.ndarray
    root_considered: np.ndarray
    node_is_chance: np.ndarray
    node_width: np.ndarray
    chance_seed: np.ndarray
    tie_seed: np.ndarray


def allocate_tree(batch_size: int, num_nodes: int, num_actions: int) -> Tree:
    """Allocates B empty trees: no node expanded, no visits, empty min-max statistics.

    Args:
        batch_size: B, the number of roots.
        num_nodes: N, nodes per tree (num_simulations + 1).
        num_actions: A, children per node.

    Returns:
        A Tree whose arrays have the shapes listed on `Tree`.
    """
    shape = (batch_size, num_nodes, num_actions)
    return Tree(
        children_index=np.full(shape, UNVISITED, dtype=np.int32),
        children_prior=np.zeros(shape, dtype=np.float32),
        children_visits=np.zeros(shape, dtype=np.int32),
        children_reward=np.zeros(shape, dtype=np.float32),
        children_value=np.zeros(shape, dtype=np.float32),
        node_visits=np.zeros((batch_size, num_nodes), dtype=np.int32),
        node_value_sum=np.zeros((batch_size, num_nodes), dtype=np.float32),
        parents=np.full((batch_size, num_nodes), NO_PARENT, dtype=np.int32),
        action_from_parent=np.full((batch_size, num_nodes), -1, dtype=np.int32),
        root_legal=np.zeros((batch_size, num_actions), dtype=np.bool_),
        min_q=np.full(batch_size, np.inf, dtype=np.float32),
        max_q=np.full(batch_size, -np.inf, dtype=np.float32),
        node_raw_value=np.zeros((batch_size, num_nodes), dtype=np.float32),
        root_gumbel=np.zeros((batch_size, num_actions), dtype=np.float32),
        root_considered=np.zeros((batch_size, num_nodes - 1), dtype=np.int32),
        node_is_chance=np.zeros((batch_size, num_nodes), dtype=np.bool_),
        node_width=np.full((batch_size, num_nodes), num_actions, dtype=np.int32),
        chance_seed=np.zeros(1, dtype=np.uint64),
        tie_seed=np.zeros(1, dtype=np.uint64),
    )
