"""The one search loop: select → expand (one batched model call) → back up.

Runs in: any (collector and evaluator actors, reanalysis). B denotes the batch of roots, N the
nodes per tree (num_simulations + 1) and A the actions. All per-node work runs in the numba
kernels of `selection.py` and `backup.py`, entered once per simulation through `simulate.py`;
this module only moves batched arrays between them, the model, and the latent store. Variants
reuse this loop with another rule code (another descent in `selection.py`) rather than copy it:
PUCT (MuZero), Gumbel and chance nodes (Stochastic MuZero, `chance.py`) today. The root follows
LightZero by default: one visit, value sum 0, so its reported value is W / (n + 1) after n
simulations (its Gumbel tree too); `SearchConfig.root_visit_value="network"` counts the
network's value in that visit (mctx). PUCT ties are broken as `SearchConfig.tie_break` says, with a
seed drawn from the search's generator (`selection.break_tie`).
"""

from __future__ import annotations

import numpy as np
import torch

from zeropipe.mcts.contract import (
    ModelStep,
    RecurrentFn,
    SearchConfig,
    SearchOutput,
    SearchRoots,
    SimulationLoop,
    StepOutput,
)
from zeropipe.mcts.halving import root_considered_visits
from zeropipe.mcts.latent_store import LatentStore
from zeropipe.mcts.noise import root_prior
from zeropipe.mcts.sampled import SampledSlots
from zeropipe.mcts.selection import CHANCE, GUMBEL, LOW_LOGIT, PUCT, SearchParams
from zeropipe.mcts.simulate import KernelCall, chance_simulation_step, simulation_step
from zeropipe.mcts.tree import ROOT_INDEX, Tree, allocate_tree


