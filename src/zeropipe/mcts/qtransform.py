"""Completed Q values and the σ transform of Gumbel MuZero, compiled with numba.

Runs in: any. Danihelka et al. 2022 ("Policy improvement by planning with Gumbel", section 4 and
appendix D) complete the Q of a node's unvisited children with a mixed value, rescale the
completed Q to [0, 1] within the node, and scale it by (c_visit + max_b N(b))·c_scale: mctx's
`qtransform_completed_by_mix_value` with `rescale_values=True` and `use_mixed_value=True`.
B denotes the batch of roots and A the actions.

Deviations from mctx, both at the root only: illegal actions take no part in the rescaling
(mctx lets them carry the mixed value into the min and max), and the priors are the stored
softmax over legal actions (mctx's softmax of masked logits is the same distribution).
The mixed value weighs by the tree's prior. Under Gumbel's `prior_term="probability"`
(LightZero's default, `gumbel.py`) the tree holds softmax(p), p the prior probabilities, so
that weight is LightZero's softmax of the already-softmaxed prior (cnode.cpp:1013); under
"logit" it is mctx's softmax(logits).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from zeropipe.mcts.params import SearchParams
from zeropipe.mcts.tree import ROOT_INDEX, Tree

# mctx `_rescale_qvalues` epsilon: a node whose completed Q are all equal maps them to 0.
RESCALE_EPSILON = 1e-8
# Smallest positive float32 (mctx's finfo.tiny): a visited child with prior 0 still gets weight.
TINY_PRIOR = float(np.finfo(np.float32).tiny)


@njit(cache=True, inline="always", error_model="numpy")
def completed_q(
    tree: Tree, discount: float, b: int, node: int, is_root: bool, out: np.ndarray
) -> None:
    """Writes the completed Q of the children of `node` in tree b into `out` ([A] float64).

    Visited children: q = r + γ·v. Unvisited children: the mixed value
    (v_raw + Σ N · Σ_visited π(a) q(a) / Σ_visited π(a)) / (Σ N + 1), with v_raw the node's
    network value and π its prior (paper eq. 33). Illegal root actions get 0.
    """
    num_actions = tree.children_visits.shape[2]
    visit_sum = 0
    prior_sum = 0.0
    weighted_q = 0.0
    for a in range(num_actions):
        n = tree.children_visits[b, node, a]
        if n > 0:
            q = tree.children_reward[b, node, a] + discount * tree.children_value[b, node, a]
            out[a] = q
            prior = max(tree.children_prior[b, node, a], TINY_PRIOR)
            prior_sum += prior
            weighted_q += prior * q
            visit_sum += n
    mixed = tree.node_raw_value[b, node]
    if visit_sum > 0:
        mixed = (mixed + visit_sum * (weighted_q / prior_sum)) / (visit_sum + 1)
    for a in range(num_actions):
        if is_root and not tree.root_legal[b, a]:
            out[a] = 0.0
        elif tree.children_visits[b, node, a] == 0:
            out[a] = mixed


@njit(cache=True, inline="always", error_model="numpy")
def sigma_completed_q(
    tree: Tree, params: SearchParams, b: int, node: int, is_root: bool, out: np.ndarray
) -> None:
    """Writes σ(completed Q) of the children of `node` in tree b into `out` ([A] float64).

    σ(q) = (c_visit + max_a N(a)) · c_scale · (q - min q) / max(max q - min q, ε), the min and
    max taken over the node's (legal) children (paper eq. 8 after mctx's rescaling). Illegal
    root actions get -inf.
    """
    completed_q(tree, params.discount, b, node, is_root, out)
    num_actions = tree.children_visits.shape[2]
    low = np.inf
    high = -np.inf
    max_visits = 0
    for a in range(num_actions):
        if is_root and not tree.root_legal[b, a]:
            continue
        low = min(low, out[a])
        high = max(high, out[a])
        max_visits = max(max_visits, tree.children_visits[b, node, a])
    scale = (params.maxvisit_init + max_visits) * params.value_scale
    span = max(high - low, RESCALE_EPSILON)
    for a in range(num_actions):
        if is_root and not tree.root_legal[b, a]:
            out[a] = -np.inf
        else:
            out[a] = scale * (out[a] - low) / span


@njit(cache=True, error_model="numpy")
def root_completed_q(
    tree: Tree, params: SearchParams, completed: np.ndarray, sigma: np.ndarray
) -> None:
    """Fills completed Q ([B, A], 0 on illegal) and σ of it ([B, A], -inf on illegal) at every
    root: what the Gumbel policy acts on and learns from.
    """
    for b in range(completed.shape[0]):
        completed_q(tree, params.discount, b, ROOT_INDEX, True, completed[b])
        sigma_completed_q(tree, params, b, ROOT_INDEX, True, sigma[b])
