"""A slow, per-node re-implementation of the CHANCE search (Stochastic MuZero), from its rules.

Runs in: tests only. Decision nodes use the PUCT rules of `lightzero_tree.py` (parent-mean-Q
chain, min-max normalisation with a smallest range, clamp, pb_c over visits − 1) with the Q of a
child afterstate being its value (no reward, no discount); chance nodes draw their outcome by
inverse CDF of their prior with the uniform of `mcts.chance.chance_uniform` (the same keyed
draws as the compiled search). Stored fields are float32 as in the compiled tree.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from tests.mcts.lightzero_tree import F32, MinMaxStats
from zeropipe.mcts.chance import chance_uniform


@dataclass
class Node:
    """A decision node (a state) or a chance node (an afterstate)."""

    is_chance: bool
    prior: float
    node_id: int = -1
    visit_count: int = 0
    value_sum: float = 0.0
    reward: float = 0.0
    state: int = -1  # decision: the model state; chance: the state it came from
    action: int = -1  # chance: the action that led to it
    children: dict[int, Node] = field(default_factory=dict)

    def value(self) -> float:
        return float(F32(self.value_sum / self.visit_count)) if self.visit_count > 0 else 0.0

    def edge_q(self, child: Node, discount: float) -> float:
        """Q of a child: its value under a decision node, r + γ·v under a chance node."""
        if self.is_chance:
            return child.reward + discount * child.value()
        return child.value()

    def mean_q(self, is_root: bool, parent_q: float, discount: float) -> float:
        visited = [self.edge_q(c, discount) for c in self.children.values() if c.visit_count > 0]
        if is_root:
            return sum(visited) / len(visited) if visited else 0.0
        return (parent_q + sum(visited)) / (len(visited) + 1)


@dataclass(frozen=True)
class StochasticModel:
    """Tabular: policy logits [S, A] and values [S] of states; afterstate values [S, A] and chance
    logits [S, A, C]; next state [S, A, C] and reward [S, A, C] of each outcome."""

    logits: np.ndarray
    value: np.ndarray
    after_value: np.ndarray
    chance_logits: np.ndarray
    next_state: np.ndarray
    reward: np.ndarray


def _children(logits: np.ndarray, is_chance: bool) -> dict[int, Node]:
    top = float(np.max(logits))
    weights = [math.exp(float(x) - top) for x in logits]
    total = sum(weights)
    return {i: Node(not is_chance, float(F32(w / total))) for i, w in enumerate(weights)}


def _select(node: Node, stats: MinMaxStats, mean_q: float, is_root: bool, legal, p) -> int:
    """PUCT at a decision node; the first action of maximal score."""
    parent_n = node.visit_count - 1
    pb_c = math.log((parent_n + p["c_base"] + 1.0) / p["c_base"]) + p["c_init"]
    best, choice = -math.inf, -1
    for a, child in node.children.items():
        if is_root and not legal[a]:
            continue
        q = node.edge_q(child, p["discount"]) if child.visit_count > 0 else mean_q
        q = min(max(stats.normalize(q), 0.0), 1.0)
        score = q + pb_c * math.sqrt(parent_n) * child.prior / (1.0 + child.visit_count)
        if score > best:
            best, choice = score, a
    return choice


def _draw(node: Node, seed: np.uint64, b: int) -> int:
    u = chance_uniform(seed, b, node.node_id, node.visit_count)
    priors = [node.children[c].prior for c in range(len(node.children))]
    threshold = u * sum(priors)
    cumulative, last = 0.0, 0
    for c, prior in enumerate(priors):
        if prior > 0.0:
            last = c
            cumulative += prior
            if cumulative > threshold:
                return c
    return last


def reference_chance_search(
    model: StochasticModel, state: int, legal, num_simulations: int, seed, b: int, **params
):
    """The CHANCE search of root `b` in `state`; returns (root, trace of (parent id, edge))."""
    p = {"c_base": 19652.0, "c_init": 1.25, "discount": 0.997, "value_delta_max": 0.01, **params}
    stats = MinMaxStats(p["value_delta_max"])
    masked = np.where(legal, model.logits[state], -np.inf)
    root = Node(False, 1.0, node_id=0, visit_count=1, state=state)
    root.children = _children(masked, is_chance=False)
    trace = []
    for sim in range(num_simulations):
        node, path, parent_q, is_root = root, [root], 0.0, True
        while True:
            parent_q = node.mean_q(is_root, parent_q, p["discount"])
            if node.is_chance:
                edge = _draw(node, np.uint64(seed), b)
            else:
                edge = _select(node, stats, parent_q, is_root, legal, p)
            child = node.children[edge]
            path.append(child)
            is_root = False
            if child.visit_count == 0:
                break
            node = child
        trace.append((node.node_id, edge))
        child.node_id = sim + 1
        if node.is_chance:  # a state from an afterstate and an outcome
            s, a = node.state, node.action
            child.state = int(model.next_state[s, a, edge])
            child.reward = float(F32(model.reward[s, a, edge]))
            value = float(model.value[child.state])
            child.children = _children(model.logits[child.state], is_chance=False)
        else:  # an afterstate from a state and an action
            child.state, child.action = node.state, edge
            value = float(model.after_value[node.state, edge])
            child.children = _children(model.chance_logits[node.state, edge], is_chance=True)
        _backup(path, stats, value, p["discount"])
    return root, trace


def _backup(path: list[Node], stats: MinMaxStats, value: float, discount: float) -> None:
    g = value
    for node in reversed(path):
        node.value_sum = float(F32(node.value_sum + g))
        node.visit_count += 1
        if node.is_chance:
            stats.update(node.value())
        else:
            stats.update(node.reward + discount * node.value())
            g = node.reward + discount * g
