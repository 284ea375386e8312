"""A slow, per-node Gumbel MuZero search written from the paper's and mctx's rules.

Runs in: tests only. Danihelka et al. 2022 with mctx's `gumbel_muzero_policy` semantics
(lightzero_facts §1.2.6 and §3.4 for the constants): Gumbel top-k and sequential halving at the
root, argmax of π' - N / (1 + ΣN) below it, completed Q by the mixed value, min-max rescaled
and scaled by (50 + max N)·0.1. Nodes are objects with a dict of children; the root starts with
one visit and value sum 0 (LightZero). Stored fields are float32 like the tree's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from zeropipe.mcts.halving import considered_visit_sequence

from .lightzero_tree import TabularModel

F32 = np.float32
TINY = float(np.finfo(np.float32).tiny)


@dataclass
class GumbelNode:
    """One node: its prior over actions, network value, edge reward, visits and children."""

    prior: list[float]
    legal: list[bool]
    raw_value: float
    reward: float = 0.0
    node_id: int = 0
    visit_count: int = 0
    value_sum: float = 0.0
    children: dict[int, GumbelNode] = field(default_factory=dict)

    def value(self) -> float:
        return float(F32(self.value_sum / self.visit_count)) if self.visit_count else 0.0

    def visits(self, a: int) -> int:
        return self.children[a].visit_count if a in self.children else 0


def softmax_prior(logits: np.ndarray, legal: list[bool]) -> list[float]:
    """Max-subtracted softmax over the legal actions, float32, 0 elsewhere."""
    top = max(float(x) for x, ok in zip(logits, legal, strict=True) if ok)
    weights = [math.exp(float(x) - top) if ok else 0.0 for x, ok in zip(logits, legal, strict=True)]
    total = sum(weights)
    return [float(F32(w / total)) for w in weights]


def completed_q(node: GumbelNode, discount: float) -> list[float]:
    """q = r + γ·v for visited children, the mixed value for the others (0 if illegal)."""
    actions = range(len(node.prior))
    q = {a: node.children[a].reward + discount * node.children[a].value() for a in actions
         if node.visits(a) > 0}  # fmt: skip
    visit_sum = sum(node.visits(a) for a in actions)
    mixed = node.raw_value
    if visit_sum > 0:
        prior_sum = sum(max(node.prior[a], TINY) for a in q)
        weighted = sum(max(node.prior[a], TINY) * q[a] for a in q)
        mixed = (mixed + visit_sum * (weighted / prior_sum)) / (visit_sum + 1)
    return [0.0 if not node.legal[a] else q.get(a, mixed) for a in actions]


def sigma(node: GumbelNode, discount: float) -> list[float]:
    """σ(completed Q): rescaled to [0, 1] over legal actions, times (50 + max N)·0.1."""
    completed = completed_q(node, discount)
    legal = [a for a in range(len(node.prior)) if node.legal[a]]
    low = min(completed[a] for a in legal)
    high = max(completed[a] for a in legal)
    scale = (50.0 + max(node.visits(a) for a in legal)) * 0.1
    span = max(high - low, 1e-8)
    return [scale * (completed[a] - low) / span if node.legal[a] else -math.inf
            for a in range(len(node.prior))]  # fmt: skip


def first_argmax(scores: list[float]) -> int:
    best = max(scores)
    return scores.index(best)


def root_action(root: GumbelNode, gumbel: np.ndarray, plan: tuple[int, ...], discount: float):
    """Sequential halving: the best g + log π + σ among legal actions at the planned count."""
    considered = plan[root.visit_count - 1]
    s = sigma(root, discount)
    scores = []
    for a in range(len(root.prior)):
        if not root.legal[a] or root.visits(a) != considered:
            scores.append(-math.inf)
            continue
        logit = math.log(root.prior[a]) if root.prior[a] > 0 else -math.inf
        scores.append(max(-1e9, float(gumbel[a]) + logit + s[a]))
    return first_argmax(scores)


def interior_action(node: GumbelNode, discount: float) -> int:
    """argmax of softmax(log π + σ) - N / (1 + ΣN)."""
    s = sigma(node, discount)
    top = max(s)
    weights = [p * math.exp(x - top) for p, x in zip(node.prior, s, strict=True)]
    total = sum(weights)
    visit_sum = sum(node.visits(a) for a in range(len(node.prior)))
    return first_argmax(
        [w / total - node.visits(a) / (1 + visit_sum) for a, w in enumerate(weights)]
    )


def gumbel_reference_search(
    model: TabularModel,
    state: int,
    legal: list[bool],
    gumbel: np.ndarray,
    num_simulations: int,
    discount: float,
    max_considered: int,
) -> tuple[GumbelNode, list[tuple[int, int]]]:
    """The search from one root; returns the root and the (parent id, action) trace."""
    num_actions = len(legal)
    plan = considered_visit_sequence(min(max_considered, sum(legal)), num_simulations)
    root = GumbelNode(softmax_prior(model.logits[state], legal), legal, float(model.value[state]))
    root.visit_count = 1
    states = {0: state}
    trace = []
    for sim in range(num_simulations):
        node, path = root, [root]
        action = root_action(root, gumbel, plan, discount)
        while action in node.children:
            node = node.children[action]
            path.append(node)
            action = interior_action(node, discount)
        parent_state = states[node.node_id]
        next_state = int(model.next_state[parent_state, action])
        leaf = GumbelNode(
            softmax_prior(model.logits[next_state], [True] * num_actions),
            [True] * num_actions,
            float(model.value[next_state]),
            reward=float(model.reward[parent_state, action]),
            node_id=sim + 1,
        )
        node.children[action] = leaf
        states[sim + 1] = next_state
        trace.append((node.node_id, action))
        bootstrap = leaf.raw_value
        for visited in reversed([*path, leaf]):
            visited.value_sum = float(F32(visited.value_sum + bootstrap))
            visited.visit_count += 1
            bootstrap = visited.reward + discount * bootstrap
    return root, trace
