"""One compiled call per simulation: back up the last leaf, then walk every tree to the next one.

Runs in: any. `run_search` calls `simulation_step` once per simulation, between two batched model
calls. Fusing the backup of simulation s with the traversal of simulation s + 1 halves the
Python → numba crossings, and the tree's fields arrive as separate array arguments (re-packed into
a `Tree` inside the kernel) because numba types plain arrays on a C fast path but a NamedTuple
argument in Python: ~1 µs against ~3 µs per call, a large share of a B = 8 simulation.

numba's on-disk cache (`cache=True`) keys each function by its own file only: the cached
`simulation_step` embeds the code of `traverse_batch`, `traverse_chance_batch`,
`expand_and_backup_batch` and what they inline from `selection.py`, `chance.py`, `backup.py`,
`qtransform.py` and `streams.py`, and is not invalidated when only
those files change (numba documents this limit). After editing them, delete the `*.nbi` / `*.nbc`
files under `src/zeropipe/mcts/__pycache__/` (or touch this file), or the old kernels run.

All kernels use numba's "numpy" error model: no division in them can be by zero (each is guarded
or has a denominator >= 1 or >= value_delta_max > 0), and the "python" model's zero checks cost
about 40% of the selection time.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numba import njit

from zeropipe.interrupts import ctrl_c_held
from zeropipe.mcts.backup import expand_and_backup_batch
from zeropipe.mcts.chance import chance_expand_and_backup_batch, traverse_chance_batch
from zeropipe.mcts.selection import SearchParams, traverse_batch
from zeropipe.mcts.tree import ROOT_INDEX, Tree


@njit(cache=True, error_model="numpy")
def simulation_step(
    leaf: int,
    rewards: np.ndarray,
    values: np.ndarray,
    logits: np.ndarray,
    params: SearchParams,
    rule: int,
    traverse: bool,
    parents: np.ndarray,
    actions: np.ndarray,
    *tree_fields: np.ndarray,
) -> None:
    """Expands and backs up node `leaf` of every tree, then (if `traverse`) selects the next edge.

    Args:
        leaf: index of the node the last model call produced; ROOT_INDEX before the first
            simulation, when there is nothing to back up.
        rewards: [B] float32 predicted rewards of the new edges.
        values: [B] float32 predicted values of the new nodes.
        logits: [B, A] float32 predicted prior logits at the new nodes.
        params: search constants.
        rule: which descent selects the next edges (a rule code of `selection.py`).
        traverse: whether to select the edges of the next simulation.
        parents: [B] int64, in: parents of the new nodes; out: parents of the next edges.
        actions: [B] int64, in: actions of the new edges; out: actions of the next edges.
        *tree_fields: the fields of a `Tree`, in order (`*tree` on the Python side).
    """
    tree = Tree(*tree_fields)
    if leaf != ROOT_INDEX:
        expand_and_backup_batch(tree, params, leaf, parents, actions, rewards, values, logits)
    if traverse:
        traverse_batch(tree, params, rule, parents, actions)


@njit(cache=True, error_model="numpy")
def chance_simulation_step(
    leaf: int,
    rewards: np.ndarray,
    values: np.ndarray,
    logits: np.ndarray,
    params: SearchParams,
    rule: int,
    traverse: bool,
    parents: np.ndarray,
    actions: np.ndarray,
    *tree_fields: np.ndarray,
) -> None:
    """`simulation_step` for the CHANCE rule (`rule` is unused): a kernel of its own, because a
    second descent or backup inside `simulation_step` slows the PUCT one (see `selection.py` on
    numba's refcount pruning; a chance branch in the PUCT backup measured 3x slower)."""
    tree = Tree(*tree_fields)
    if leaf != ROOT_INDEX:
        chance_expand_and_backup_batch(
            tree, params, leaf, parents, actions, rewards, values, logits
        )
    if traverse:
        traverse_chance_batch(tree, params, parents, actions)


class KernelCall:
    """One search's calls of a simulation kernel, past numba's per-call dispatch after the first.

    numba's dispatcher types every argument of every call to pick the compiled specialization
    (about 7 µs of a 15 µs `simulation_step` call at B = 8 on this machine, most of a call's cost
    at small B). Within one search every argument keeps its type (the tree's arrays, the [B]
    int64 `parents` / `actions`, float32 C step outputs, the same `SearchParams`), so after the
    first call goes through the dispatcher, the later ones call its compiled entry point
    directly: the only specialization the dispatcher holds, which must be the one that call used.
    Where it holds several (a caller compiled others), or numba's JIT is off, every call
    dispatches.

    Args:
        kernel: `simulation_step` or `chance_simulation_step`.
        tree: the search's tree; its fields are the kernel's trailing arguments.
    """

    def __init__(self, kernel: Callable[..., None], tree: Tree) -> None:
        self.kernel = kernel
        self.tree = tuple(tree)
        self.entry: Callable[..., None] | None = None

    def __call__(self, *args: object) -> None:
        """`kernel(*args, *tree)`."""
        if self.entry is not None:
            self.entry(*args, self.tree)  # the entry point takes the star-args as one tuple
            return
        with ctrl_c_held():  # the first call compiles: see zeropipe/interrupts.py
            self.kernel(*args, *self.tree)
        overloads = getattr(self.kernel, "overloads", None)
        if overloads is not None and len(overloads) == 1:
            self.entry = next(iter(overloads.values())).entry_point
