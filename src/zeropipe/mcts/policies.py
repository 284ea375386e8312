"""Search policies: one small function per variant over the one batched search (mctx `policies.py`).

Runs in: any (collector, evaluator, driver reanalysis). A search policy takes the roots that the
network produced and returns everything its callers need, so that no caller ever reads visit
counts itself: the action to play (collect and eval variants), the policy target to store and
learn, the root value and the root Q values. Adding a variant is one function and one entry in
`SEARCH_POLICIES`; the Collector, Evaluator and TargetComputer do not change. B denotes the
batch of roots and A the actions.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import numpy as np

from zeropipe.mcts.acting import select_action
from zeropipe.mcts.contract import RecurrentFn, SearchConfig, SearchRoots
from zeropipe.mcts.search import run_search

# collect: exploration noise and a sampled action; eval: no noise, the greedy action;
# reanalyze: fresh policy targets for stored states (noise as in collect; the action is unused).
Mode = Literal["collect", "eval", "reanalyze"]


@dataclass(frozen=True)
class ActingParams:
    """How a search is used.

    Attributes:
        mode: collect, eval or reanalyze (see `Mode`).
        temperature: collect: visit-count temperature of the action choice (PUCT).
        epsilon: collect: probability of a uniform legal action instead.
    """

    mode: Mode
    temperature: float = 1.0
    epsilon: float = 0.0


@dataclass(frozen=True)
class PolicyOutput:
    """What a search policy returns for B roots.

    Attributes:
        action: [B] int64 action to play.
        policy_target: [B, A] float32 policy the learner imitates (0 on illegal actions).
        root_value: [B] float32 search value of each root (the n-step bootstrap / priority input).
        q_values: [B, A] float32 Q of each root child (policy-specific completion of unvisited
            children; 0 where the policy does not define one).
        visit_counts: [B, A] int32 root child visits (for statistics and tests, never acting).
    """

    action: np.ndarray
    policy_target: np.ndarray
    root_value: np.ndarray
    q_values: np.ndarray
    visit_counts: np.ndarray


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
    result = run_search(roots, recurrent_fn, cfg, rng, add_noise=acting.mode != "eval")
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


SEARCH_POLICIES: dict[str, SearchPolicy] = {"puct": puct_policy}


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