def run_search(
    roots: SearchRoots,
    recurrent_fn: RecurrentFn,
    cfg: SearchConfig,
    rng: np.random.Generator,
    add_noise: bool,
    *,
    rule: int = PUCT,
    gumbel: np.ndarray | None = None,
    slots: SampledSlots | None = None,
    chance_space_size: int = 0,
) -> SearchOutput:
    """Runs a batched search from B roots (MuZero PUCT unless another rule code is given).

    Each simulation walks every tree to an unexpanded edge, calls `recurrent_fn` once for all B
    parents, expands node s + 1 of every tree and backs its value up.

    Args:
        roots: latents, values, logits and legal-action masks of the B roots.
        recurrent_fn: the model's recurrent step (parent latents [B, ...], actions int64 [B]);
            a `ModelStep` with a `TensorStep` runs on the search's own arrays where the rule
            allows (PUCT or Gumbel, not sampled, a CPU store: `_simulate_on_arrays`).
        cfg: search constants.
        rng: source of the root Dirichlet noise (the search itself is deterministic).
        add_noise: whether to mix Dirichlet noise into the root prior (acting, not evaluation).
        rule: which descent selects the edges (a rule code of `selection.py`).
        gumbel: [B, A] root Gumbel noise for the GUMBEL rule; with it the tree also gets
            its sequential-halving schedule (`cfg.max_num_considered_actions`).
        slots: sampled search: the tree is searched over K action slots per node, sampled
            from each node's policy; the model steps with the slots' real actions, and the
            output's A axis is the root's K slots (`slots.root_actions()` names them).
        chance_space_size: C, the chance outcomes of a chance node (CHANCE rule, >= 1). The
            tree is then max(A, C) wide, `recurrent_fn` is called as
            `recurrent_fn(latents, codes, from_chance)` with [B] bool `from_chance` (True: the
            row expands a state from an afterstate and a chance code; False: an afterstate from
            a state and an action) and returns max(A, C)-wide logits (policy or chance prior,
            padded with a very low logit), and a seed of the chance draws is taken from `rng`.

    Returns:
        Root visit counts, root value, root Q values and the tree.

    Raises:
        ValueError: if the root arrays disagree in shape, a row has no legal action, the
            GUMBEL rule comes without its noise or the CHANCE rule without its outcome count.
    """
    if slots is not None:
        _check_roots(roots)
        roots = slots.sample_roots(roots)
    batch_size, num_actions = _check_roots(roots)
    if rule == GUMBEL and gumbel is None:
        raise ValueError("run_search: the GUMBEL rule needs the root Gumbel noise `gumbel`")
    if rule == CHANCE:
        if chance_space_size < 1:
            raise ValueError(
                f"run_search: CHANCE needs chance_space_size >= 1, got {chance_space_size}"
            )
        roots = pad_roots(roots, max(num_actions, chance_space_size))
    num_simulations = cfg.num_simulations
    tree = allocate_tree(batch_size, num_simulations + 1, roots.action_mask.shape[1])
    _init_roots(tree, roots, cfg, rng if add_noise else None, gumbel)
    if rule == CHANCE:
        tree.node_width[:] = num_actions
        tree.chance_seed[0] = rng.integers(2**63, dtype=np.uint64)
    params = search_params(cfg, rule)
    if params.random_ties:
        tree.tie_seed[0] = rng.integers(2**63, dtype=np.uint64)
    # node s + 1 of every tree is written by simulation s
    store = LatentStore(roots.latent, num_simulations + 1)
    kernel = KernelCall(chance_simulation_step if rule == CHANCE else simulation_step, tree)
    parents = np.zeros(batch_size, dtype=np.int64)  # [B] rewritten in place by _advance
    actions = np.zeros(batch_size, dtype=np.int64)  # [B]
    _advance(kernel, tree, params, rule, ROOT_INDEX, None, True, parents, actions)
    loop = _compiled_loop(recurrent_fn, rule, slots, store)
    if loop is not None:
        loop(tree, params, rule, store.array, parents, actions)
        return _root_output(tree, cfg.discount, num_actions, False)
    if _on_arrays(recurrent_fn, rule, slots, store):
        _simulate_on_arrays(recurrent_fn, kernel, tree, params, rule, store, parents, actions)
        return _root_output(tree, cfg.discount, num_actions, False)
    rows = np.arange(batch_size)
    for sim in range(num_simulations):
        parent_latents = store.gather(parents)
        # A copy of the actions: the model may keep them, and _advance rewrites `actions`.
        if rule == CHANCE:
            from_chance = tree.node_is_chance[rows, parents]  # [B]
            tree.node_is_chance[:, sim + 1] = ~from_chance
            tree.node_width[:, sim + 1] = np.where(from_chance, num_actions, chance_space_size)
            step = recurrent_fn(parent_latents, actions.copy(), from_chance)
        elif slots is not None:
            step = recurrent_fn(parent_latents, slots.real_actions(parents, actions))
            step = slots.expand(sim + 1, step)
        else:
            step = recurrent_fn(parent_latents, actions.copy())
        store.put(sim + 1, step.latent)
        traverse = sim + 1 < num_simulations
        _advance(kernel, tree, params, rule, sim + 1, step, traverse, parents, actions)
    return _root_output(tree, cfg.discount, num_actions, rule == CHANCE)


def _on_arrays(
    recurrent_fn: RecurrentFn, rule: int, slots: SampledSlots | None, store: LatentStore
) -> bool:
    """Whether the simulations can run on the step's tensors (`_simulate_on_arrays`): a
    `ModelStep` with a `TensorStep`, one expansion kind and one action per slot, a numpy store."""
    has_tensors = isinstance(recurrent_fn, ModelStep) and recurrent_fn.tensors is not None
    return has_tensors and rule in (PUCT, GUMBEL) and slots is None and store.on_numpy


def _compiled_loop(
    recurrent_fn: RecurrentFn, rule: int, slots: SampledSlots | None, store: LatentStore
) -> SimulationLoop | None:
    """The step's compiled simulation loop where it can run this search: a `ModelStep` whose
    loop is available, one expansion kind and one action per slot, a float32 numpy store."""
    loop = recurrent_fn.loop if isinstance(recurrent_fn, ModelStep) else None
    if loop is None or not loop.available or rule not in (PUCT, GUMBEL) or slots is not None:
        return None
    array = store.array
    return loop if array is not None and array.dtype == np.float32 and array.ndim == 3 else None


