"""A slow, per-node re-implementation of LightZero's C++ MuZero tree, written from its rules.

Runs in: tests only. Written from lightzero_facts §3.1–3.3 (`CNode`, `compute_mean_q`,
`cselect_child`, `cucb_score`, `CMinMaxStats`, `cbackpropagate`, `Roots.prepare_no_noise`), one
player, with LightZero's `deterministic` tie-break (the first action of the tie list). Nodes are
objects with a dict of children; nothing is batched or compiled, so that it reads as the
specification that the numba search is compared with. Fields the C++ stores as `float` are kept
as float32 here too; arithmetic is in Python floats.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

F32 = np.float32


@dataclass
class Node:
    """One `CNode`: visits, value sum, the edge reward into it, its prior and children."""

    prior: float
    legal_actions: list[int]
    node_id: int = -1  # the simulation that expanded it, + 1 (the root is 0)
    visit_count: int = 0
    value_sum: float = 0.0
    reward: float = 0.0
    children: dict[int, Node] = field(default_factory=dict)

    def expanded(self) -> bool:
        return len(self.children) > 0

    def value(self) -> float:
        """value_sum / visit_count as a float (0 when unvisited)."""
        return float(F32(self.value_sum / self.visit_count)) if self.visit_count > 0 else 0.0

    def expand(self, reward: float, logits: np.ndarray) -> None:
        """Sets the edge reward and creates one child per legal action, prior = softmax."""
        self.reward = float(F32(reward))
        top = max(float(logits[a]) for a in self.legal_actions)
        weights = {a: math.exp(float(logits[a]) - top) for a in self.legal_actions}
        total = sum(weights[a] for a in self.legal_actions)
        num_actions = len(logits)
        for a in self.legal_actions:
            self.children[a] = Node(float(F32(weights[a] / total)), list(range(num_actions)))

    def compute_mean_q(self, is_root: bool, parent_q: float, discount: float) -> float:
        total = 0.0
        visited = 0
        for a in self.legal_actions:
            child = self.children[a]
            if child.visit_count > 0:
                total += child.reward + discount * child.value()
                visited += 1
        if is_root and visited > 0:
            return total / visited
        return (parent_q + total) / (visited + 1)


class MinMaxStats:
    """`CMinMaxStats`: running min and max of Q, normalisation with a smallest range."""

    def __init__(self, value_delta_max: float) -> None:
        self.maximum = -math.inf
        self.minimum = math.inf
        self.value_delta_max = value_delta_max

    def update(self, value: float) -> None:
        value = float(F32(value))
        if value > self.maximum:
            self.maximum = value
        if value < self.minimum:
            self.minimum = value

    def normalize(self, value: float) -> float:
        delta = self.maximum - self.minimum
        if delta > 0:
            if delta < self.value_delta_max:
                return (value - self.minimum) / self.value_delta_max
            return (value - self.minimum) / delta
        return value


def ucb_score(
    child: Node, stats: MinMaxStats, mean_q: float, parent_n: int, c_base: float, c_init: float,
    discount: float,
) -> float:  # fmt: skip
    """`cucb_score`, one player."""
    pb_c = math.log((parent_n + c_base + 1) / c_base) + c_init
    pb_c *= math.sqrt(parent_n) / (child.visit_count + 1)
    prior_score = pb_c * child.prior
    visited_q = child.reward + discount * child.value()
    value_score = mean_q if child.visit_count == 0 else visited_q
    value_score = min(max(stats.normalize(value_score), 0.0), 1.0)
    return prior_score + value_score


def select_child(
    node: Node, stats: MinMaxStats, c_base: float, c_init: float, discount: float, mean_q: float
) -> int:
    """`cselect_child` with the deterministic tie-break: the first action of the tie list."""
    epsilon = 1e-6
    max_score = -math.inf
    ties: list[int] = []
    for a in node.legal_actions:
        score = ucb_score(
            node.children[a], stats, mean_q, node.visit_count - 1, c_base, c_init, discount
        )
        if max_score < score:
            max_score = score
            ties = [a]
        elif score >= max_score - epsilon:
            ties.append(a)
    return ties[0]


@dataclass
class ReferenceSearch:
    """One root's search: its tree, min-max statistics and trace of (parent id, action)."""

    root: Node
    stats: MinMaxStats
    trace: list[tuple[int, int]] = field(default_factory=list)

    def root_value(self) -> float:
        return self.root.value_sum / self.root.visit_count

    def root_visits(self, num_actions: int) -> list[int]:
        return [
            self.root.children[a].visit_count if a in self.root.children else 0
            for a in range(num_actions)
        ]


def traverse(
    search: ReferenceSearch, c_base: float, c_init: float, discount: float
) -> tuple[list[Node], int]:
    """`cbatch_traverse` for one root: the search path to the first unexpanded node."""
    node = search.root
    path = [node]
    parent_q = 0.0
    is_root = True
    action = -1
    while node.expanded():
        mean_q = node.compute_mean_q(is_root, parent_q, discount)
        is_root = False
        parent_q = mean_q
        action = select_child(node, search.stats, c_base, c_init, discount, mean_q)
        node = node.children[action]
        path.append(node)
    return path, action


def backpropagate(path: list[Node], stats: MinMaxStats, value: float, discount: float) -> None:
    """`cbackpropagate`, one player: leaf to root."""
    bootstrap = value
    for node in reversed(path):
        node.value_sum = float(F32(node.value_sum + bootstrap))
        node.visit_count += 1
        stats.update(node.reward + discount * node.value())
        bootstrap = node.reward + discount * bootstrap


@dataclass(frozen=True)
class TabularModel:
    """A tabular MDP model: next state, reward and logits per (state, action), value per state."""

    next_state: np.ndarray  # [S, A] int64
    reward: np.ndarray  # [S, A] float32
    value: np.ndarray  # [S] float32
    logits: np.ndarray  # [S, A] float32


def reference_search(
    model: TabularModel,
    state: int,
    legal_actions: list[int],
    num_simulations: int,
    discount: float,
    c_base: float = 19652.0,
    c_init: float = 1.25,
    value_delta_max: float = 0.01,
) -> ReferenceSearch:
    """LightZero's search loop (§3.3) for one root in `state`, without root noise."""
    root = Node(1.0, legal_actions, node_id=0)
    root.expand(0.0, model.logits[state])
    root.visit_count += 1  # prepare: one visit, no value
    search = ReferenceSearch(root, MinMaxStats(value_delta_max))
    states = {0: state}
    for sim in range(num_simulations):
        path, action = traverse(search, c_base, c_init, discount)
        parent, leaf = path[-2], path[-1]
        leaf.node_id = sim + 1
        search.trace.append((parent.node_id, action))
        parent_state = states[parent.node_id]
        states[leaf.node_id] = int(model.next_state[parent_state, action])
        leaf.expand(float(model.reward[parent_state, action]), model.logits[states[leaf.node_id]])
        backpropagate(path, search.stats, float(model.value[states[leaf.node_id]]), discount)
    return search
