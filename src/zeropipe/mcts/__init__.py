"""Batched MuZero search over struct-of-arrays trees, with numba-compiled tree operations.

Runs in: any. The search consumes a model only through `RecurrentFn`; it knows nothing of
processes, networks or buffers.
"""

from zeropipe.mcts.acting import select_action
from zeropipe.mcts.contract import (
    RecurrentFn,
    SearchConfig,
    SearchOutput,
    SearchRoots,
    StepOutput,
)
from zeropipe.mcts.search import run_search

__all__ = [
    "RecurrentFn",
    "SearchConfig",
    "SearchOutput",
    "SearchRoots",
    "StepOutput",
    "run_search",
    "select_action",
]
