"""Child selection and the batched root-to-leaf traversal, compiled with numba.

Runs in: any. Each selection rule is one small `@njit` function over one node of one tree
(`puct_select`, `gumbel_root_select`, `gumbel_interior_select`); a variant's descent strings
its rules together from the root to the first unexpanded edge (`descend_puct`,
`descend_gumbel`), and `traverse_batch` picks the descent by a rule code once per tree. A
variant (sampled actions, chance outcomes) adds its rules, one descent and one code, not a
second search loop. B denotes the batch of roots and A the actions.

Why one descent per variant rather than one descent that dispatches per node: numba
reference-counts every array it reads from the tree and relies on LLVM's refcount-pruning pass
to delete those counts; a per-node dispatch between rules made the control flow too complex for
that pass, and the PUCT traversal ran 4-5x slower (measured: ~700-1100 ns against ~150-230 ns
per node at B = 8, A = 2; with NUMBA_LLVM_REFPRUNE_PASS=0 the fast form slows down the same way).

PUCT follows LightZero's C++ tree exactly (`cbatch_traverse`, `compute_mean_q`, `cselect_child`,
`cucb_score`, `CMinMaxStats`): unvisited children take the parent-mean-Q chain, pb_c counts the
parent's visits minus one, min-max normalisation then a clamp to [0, 1], and LightZero's tie list
(`break_tie`): with `SearchParams.random_ties` a uniform draw among the actions tied within 1e-6
of the maximum (LightZero's collect, reanalysis and, outside UniZero, eval search), otherwise the
first action of maximal score (its `deterministic` flag, UniZero's eval). The Gumbel rules
follow mctx (`gumbel_muzero_root_action_selection`, `gumbel_muzero_interior_action_selection`)
over the completed Q of `qtransform.py`. The per-node functions are inlined into the descents
(`inline="always"`), and every kernel uses numba's "numpy" error model (see `simulate.py`).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from zeropipe.mcts.params import SearchParams
from zeropipe.mcts.qtransform import sigma_completed_q
from zeropipe.mcts.streams import keyed_uniform
from zeropipe.mcts.tree import ROOT_INDEX, UNVISITED, Tree

# Rule codes understood by `traverse_batch`: which descent walks the trees.
PUCT = 0  # MuZero appendix B, LightZero's C++ semantics, at every node
# Danihelka et al. 2022: sequential halving over g + logits + σ(completed Q) at the root, the
# improved policy minus the visit share (paper eq. 14) below it.
GUMBEL = 1
# Antonoglou et al. 2022 (Stochastic MuZero): PUCT at decision nodes, an outcome drawn from the
# prior at chance nodes; its descent lives in `chance.py` and is dispatched by `simulate.py`.
CHANCE = 2

# mctx's floor for g + logits + σ(q), so that a zero prior (log 0 = -inf) still compares.
LOW_LOGIT = -1e9
# LightZero's tie window: a score within this of the running maximum joins the tie list
# (`cselect_child`, ctree_muzero/lib/cnode.cpp:568; the same constant in every C++ tree).
TIE_EPSILON = 1e-6


# Earlier names of SearchParams (PuctParams before Gumbel; selection.SearchParams before it had
# its own module). numba's on-disk cache indexes pickle argument types by name, and an index
# whose type no longer resolves fails to load instead of being recompiled: keep the aliases so
# that caches written by earlier checkouts are simply found stale.
PuctParams = SearchParams


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
def mean_q(tree: Tree, b: int, node: int, is_root: bool, parent_q: float, discount: float) -> float:
    """LightZero's `compute_mean_q`: the Q that PUCT assumes for the unvisited children of `node`.

    With q = r + γ·v over the k visited children: at the root, their mean (0 while k = 0);
    below it, (parent_q + Σ q) / (k + 1), where parent_q is the value this function returned for
    the node's parent earlier in the same descent.
    """
    total = 0.0
    count = 0
    for a in range(tree.children_visits.shape[2]):
        if tree.children_visits[b, node, a] > 0:
            total += tree.children_reward[b, node, a] + discount * tree.children_value[b, node, a]
            count += 1
    if is_root:
        return total / count if count > 0 else 0.0
    return (parent_q + total) / (count + 1)


@njit(cache=True, inline="always", error_model="numpy")
def puct_select(
    tree: Tree,
    params: SearchParams,
    b: int,
    node: int,
    is_root: bool,
    parent_q: float,
    scores: np.ndarray,
) -> tuple[int, float]:
    """Picks the child of `node` in tree b with the highest PUCT score (MuZero appendix B eq. 2).

    score(a) = clamp01(Q_norm(a)) + pb_c · prior(a) · sqrt(N) / (1 + n(a)) with
    pb_c = log((N + c_base + 1) / c_base) + c_init and N = visits(node) - 1 (LightZero; this is
    the children's visit sum). Unvisited children score the node's `mean_q`, computed from
    `parent_q`. Illegal root actions are never picked; interior nodes treat every action as
    legal. Ties: `break_tie` with `params.random_ties`, else the first action of maximal score.

    Args:
        tree: the batch of trees.
        params: search constants.
        b: which tree.
        node: the node whose child is chosen (expanded).
        is_root: whether `node` is the root, whose illegal actions are excluded.
        parent_q: the `mean_q` of the node's parent in this descent (unused at the root).
        scores: [A] float64 scratch buffer, left holding the scores (-inf on illegal actions).

    Returns:
        The chosen action and the node's mean Q (its children's parent_q).
    """
    unvisited_q = mean_q(tree, b, node, is_root, parent_q, params.discount)
    parent_visits = tree.node_visits[b, node] - 1
    pb_c = math.log((parent_visits + params.pb_c_base + 1.0) / params.pb_c_base) + params.pb_c_init
    exploration = pb_c * math.sqrt(parent_visits)
    fill_q = normalized_q(tree, b, unvisited_q, params.value_delta_max)
    best = -np.inf
    choice = -1
    for a in range(tree.children_visits.shape[2]):
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
        if scores[a] > best:
            best = scores[a]
            choice = a
    if params.random_ties:
        choice = break_tie(tree, b, node, scores, choice, tree.children_visits.shape[2])
    return choice, unvisited_q


@njit(cache=True, inline="always", error_model="numpy")
def break_tie(tree: Tree, b: int, node: int, scores: np.ndarray, first: int, width: int) -> int:
    """A uniform pick among the actions LightZero's `cselect_child` would list as tied.

    LightZero walks the actions in order, restarts its list at every strictly larger score and
    appends every score within TIE_EPSILON below the running maximum, then takes
    `list[rand() % size]` (ctree_muzero/lib/cnode.cpp:567-592). Its list is therefore `first`
    (the first action of maximal score M) and every later action scoring at least M - ε; an
    earlier action within ε of M was dropped when M arrived. The draw is keyed by the tree's
    `tie_seed`, the tree, the node and the node's visit count (`streams.keyed_uniform`), so a
    search replays its choices from its seed while each visit of a node draws afresh.

    Args:
        tree: the batch of trees.
        b: which tree.
        node: the node whose child is chosen.
        scores: [>= width] float64 scores of the node's children (-inf where not allowed).
        first: the first action of maximal score.
        width: how many of the node's children compete.

    Returns:
        The chosen action (`first` when nothing ties with it).
    """
    floor = scores[first] - TIE_EPSILON
    count = 0
    for a in range(first, width):
        if scores[a] >= floor:
            count += 1
    if count == 1:
        return first
    u = keyed_uniform(tree.tie_seed[0], b, node, tree.node_visits[b, node])
    pick = min(int(u * count), count - 1)
    for a in range(first, width):
        if scores[a] >= floor:
            if pick == 0:
                return a
            pick -= 1
    return first


@njit(cache=True, inline="always", error_model="numpy")
def gumbel_root_select(
    tree: Tree, params: SearchParams, b: int, sigma: np.ndarray, scores: np.ndarray
) -> int:
    """Sequential halving at the root of tree b (paper section 4; mctx semantics).

    Only legal actions whose visit count equals the schedule's count for this simulation index
    (`tree.root_considered`) compete; among them the highest g + log prior + σ(completed Q)
    wins, floored at LOW_LOGIT. While nothing is visited this is Gumbel top-k without
    replacement: the unvisited actions share one completed Q, so g + logits alone decides.

    Args:
        tree: the batch of trees.
        params: search constants.
        b: which tree.
        sigma: [A] float64 scratch for σ(completed Q).
        scores: [A] float64 scratch, left holding the scores (-inf where not considered).

    Returns:
        The chosen action.
    """
    sigma_completed_q(tree, params, b, ROOT_INDEX, True, sigma)
    simulation = tree.node_visits[b, ROOT_INDEX] - 1  # the root's visit sum
    considered = tree.root_considered[b, simulation]
    best = -np.inf
    choice = -1
    fallback = -1  # the best legal action, should the schedule name no visit count present
    fallback_best = -np.inf
    for a in range(tree.children_visits.shape[2]):
        scores[a] = -np.inf
        if not tree.root_legal[b, a]:
            continue
        logit = math.log(tree.children_prior[b, ROOT_INDEX, a])  # -inf for a zero prior
        score = max(LOW_LOGIT, tree.root_gumbel[b, a] + logit + sigma[a])
        if score > fallback_best:
            fallback_best = score
            fallback = a
        if tree.children_visits[b, ROOT_INDEX, a] == considered:
            scores[a] = score
            if score > best:
                best = score
                choice = a
    return choice if choice >= 0 else fallback


@njit(cache=True, inline="always", error_model="numpy")
def gumbel_interior_select(
    tree: Tree, params: SearchParams, b: int, node: int, sigma: np.ndarray, scores: np.ndarray
) -> int:
    """The deterministic interior rule: argmax of π'(a) - N(a) / (1 + Σ_b N(b)) (paper eq. 14).

    π' = softmax(logits + σ(completed Q)) is the improved policy, computed as
    prior · exp(σ - max σ), normalised: softmax is shift-invariant, so the stored prior stands in
    for the logits. The first maximal action wins.

    Args:
        tree: the batch of trees.
        params: search constants.
        b: which tree.
        node: the node whose child is chosen.
        sigma: [A] float64 scratch for σ(completed Q).
        scores: [A] float64 scratch, left holding the scores.

    Returns:
        The chosen action.
    """
    sigma_completed_q(tree, params, b, node, False, sigma)
    num_actions = tree.children_visits.shape[2]
    top = sigma[0]
    for a in range(1, num_actions):
        top = max(top, sigma[a])
    weight_sum = 0.0
    visit_sum = 0
    for a in range(num_actions):
        scores[a] = tree.children_prior[b, node, a] * math.exp(sigma[a] - top)
        weight_sum += scores[a]
        visit_sum += tree.children_visits[b, node, a]
    best = -np.inf
    choice = -1
    for a in range(num_actions):
        scores[a] = scores[a] / weight_sum - tree.children_visits[b, node, a] / (1.0 + visit_sum)
        if scores[a] > best:
            best = scores[a]
            choice = a
    return choice


@njit(cache=True, error_model="numpy")
def descend_puct(tree: Tree, params: SearchParams, b: int, scores: np.ndarray) -> tuple[int, int]:
    """PUCT from the root of tree b to the first unexpanded edge.

    The parent-mean-Q chain of LightZero's `cbatch_traverse` is carried down the descent and
    restarts at the root.

    Returns:
        The edge: (parent node, action).
    """
    node = np.int64(ROOT_INDEX)
    action, parent_q = puct_select(tree, params, b, node, True, 0.0, scores)
    child = tree.children_index[b, node, action]
    while child != UNVISITED:
        node = np.int64(child)  # one integer type for `node`: one compiled specialisation
        action, parent_q = puct_select(tree, params, b, node, False, parent_q, scores)
        child = tree.children_index[b, node, action]
    return node, action


@njit(cache=True, error_model="numpy")
def descend_gumbel(
    tree: Tree, params: SearchParams, b: int, scores: np.ndarray, sigma: np.ndarray
) -> tuple[int, int]:
    """Gumbel MuZero from the root of tree b to the first unexpanded edge: sequential halving
    at the root, the deterministic improved-policy rule below it.

    Returns:
        The edge: (parent node, action).
    """
    node = np.int64(ROOT_INDEX)
    action = gumbel_root_select(tree, params, b, sigma, scores)
    child = tree.children_index[b, node, action]
    while child != UNVISITED:
        node = np.int64(child)
        action = gumbel_interior_select(tree, params, b, node, sigma, scores)
        child = tree.children_index[b, node, action]
    return node, action


@njit(cache=True, error_model="numpy")
def traverse_batch(
    tree: Tree,
    params: SearchParams,
    rule: int,
    parents: np.ndarray,
    actions: np.ndarray,
) -> None:
    """Walks every tree from its root to the first unexpanded edge.

    Args:
        tree: the batch of trees.
        params: search constants.
        rule: which descent (a rule code at the top of this module).
        parents: [B] int64 output: the node whose child will be expanded.
        actions: [B] int64 output: the action of that edge. Together they address the parent
            latent and the recurrent model's input.
    """
    num_actions = tree.children_index.shape[2]
    scores = np.empty(num_actions, dtype=np.float64)
    sigma = np.empty(num_actions, dtype=np.float64)
    for b in range(tree.children_index.shape[0]):
        if rule == PUCT:
            node, action = descend_puct(tree, params, b, scores)
        elif rule == GUMBEL:
            node, action = descend_gumbel(tree, params, b, scores, sigma)
        else:
            raise ValueError("traverse_batch: unknown rule code")
        parents[b] = node
        actions[b] = action
