"""Speed of the batched MCTS with a zero-cost model: simulations per second.

Runs in: any (`python -m benchmarks.bench_search`, or `make bench`). Three measurements per
(B, A), 50 simulations:
- search: the PUCT `run_search` end to end (numba tree kernels + Python glue + latent store
  gathers), with a recurrent_fn that returns preallocated constant arrays and a [B, 1] latent,
  so the model costs nothing;
- tree: the PUCT numba kernels alone (tree allocation, root init, one `simulation_step` per
  simulation), the same loop without the model call and the latent store;
- gumbel: the `gumbel` search policy in collect mode end to end (Gumbel noise, the search with
  the Gumbel rule, completed Q and the improved policy at the root), with the same zero-cost
  model;
- sampled: the `sampled` search policy in collect mode end to end (K sampled actions per
  node out of A = 20, for K in `SAMPLED_KS`; the slot → action map and the sampling at every
  expansion), with the same zero-cost model over 20 actions (`bench_sampled`).
- chance: the `chance` search policy (Stochastic MuZero) in collect mode end to end, over a tree
  of decision and chance nodes (CHANCE_SPACE_SIZE outcomes, drawn from a constant prior), with a
  zero-cost model of max(A, C)-wide logits. Each simulation expands an afterstate or a state.
A simulation counts once per root: sims/s = B · num_simulations / seconds per search. JIT compile
time is excluded (one warm-up search per case); each figure is the best of `repeats` timings.
Targets on the same machine, LightZero's C++ tree: search 42k sims/s (B=8, A=2) and 297k
(B=256); tree ops alone 0.3M (B=8) to 0.6-0.75M (B=256).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
import torch

from zeropipe.mcts import ActingParams, SearchConfig, SearchRoots, StepOutput, run_search
from zeropipe.mcts.noise import root_prior
from zeropipe.mcts.policies import chance_policy, gumbel_policy, sampled_policy
from zeropipe.mcts.search import search_params
from zeropipe.mcts.selection import PUCT
from zeropipe.mcts.simulate import simulation_step
from zeropipe.mcts.tree import allocate_tree

NUM_SIMULATIONS = 50
BATCH_SIZES = (8, 64, 256)
NUM_ACTIONS = (2, 6)
SAMPLED_KS = (5, 20)
SAMPLED_ACTIONS = 20  # A of the sampled benchmark: K = 20 samples the whole action set
CHANCE_SPACE_SIZE = 4  # outcomes of a chance node in the chance case
SIMS_PER_TIMING = 100_000  # root-simulations per timing, so every case takes a similar time


def _constant_model(batch_size: int, num_actions: int, rng: np.random.Generator) -> StepOutput:
    """One preallocated StepOutput that the zero-cost recurrent_fn returns every call."""
    return StepOutput(
        latent=torch.zeros(batch_size, 1),
        reward=rng.uniform(-1.0, 1.0, batch_size).astype(np.float32),
        value=rng.uniform(-1.0, 1.0, batch_size).astype(np.float32),
        policy_logits=rng.normal(size=(batch_size, num_actions)).astype(np.float32),
    )


def _roots(batch_size: int, num_actions: int, rng: np.random.Generator) -> SearchRoots:
    return SearchRoots(
        latent=torch.zeros(batch_size, 1),
        value=rng.uniform(-1.0, 1.0, batch_size).astype(np.float32),
        policy_logits=rng.normal(size=(batch_size, num_actions)).astype(np.float32),
        action_mask=np.ones((batch_size, num_actions), dtype=bool),
    )


def _tree_only(roots: SearchRoots, step: StepOutput, cfg: SearchConfig) -> None:
    """The kernels of one search, without the model call and the latent store."""
    batch_size, num_actions = roots.policy_logits.shape
    tree = allocate_tree(batch_size, cfg.num_simulations + 1, num_actions)
    tree.children_prior[:, 0] = root_prior(roots.policy_logits, roots.action_mask, 0.0, 1.0, None)
    tree.root_legal[:] = roots.action_mask
    tree.node_visits[:, 0] = 1  # LightZero's root: one visit, value sum 0
    tree.node_raw_value[:, 0] = roots.value
    params = search_params(cfg)
    parents = np.zeros(batch_size, dtype=np.int64)
    actions = np.zeros(batch_size, dtype=np.int64)
    for leaf in range(cfg.num_simulations + 1):  # leaf 0: the first traversal only
        simulation_step(
            leaf,
            step.reward,
            step.value,
            step.policy_logits,
            params,
            PUCT,
            leaf < cfg.num_simulations,
            parents,
            actions,
            *tree,
        )


def _best_rate(run_once: Callable[[], None], batch_size: int, repeats: int) -> float:
    """Best root-simulations per second over `repeats` timings of `run_once` loops."""
    run_once()  # warm-up: JIT compile or cache load, first-touch allocations
    searches = max(1, SIMS_PER_TIMING // (batch_size * NUM_SIMULATIONS))
    best_s = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(searches):
            run_once()
        best_s = min(best_s, (time.perf_counter() - start) / searches)
    return batch_size * NUM_SIMULATIONS / best_s


def bench_search(repeats: int = 3) -> list[dict]:
    """Measures search and tree-kernel throughput for every (B, A) case.

    Args:
        repeats: timings per case; the best is reported.

    Returns:
        One dict per case: batch_size, num_actions, num_simulations, search_sims_per_s,
        tree_sims_per_s, gumbel_sims_per_s, chance_sims_per_s.
    """
    cfg = SearchConfig(
        num_simulations=NUM_SIMULATIONS, discount=0.997, chance_space_size=CHANCE_SPACE_SIZE
    )
    rows = []
    for num_actions in NUM_ACTIONS:
        for batch_size in BATCH_SIZES:
            rng = np.random.default_rng(0)
            roots = _roots(batch_size, num_actions, rng)
            step = _constant_model(batch_size, num_actions, rng)

            def recurrent_fn(latent: torch.Tensor, actions: np.ndarray, s=step) -> StepOutput:
                return s

            width = max(num_actions, CHANCE_SPACE_SIZE)
            chance_step = _constant_model(batch_size, width, rng)

            def chance_fn(latent, actions, from_chance, s=chance_step) -> StepOutput:
                return s

            def search_once(r=roots, f=recurrent_fn) -> None:
                run_search(r, f, cfg, np.random.default_rng(0), add_noise=True)

            def tree_once(r=roots, s=step) -> None:
                _tree_only(r, s, cfg)

            def gumbel_once(r=roots, f=recurrent_fn) -> None:
                gumbel_policy(r, f, cfg, np.random.default_rng(0), ActingParams("collect"))

            def chance_once(r=roots, f=chance_fn) -> None:
                chance_policy(r, f, cfg, np.random.default_rng(0), ActingParams("collect"))

            rows.append(
                {
                    "batch_size": batch_size,
                    "num_actions": num_actions,
                    "num_simulations": NUM_SIMULATIONS,
                    "search_sims_per_s": _best_rate(search_once, batch_size, repeats),
                    "tree_sims_per_s": _best_rate(tree_once, batch_size, repeats),
                    "gumbel_sims_per_s": _best_rate(gumbel_once, batch_size, repeats),
                    "chance_sims_per_s": _best_rate(chance_once, batch_size, repeats),
                }
            )
    return rows


def bench_sampled(repeats: int = 3) -> list[dict]:
    """Sampled search policy throughput (collect mode) for every (K, B) case, A = 20.

    Returns:
        One dict per case: batch_size, num_sampled_actions, num_actions, num_simulations,
        sampled_sims_per_s.
    """
    rows = []
    for k in SAMPLED_KS:
        cfg = SearchConfig(num_simulations=NUM_SIMULATIONS, discount=0.997, num_sampled_actions=k)
        for batch_size in BATCH_SIZES:
            rng = np.random.default_rng(0)
            roots = _roots(batch_size, SAMPLED_ACTIONS, rng)
            step = _constant_model(batch_size, SAMPLED_ACTIONS, rng)

            def recurrent_fn(latent: torch.Tensor, actions: np.ndarray, s=step) -> StepOutput:
                return s

            def sampled_once(r=roots, f=recurrent_fn, c=cfg) -> None:
                sampled_policy(r, f, c, np.random.default_rng(0), ActingParams("collect"))

            rows.append(
                {
                    "batch_size": batch_size,
                    "num_sampled_actions": k,
                    "num_actions": SAMPLED_ACTIONS,
                    "num_simulations": NUM_SIMULATIONS,
                    "sampled_sims_per_s": _best_rate(sampled_once, batch_size, repeats),
                }
            )
    return rows


def main() -> dict[str, list[dict]]:
    """Prints the benchmark table; returns its rows (`python -m benchmarks --json`)."""
    torch.set_num_threads(1)  # the glue's tensor ops are tiny; threads only add contention
    print(
        f"{'B':>5} {'A':>3} {'sims':>5} {'search sims/s':>15} {'tree sims/s':>13} "
        f"{'gumbel sims/s':>15} {'chance sims/s':>15}"
    )
    search_rows = bench_search()
    for row in search_rows:
        print(
            f"{row['batch_size']:>5} {row['num_actions']:>3} {row['num_simulations']:>5} "
            f"{row['search_sims_per_s']:>15,.0f} {row['tree_sims_per_s']:>13,.0f} "
            f"{row['gumbel_sims_per_s']:>15,.0f} {row['chance_sims_per_s']:>15,.0f}"
        )
    print(f"\n{'B':>5} {'K':>3} {'A':>3} {'sims':>5} {'sampled sims/s':>15}")
    sampled_rows = bench_sampled()
    for row in sampled_rows:
        print(
            f"{row['batch_size']:>5} {row['num_sampled_actions']:>3} {row['num_actions']:>3} "
            f"{row['num_simulations']:>5} {row['sampled_sims_per_s']:>15,.0f}"
        )

    return {"search": search_rows, "sampled": sampled_rows}


if __name__ == "__main__":
    main()
