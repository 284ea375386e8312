"""A search's simulations as one compiled program (`policy.actor_inference: compiled`).

Runs in: collector, evaluator (the search's step). Where the network is an MLP MuZero network
(models/compiled_step.py can export its step), all of a search's simulations run in one numba
call: gather the parents' latents, step the network, expand and back up, select the next edges,
with the tree kernels of `mcts` and no crossing into Python or torch per simulation (mctx
compiles its whole search the same way). The roots still come from torch (`initial_inference`);
so does every step of a network the kernel cannot compute, through the frozen graph.

The step's arrays are exported again whenever the weights changed since the last search (the
same mark as the frozen graph's: identity, storage and version of every parameter and buffer),
so the loop always computes with the current weights; nothing about it needs saving in a
checkpoint.

numba's on-disk cache keys `run_simulations` by this file only, while it embeds the tree kernels
of `mcts/` and the step of models/compiled_step.py: after editing those, delete the `*.nbi` /
`*.nbc` files (`make clean`), or the old code runs.

Measured (CartPole MuZero, 50 simulations, one thread, eval searches, a 2-core AMD EPYC): ms per
search at B = 3 / 8 / 64, frozen 3.4 / 4.0 / 10.8, compiled 0.85 / 1.6 / 10.1. The first search
of a fresh checkout compiles the loop and the step (about 7 s here), cached after that.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from zeropipe.algos.graphs import weights_mark
from zeropipe.interrupts import ctrl_c_held
from zeropipe.mcts.backup import expand_and_backup_batch
from zeropipe.mcts.selection import SearchParams, traverse_batch
from zeropipe.mcts.tree import Tree
from zeropipe.models import Network
from zeropipe.models.compiled_step import MlpStep, export_mlp_step, mlp_step, scratch_rows


class CompiledLoop:
    """The simulations of a search of `network` in one numba call (a `mcts.SimulationLoop`).

    Args:
        network: the search's network (on the CPU).
    """

    def __init__(self, network: Network) -> None:
        self.network = network
        self._modules = tuple(network.modules())
        self._mark: tuple | None = None
        self.step: MlpStep | None = None

    def begin_search(self, mark: tuple | None = None) -> None:
        """A search starts: export the step's arrays if the weights changed. `mark`: the
        weights' mark (`graphs.weights_mark` of the network's modules) if the caller took it
        already (the frozen graph's `begin`), else it is taken here."""
        if mark is None:
            mark = weights_mark(self._modules)
        if mark != self._mark:
            self._mark = mark
            self.step = export_mlp_step(self.network)

    @property
    def available(self) -> bool:
        """Whether the network's step can run compiled (else the search steps through torch)."""
        return self.step is not None

    def __call__(
        self,
        tree: Tree,
        params: SearchParams,
        rule: int,
        store: np.ndarray,
        parents: np.ndarray,
        actions: np.ndarray,
    ) -> None:
        """Run every simulation of a search whose first edges `parents`, `actions` ([B]) are
        selected: node s + 1 of every tree, its latent `store[s + 1]` ([N, B, E] float32), is
        expanded by simulation s."""
        assert self.step is not None
        batch = parents.shape[0]
        rewards = np.empty(batch, dtype=np.float32)
        values = np.empty(batch, dtype=np.float32)
        logits = np.empty(tree.root_legal.shape, dtype=np.float32)
        with ctrl_c_held():  # a first call compiles: see zeropipe/interrupts.py
            run_simulations(
                self.step, store, parents, actions, params, rule,
                rewards, values, logits, scratch_rows(self.step, batch), *tree,
            )  # fmt: skip


@njit(cache=True, error_model="numpy")
def run_simulations(
    step: MlpStep,
    store: np.ndarray,
    parents: np.ndarray,
    actions: np.ndarray,
    params: SearchParams,
    rule: int,
    rewards: np.ndarray,
    values: np.ndarray,
    logits: np.ndarray,
    scratch: np.ndarray,
    *tree_fields: np.ndarray,
) -> None:
    """`mcts.search.run_search`'s simulation loop with the network's step compiled in: the same
    kernels in the same order (expand and back up node s + 1, then select), on [B] `rewards`,
    `values` and [B, A] `logits` rewritten by each step."""
    tree = Tree(*tree_fields)
    num_nodes, batch, width = store.shape
    latents = np.empty((batch, width), dtype=np.float32)
    for sim in range(num_nodes - 1):
        for b in range(batch):
            latents[b] = store[parents[b], b]
        mlp_step(step, latents, actions, store[sim + 1], rewards, values, logits, scratch)
        expand_and_backup_batch(tree, params, sim + 1, parents, actions, rewards, values, logits)
        if sim + 2 < num_nodes:
            traverse_batch(tree, params, rule, parents, actions)
