"""The batched PUCT search against a per-node re-implementation of LightZero's C++ tree.

On random tabular MDP models (seeded), every root's visit counts and whole simulation trace (the
(parent node, action) of every simulation) must be identical, and the root values equal to 1e-6.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import pytest
import torch

from zeropipe.mcts import SearchConfig, SearchRoots, StepOutput, run_search

from .lightzero_tree import TabularModel, reference_search

# 3 (states, actions) shapes x 2 masks x 3 simulation counts x 16 roots = 288 roots.
SHAPES = [(7, 2), (11, 4), (17, 6)]
SIMULATIONS = [1, 13, 50]
ROOTS_PER_CASE = 16


def random_model(num_states: int, num_actions: int, rng: np.random.Generator) -> TabularModel:
    """A random MDP model; values and rewards span a few units, logits are standard normal."""
    return TabularModel(
        next_state=rng.integers(0, num_states, size=(num_states, num_actions)),
        reward=rng.uniform(-1.0, 1.0, size=(num_states, num_actions)).astype(np.float32),
        value=rng.uniform(-3.0, 3.0, size=num_states).astype(np.float32),
        logits=rng.normal(size=(num_states, num_actions)).astype(np.float32),
    )


class TabularRecurrent:
    """The model as a `RecurrentFn`: latents are [B, 1] float state ids."""

    def __init__(self, model: TabularModel) -> None:
        self.model = model

    def __call__(self, latent: torch.Tensor, actions: np.ndarray) -> StepOutput:
        states = latent[:, 0].numpy().astype(np.int64)
        next_states = self.model.next_state[states, actions]
        return StepOutput(
            latent=torch.from_numpy(next_states.astype(np.float32))[:, None],
            reward=self.model.reward[states, actions],
            value=self.model.value[next_states],
            policy_logits=self.model.logits[next_states],
        )


def random_mask(batch_size: int, num_actions: int, rng: np.random.Generator) -> np.ndarray:
    """[B, A] masks with about a third of the actions illegal and at least one legal."""
    mask = rng.random((batch_size, num_actions)) > 0.33
    mask[np.arange(batch_size), rng.integers(0, num_actions, batch_size)] = True
    return mask


@dataclass
class Agreement:
    """How many roots agree with the reference, per statistic."""

    roots: int = 0
    visits: int = 0
    traces: int = 0
    values: int = 0
    max_value_error: float = 0.0


def compare_case(
    shape: tuple[int, int], num_simulations: int, masked: bool, seed: int, agreement: Agreement
) -> None:
    """Runs one batched search and the reference on each of its roots; tallies agreement."""
    rng = np.random.default_rng(seed)
    num_states, num_actions = shape
    model = random_model(num_states, num_actions, rng)
    discount = float(rng.uniform(0.9, 1.0))
    states = rng.integers(0, num_states, ROOTS_PER_CASE)
    mask = (
        random_mask(ROOTS_PER_CASE, num_actions, rng)
        if masked
        else np.ones((ROOTS_PER_CASE, num_actions), dtype=bool)
    )
    roots = SearchRoots(
        latent=torch.from_numpy(states.astype(np.float32))[:, None],
        value=model.value[states],
        policy_logits=model.logits[states],
        action_mask=mask,
    )
    # The per-node reference takes the first action of the tie list (LightZero's
    # `deterministic` flag): the compiled search is compared under that tie rule.
    cfg = SearchConfig(num_simulations=num_simulations, discount=discount, tie_break="first")
    out = run_search(roots, TabularRecurrent(model), cfg, rng, add_noise=False)
    tree = out.tree
    for b in range(ROOTS_PER_CASE):
        legal = np.flatnonzero(mask[b]).tolist()
        ref = reference_search(model, int(states[b]), legal, num_simulations, discount)
        edges = zip(
            tree.parents[b, 1:].tolist(), tree.action_from_parent[b, 1:].tolist(), strict=True
        )
        trace = list(edges)
        error = abs(float(out.root_value[b]) - ref.root_value())
        agreement.roots += 1
        agreement.visits += out.visit_counts[b].tolist() == ref.root_visits(num_actions)
        agreement.traces += trace == ref.trace
        agreement.values += error <= 1e-6
        agreement.max_value_error = max(agreement.max_value_error, error)


def test_matches_lightzero_tree_on_random_mdps() -> None:
    agreement = Agreement()
    cases = itertools.product(SHAPES, SIMULATIONS, (False, True))
    for seed, (shape, num_simulations, masked) in enumerate(cases):
        compare_case(shape, num_simulations, masked, seed, agreement)
    assert agreement.roots == 288
    assert agreement.visits == agreement.roots, agreement
    assert agreement.traces == agreement.roots, agreement
    assert agreement.values == agreement.roots, agreement


@pytest.mark.parametrize("num_simulations", [2, 7, 31])
def test_matches_lightzero_tree_at_other_simulation_counts(num_simulations: int) -> None:
    agreement = Agreement()
    for seed, shape in enumerate(SHAPES):
        compare_case(shape, num_simulations, True, 1000 + seed, agreement)
    assert agreement.visits == agreement.traces == agreement.values == agreement.roots, agreement