def _simulate_on_arrays(
    step: ModelStep,
    kernel: KernelCall,
    tree: Tree,
    params: SearchParams,
    rule: int,
    store: LatentStore,
    parents: np.ndarray,
    actions: np.ndarray,
) -> None:
    """`run_search`'s simulations with the step on tensors that share memory with the search's
    arrays: the actions tensor is a view of `actions`, the parents' latents a view of the store's
    gather, and the step's outputs reach the kernel as views, with no conversion or output object
    per simulation: what the loop of `run_search` computes, the same arrays in the same order.
    A simulation whose `TensorStep` returns None (its trace failed) runs through `step.recurrent`.
    """
    assert step.tensors is not None
    batch_size, num_actions = tree.root_legal.shape
    num_simulations = tree.node_visits.shape[1] - 1
    action_tensor = torch.from_numpy(actions)  # the step keeps no input; read before rewritten
    for sim in range(num_simulations):
        parent_latents = store.gather(parents)
        out = step.tensors(parent_latents, action_tensor)
        traverse = sim + 1 < num_simulations
        if out is None:
            eager = step.recurrent(parent_latents, actions.copy())
            store.put(sim + 1, eager.latent)
            _advance(kernel, tree, params, rule, sim + 1, eager, traverse, parents, actions)
            continue
        latent, reward, value, logits = out
        store.put(sim + 1, latent)
        rewards = _view(reward, (batch_size,))
        values = _view(value, (batch_size,))
        logit_rows = _view(logits, (batch_size, num_actions))
        kernel(sim + 1, rewards, values, logit_rows, params, rule, traverse, parents, actions)


def _view(x: torch.Tensor, shape: tuple[int, ...]) -> np.ndarray:
    """A float32 CPU tensor's memory as the C-contiguous float32 array the kernel takes."""
    return _as_array(x.numpy(), shape, "the model step's output")


def search_params(cfg: SearchConfig, rule: int = PUCT) -> SearchParams:
    """The scalar constants of `cfg` that the compiled kernels read; random tie-breaks only for
    the PUCT-based rules (the Gumbel rules have their own deterministic order)."""
    return SearchParams(
        cfg.discount,
        cfg.pb_c_base,
        cfg.pb_c_init,
        cfg.value_delta_max,
        cfg.maxvisit_init,
        cfg.value_scale,
        rule != GUMBEL and cfg.tie_break == "random",
    )


def _check_roots(roots: SearchRoots) -> tuple[int, int]:
    """Returns (B, A) after checking that the root fields agree."""
    if roots.policy_logits.ndim != 2:
        raise ValueError(
            f"SearchRoots.policy_logits must be [B, A], got shape {roots.policy_logits.shape}"
        )
    batch_size, num_actions = roots.policy_logits.shape
    expected = {
        "latent": (tuple(roots.latent.shape[:1]), (batch_size,)),
        "value": (roots.value.shape, (batch_size,)),
        "action_mask": (roots.action_mask.shape, (batch_size, num_actions)),
    }
    for name, (shape, want) in expected.items():
        if tuple(shape) != want:
            raise ValueError(f"SearchRoots.{name} has shape {tuple(shape)}, expected {want}")
    if not roots.action_mask.any(axis=1).all():
        rows = np.flatnonzero(~roots.action_mask.any(axis=1)).tolist()
        raise ValueError(f"SearchRoots.action_mask rows {rows} have no legal action")
    return batch_size, num_actions


