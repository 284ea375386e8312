"""Search policies: one small function per variant over the one batched search (mctx `policies.py`).

Runs in: any (collector, evaluator, driver reanalysis). A search policy takes the roots that the
network produced and returns everything its callers need, so that no caller ever reads visit
counts itself: the action to play (collect and eval variants), the policy target to store and
learn, the root value and the root Q values. Adding a variant is one function and one entry in
`SEARCH_POLICIES`; the Collector, Evaluator and TargetComputer do not change. B denotes the
batch of roots and A the actions.

- `puct` (MuZero): PUCT search with Dirichlet root noise, visit-count policy target.
- `gumbel` (Gumbel MuZero, Danihelka et al. 2022; mctx `gumbel_muzero_policy`): Gumbel top-k and
  sequential halving at the root, the deterministic improved-policy rule below it, and the
  improved policy softmax(logits + σ(completed Q)) as the policy target; LightZero's choices
  (prior term, collect noise, collect action) are options (`gumbel.py`).
- `sampled` (Sampled MuZero, Hubert et al. 2021): PUCT over K sampled actions per node
  (`sampled.py`); the policy target is the visit distribution over the K root slots, returned
  with the K root actions themselves (`PolicyOutput.sampled_actions`).
- `chance` (Stochastic MuZero, Antonoglou et al. 2022): PUCT at decision nodes, outcomes drawn
  from the chance prior at chance nodes, visit-count policy target.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Literal

import numpy as np

from zeropipe.interrupts import ctrl_c_held
from zeropipe.mcts.action_choice import select_action
from zeropipe.mcts.contract import RecurrentFn, SearchConfig, SearchOutput, SearchRoots
from zeropipe.mcts.gumbel import gumbel_options, prepare_gumbel_search
from zeropipe.mcts.qtransform import root_completed_q
from zeropipe.mcts.sampled import RootNoise, SampledSlots
from zeropipe.mcts.search import run_search, search_params
from zeropipe.mcts.selection import CHANCE, GUMBEL, LOW_LOGIT

# collect: exploration noise and a sampled action; eval: no noise, the greedy action;
# reanalyze: fresh policy targets for stored states (noise as in collect; the action is unused).
ActingMode = Literal["collect", "eval", "reanalyze"]


@dataclass(frozen=True)
class ActingParams:
    """How a search is used.

    Attributes:
        mode: collect, eval or reanalyze (see `ActingMode`).
        temperature: collect: visit-count temperature of the action choice (PUCT).
        epsilon: collect: probability of a uniform legal action instead.
    """

    mode: ActingMode
    temperature: float = 1.0
    epsilon: float = 0.0


@dataclass(frozen=True)
class PolicyOutput:
    """What a search policy returns for B roots.

    Attributes:
        action: [B] int64 action to play; sampled search over continuous actions: [B, D]
            float32 in (-1, 1) (then policy_target, q_values and visit_counts are [B, K] over
            the root slots).
        policy_target: [B, A] float32 policy the learner imitates (0 on illegal actions).
        root_value: [B] float32 search value of each root (the n-step bootstrap / priority input).
        q_values: [B, A] float32 Q of each root child (policy-specific completion of unvisited
            children; 0 where the policy does not define one).
        visit_counts: [B, A] int32 root child visits (for statistics and tests, never acting).
        sampled_actions: sampled search only: [B, K] int64 (continuous: [B, K, D] float32) the
            real actions of the K root slots
            (the full-A fields above are their statistics, scattered onto these actions);
            None for searches over the full action set.
        sampled_mask: sampled search only: [B, K] bool slots that hold a legal sampled action
            (False where a root has fewer than K legal actions).
    """

    action: np.ndarray
    policy_target: np.ndarray
    root_value: np.ndarray
    q_values: np.ndarray
    visit_counts: np.ndarray
    sampled_actions: np.ndarray | None = None
    sampled_mask: np.ndarray | None = None


# (roots, the model's recurrent step, search constants, generator, how it is used) → output.
SearchPolicy = Callable[
    [SearchRoots, RecurrentFn, SearchConfig, np.random.Generator, ActingParams], PolicyOutput
]


def visit_distribution(visit_counts: np.ndarray) -> np.ndarray:
    """[B, A] root visits normalised per row (a row without visits stays 0)."""
    totals = np.maximum(visit_counts.sum(axis=1, keepdims=True), 1)
    return (visit_counts / totals).astype(np.float32)


def puct_policy(
    roots: SearchRoots,
    recurrent_fn: RecurrentFn,
    cfg: SearchConfig,
    rng: np.random.Generator,
    acting: ActingParams,
) -> PolicyOutput:
    """MuZero: PUCT search, visit-count policy target, action from the visit counts.

    Collect and reanalyze mix Dirichlet noise into the root prior (MuZero app. C); collect
    samples visits^(1/T) with ε-greedy on top (app. D), eval takes the most visited action.
    """
    cfg = _tie_rule(cfg, acting)
    result = run_search(roots, recurrent_fn, cfg, rng, add_noise=acting.mode != "eval")
    return _visit_policy(result, roots, rng, acting)


def _tie_rule(cfg: SearchConfig, acting: ActingParams) -> SearchConfig:
    """`cfg` with the eval tie rule in eval searches (LightZero's UniZero eval search alone sets
    `deterministic`, unizero.py:2122; its other trees break eval ties at random too)."""
    if acting.mode == "eval" and cfg.eval_tie_break != cfg.tie_break:
        return replace(cfg, tie_break=cfg.eval_tie_break)
    return cfg


def chance_policy(
    roots: SearchRoots,
    recurrent_fn: RecurrentFn,
    cfg: SearchConfig,
    rng: np.random.Generator,
    acting: ActingParams,
) -> PolicyOutput:
    """Stochastic MuZero (Antonoglou et al. 2022): `puct_policy` over a tree with chance nodes.

    Decision nodes use PUCT, chance nodes draw their outcome from the model's chance prior with a
    seed taken from `rng` (so eval, whose generator is seeded identically, is reproducible);
    `recurrent_fn` takes the per-row expansion kind (see `run_search`). Reanalysis calls this
    same policy, so reanalysed targets come from the chance search too (LightZero falls back to
    its plain PUCT reanalysis there).
    """
    result = run_search(
        roots,
        recurrent_fn,
        _tie_rule(cfg, acting),
        rng,
        add_noise=acting.mode != "eval",
        rule=CHANCE,
        chance_space_size=cfg.chance_space_size,
    )
    return _visit_policy(result, roots, rng, acting)


def _visit_policy(
    result: SearchOutput, roots: SearchRoots, rng: np.random.Generator, acting: ActingParams
) -> PolicyOutput:
    """Visit-count target; collect samples visits^(1/T) with ε-greedy, eval/reanalyze argmax."""
    counts = result.visit_counts
    if acting.mode == "collect":
        action = select_action(
            counts, acting.temperature, rng, epsilon=acting.epsilon, action_mask=roots.action_mask
        )
    else:
        action = select_action(counts, 1.0, rng, deterministic=True)
    return PolicyOutput(
        action=action,
        policy_target=visit_distribution(counts),
        root_value=result.root_value,
        q_values=result.q_values,
        visit_counts=counts,
    )


def gumbel_policy(
    roots: SearchRoots,
    recurrent_fn: RecurrentFn,
    cfg: SearchConfig,
    rng: np.random.Generator,
    acting: ActingParams,
) -> PolicyOutput:
    """Gumbel MuZero: sequential halving at the root, improved-policy target (paper section 4).

    Collect and reanalyze draw fresh Gumbel noise g = gumbel_scale · Gumbel(0, 1) per root
    action from `rng` (LightZero's fixed-seed noise is not reproduced), then, with
    `collect_root_noise`, the Dirichlet root noise; eval searches with g = 0 and no noise. The
    policy target is the improved policy π' = softmax(logits + σ(completed Q)) over legal
    actions (paper eq. 11), with the log of the tree's root prior standing in for the logits
    (softmax is shift-invariant; under `prior_term="probability"` that is the prior
    probabilities, LightZero's term, see `gumbel.py`). Eval acts with the argmax of π'; collect
    too with `collect_action="improved_argmax"`, else with the sequential-halving winner, the
    highest g + logits + σ(completed Q) among the most visited actions (paper section 4).
    Temperature and ε are not used. `q_values` is the completed Q before σ.
    """
    opts = gumbel_options(cfg)
    mask = roots.action_mask.astype(np.bool_)
    if acting.mode == "eval":
        gumbel = np.zeros(mask.shape, dtype=np.float32)
    else:
        gumbel = (opts.gumbel_scale * rng.gumbel(size=mask.shape)).astype(np.float32)
    noise = opts.collect_root_noise and acting.mode != "eval"
    roots, recurrent_fn, add_noise = prepare_gumbel_search(roots, recurrent_fn, opts, rng, noise)
    result = run_search(
        roots,
        recurrent_fn,
        opts,
        rng,
        add_noise=add_noise,
        rule=GUMBEL,
        gumbel=gumbel,
    )
    completed = np.zeros(mask.shape, dtype=np.float64)  # [B, A]
    sigma = np.empty(mask.shape, dtype=np.float64)  # [B, A], -inf on illegal actions
    with ctrl_c_held():  # a first call compiles: see zeropipe/interrupts.py
        root_completed_q(result.tree, search_params(opts), completed, sigma)
    with np.errstate(divide="ignore"):
        log_prior = np.log(result.tree.children_prior[:, 0].astype(np.float64))  # [B, A]
    improved = _softmax(log_prior + sigma)  # [B, A], 0 on illegal actions
    counts = result.visit_counts
    if acting.mode == "eval" or opts.collect_action == "improved_argmax":
        action = np.argmax(np.where(mask, improved, -1.0), axis=1)
    else:
        most_visited = counts == counts.max(axis=1, keepdims=True)
        score = np.maximum(LOW_LOGIT, gumbel + log_prior + sigma)
        action = np.argmax(np.where(most_visited & mask, score, -np.inf), axis=1)
    return PolicyOutput(
        action=action.astype(np.int64),
        policy_target=improved.astype(np.float32),
        root_value=result.root_value,
        q_values=completed.astype(np.float32),
        visit_counts=counts,
    )


def sampled_policy(
    roots: SearchRoots,
    recurrent_fn: RecurrentFn,
    cfg: SearchConfig,
    rng: np.random.Generator,
    acting: ActingParams,
) -> PolicyOutput:
    """Sampled MuZero: PUCT over K sampled actions per node, target over the K root slots.

    Every search samples its own K root actions (so reanalysis re-samples). The Dirichlet root
    noise is mixed in for collect and reanalyze with the `density` prior term only, into the
    unnormalised sampled priors as the reference (`sampled.py`; with `uniform` the PUCT prior
    ignores it). Collect samples a slot from
    visits^(1/T) with ε-greedy over the legal slots, eval takes the most visited slot; the
    action played is the slot's real action. The root slots' visits, visit distribution and Q
    are returned scattered onto their (distinct) real actions over the full action set, so
    that the cross-entropy over the sampled actions, Σ_k target_k · log π(a_k), is the plain
    cross-entropy against that target; `sampled_actions` names the K root actions.
    Continuous actions (`cfg.continuous_actions`, logits [B, 2D]) play a [B, D] action in
    (-1, 1) and keep the target, Q and visits over the K root slots ([B, K]).
    """
    batch_size, num_actions = roots.policy_logits.shape
    dim = num_actions // 2 if cfg.continuous_actions else 0
    if dim > 0:  # every continuous action is legal; the env's mask is [B, D], not [B, 2D]
        roots = replace(roots, action_mask=np.ones((batch_size, num_actions), dtype=np.bool_))
    noise = None
    if acting.mode != "eval":
        noise = RootNoise(cfg.root_noise_weight, cfg.root_dirichlet_alpha)
    slots = SampledSlots(
        batch_size,
        cfg.num_simulations + 1,
        cfg.num_sampled_actions,
        cfg.sampled_prior,
        rng,
        dim,
        root_noise=noise,
    )
    # the slots mix the noise into the sampled priors before the search normalises them
    result = run_search(
        roots, recurrent_fn, _tie_rule(cfg, acting), rng, add_noise=False, slots=slots
    )
    counts = result.visit_counts  # [B, K]
    legal = result.tree.root_legal.copy()  # [B, K] slots holding a legal sampled action
    if acting.mode == "collect":
        slot = select_action(
            counts, acting.temperature, rng, epsilon=acting.epsilon, action_mask=legal
        )
    else:
        slot = select_action(counts, 1.0, rng, deterministic=True)
    sampled = slots.root_actions()  # [B, K] or [B, K, D]
    action = sampled[np.arange(batch_size), slot]  # [B] or [B, D]
    if dim > 0:  # continuous: the target and statistics stay over the K root slots
        return PolicyOutput(
            action=action,
            policy_target=visit_distribution(counts),
            root_value=result.root_value,
            q_values=result.q_values,
            visit_counts=counts,
            sampled_actions=sampled,
            sampled_mask=legal,
        )
    return PolicyOutput(
        action=action,
        policy_target=_scatter(visit_distribution(counts), sampled, legal, num_actions),
        root_value=result.root_value,
        q_values=_scatter(result.q_values, sampled, legal, num_actions),
        visit_counts=_scatter(counts, sampled, legal, num_actions),
        sampled_actions=sampled,
        sampled_mask=legal,
    )


def _scatter(
    per_slot: np.ndarray, actions: np.ndarray, legal: np.ndarray, num_actions: int
) -> np.ndarray:
    """[B, K] slot values onto their [B, K] distinct real actions: [B, A], 0 elsewhere; slots
    that are not `legal` (which repeat another slot's action) add nothing."""
    full = np.zeros((per_slot.shape[0], num_actions), dtype=per_slot.dtype)
    rows = np.arange(per_slot.shape[0])[:, None]
    np.add.at(full, (rows, actions), np.where(legal, per_slot, 0))
    return full


def _softmax(logits: np.ndarray) -> np.ndarray:
    """Row softmax of [B, A] float64 logits; -inf entries get 0 (each row has a finite one)."""
    weights = np.exp(logits - logits.max(axis=1, keepdims=True))
    return weights / weights.sum(axis=1, keepdims=True)


SEARCH_POLICIES: dict[str, SearchPolicy] = {
    "puct": puct_policy,
    "gumbel": gumbel_policy,
    "sampled": sampled_policy,
    "chance": chance_policy,
}


def search_policy(name: str) -> SearchPolicy:
    """The registered search policy `name`.

    Raises:
        KeyError: no policy of that name, with the registered names.
    """
    try:
        return SEARCH_POLICIES[name]
    except KeyError:
        raise KeyError(
            f"unknown search policy {name!r}; registered: {', '.join(sorted(SEARCH_POLICIES))}"
        ) from None
