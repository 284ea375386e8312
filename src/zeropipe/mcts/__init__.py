"""Batched MCTS over struct-of-arrays trees, with numba-compiled tree operations.

Runs in: any. One search loop (`run_search`) with LightZero-exact PUCT, Gumbel MuZero and
chance-node (Stochastic MuZero) rules; callers use a registered search policy
(`SEARCH_POLICIES`: `puct`, `gumbel`, `chance`). The search
consumes a model only through `RecurrentFn`; it knows nothing of processes, networks or buffers.
"""

from zeropipe.mcts.action_choice import select_action
from zeropipe.mcts.contract import (
    RecurrentFn,
    SearchConfig,
    SearchOutput,
    SearchRoots,
    StepOutput,
)
from zeropipe.mcts.policies import (
    SEARCH_POLICIES,
    ActingParams,
    PolicyOutput,
    SearchPolicy,
    search_policy,
)
from zeropipe.mcts.search import run_search

__all__ = [
    "SEARCH_POLICIES",
    "ActingParams",
    "PolicyOutput",
    "RecurrentFn",
    "SearchConfig",
    "SearchOutput",
    "SearchPolicy",
    "SearchRoots",
    "StepOutput",
    "run_search",
    "search_policy",
    "select_action",
]