def _init_roots(
    tree: Tree,
    roots: SearchRoots,
    cfg: SearchConfig,
    rng: np.random.Generator | None,
    gumbel: np.ndarray | None,
) -> None:
    """Sets the root priors and the root's single visit.

    As LightZero's MuZero `Roots.prepare` (the default, `root_visit_value="zero"`): the root counts
    one visit but no value, so its value is W / (n + 1), shrunk toward 0 by that visit's share, and
    every backup widens the min-max statistics by γ times that shrunk value. Where |V| is large next
    to the differences between actions (Acrobot: V ≈ -85, Q differences ≈ 0.1-1) the widening
    (≈ |V| / (n + 1) ≈ 3.3 at n = 25) flattens the normalised Q and the visits follow the prior
    (measured on Acrobot: configs/acrobot_muzero.yaml). LightZero's Gumbel tree does the same (its
    `CRoots::prepare` adds the visit and keeps the network value only as the raw value for the mixed
    value). With `root_visit_value="network"` (mctx) that visit carries the network's root value:
    (v + W) / (n + 1). The raw value is kept either way for Gumbel's mixed value.
    """
    mask = roots.action_mask.astype(np.bool_)
    tree.children_prior[:, ROOT_INDEX] = root_prior(
        roots.policy_logits, mask, cfg.root_noise_weight, cfg.root_dirichlet_alpha, rng
    )
    tree.root_legal[:] = mask
    tree.node_visits[:, ROOT_INDEX] = 1
    if cfg.root_visit_value == "network":
        tree.node_value_sum[:, ROOT_INDEX] = roots.value
    tree.node_raw_value[:, ROOT_INDEX] = roots.value
    if gumbel is not None:
        if gumbel.shape != mask.shape:
            raise ValueError(f"gumbel has shape {gumbel.shape}, expected {mask.shape}")
        tree.root_gumbel[:] = gumbel
        tree.root_considered[:] = root_considered_visits(
            mask, cfg.max_num_considered_actions, cfg.num_simulations
        )


def _advance(
    kernel: KernelCall,
    tree: Tree,
    params: SearchParams,
    rule: int,
    leaf: int,
    step: StepOutput | None,
    traverse: bool,
    parents: np.ndarray,
    actions: np.ndarray,
) -> None:
    """Expands `step` as node `leaf` and backs it up (nothing when `step` is None, before the first
    simulation), then, if `traverse`, writes the next edges into `parents` and `actions` ([B]),
    selecting with the descent `rule`. Every argument of `kernel` keeps its type across the
    search's calls (`KernelCall` relies on it): the step's outputs become float32 C arrays here.
    """
    batch_size, num_actions = tree.root_legal.shape
    if step is None:
        rewards = values = np.zeros(batch_size, dtype=np.float32)
        logits = np.zeros((batch_size, num_actions), dtype=np.float32)
    else:
        rewards = _as_array(step.reward, (batch_size,), "StepOutput.reward")
        values = _as_array(step.value, (batch_size,), "StepOutput.value")
        logits = _as_array(
            step.policy_logits, (batch_size, num_actions), "StepOutput.policy_logits"
        )
    kernel(leaf, rewards, values, logits, params, rule, traverse, parents, actions)


def _as_array(values: np.ndarray, shape: tuple[int, ...], name: str) -> np.ndarray:
    """`values` as a C-contiguous float32 array, so the kernels compile for one signature."""
    array = np.ascontiguousarray(values, dtype=np.float32)
    if array.shape != shape:
        raise ValueError(f"{name} has shape {array.shape}, expected {shape}")
    return array


def pad_roots(roots: SearchRoots, width: int) -> SearchRoots:
    """`roots` with `width` columns: padded logits LOW_LOGIT, padded actions illegal."""
    batch_size, num_actions = roots.policy_logits.shape
    if width == num_actions:
        return roots
    logits = np.full((batch_size, width), LOW_LOGIT, dtype=np.float32)
    logits[:, :num_actions] = roots.policy_logits
    mask = np.zeros((batch_size, width), dtype=np.bool_)
    mask[:, :num_actions] = roots.action_mask
    return SearchRoots(roots.latent, roots.value, logits, mask)


def _root_output(tree: Tree, discount: float, num_actions: int, chance: bool) -> SearchOutput:
    """Collects the root statistics of every tree; the root value is W / (n + 1) (LightZero), or
    (v + W) / (n + 1) with `root_visit_value="network"`.

    The root's children are its first `num_actions`; under the CHANCE rule they are afterstates,
    whose Q is their value.
    """
    visits = tree.children_visits[:, ROOT_INDEX, :num_actions].copy()  # [B, A]
    value = tree.children_value[:, ROOT_INDEX, :num_actions]
    reward = tree.children_reward[:, ROOT_INDEX, :num_actions]
    q = value if chance else reward + discount * value
    root = tree.node_value_sum[:, ROOT_INDEX] / tree.node_visits[:, ROOT_INDEX]
    return SearchOutput(
        visit_counts=visits,
        root_value=root.astype(np.float32),
        q_values=np.where(visits > 0, q, 0.0).astype(np.float32),
        tree=tree,
    )
