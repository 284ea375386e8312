"""The CHANCE rule of the one batched search: outcome draws follow the chance prior, the two kinds
of expansion reach the model per row, and the draws are reproducible from the generator."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.mcts.chance_tree import StochasticModel, reference_chance_search
from tests.mcts.fakes import make_roots
from zeropipe.mcts import (
    ActingParams,
    SearchConfig,
    SearchRoots,
    StepOutput,
    run_search,
    search_policy,
)
from zeropipe.mcts.selection import CHANCE
from zeropipe.mcts.tree import ROOT_INDEX

_LOW = -1e9


class ChanceModel:
    """A model of A actions whose afterstates all have the chance prior `prior` ([C]).

    Latents are [B, 1]: the depth. A state step pays `rewards[code]`; values are 0. Records the
    kinds of rows it was asked to expand.
    """

    def __init__(self, num_actions: int, prior: list[float], rewards: list[float] | None = None):
        self.num_actions = num_actions
        self.prior = np.asarray(prior, dtype=np.float64)
        self.rewards = np.zeros(len(prior)) if rewards is None else np.asarray(rewards)
        self.width = max(num_actions, len(prior))
        self.kinds: list[np.ndarray] = []

    def __call__(self, latent, codes, from_chance) -> StepOutput:
        self.kinds.append(from_chance.copy())
        batch = codes.shape[0]
        logits = np.full((batch, self.width), _LOW, dtype=np.float32)
        with np.errstate(divide="ignore"):
            chance_logits = np.maximum(np.log(self.prior), _LOW)
        logits[~from_chance, : len(self.prior)] = chance_logits
        logits[from_chance, : self.num_actions] = 0.0
        reward = np.where(from_chance, self.rewards[np.minimum(codes, len(self.prior) - 1)], 0.0)
        return StepOutput(
            latent=latent + 1.0,
            reward=reward.astype(np.float32),
            value=np.zeros(batch, dtype=np.float32),
            policy_logits=logits,
        )


def _cfg(num_simulations: int, chance_space_size: int) -> SearchConfig:
    return SearchConfig(
        num_simulations=num_simulations, discount=0.997, chance_space_size=chance_space_size
    )


def test_chance_node_outcomes_follow_the_prior():
    # One action: every descent passes the root's single chance node (node 1) and draws there.
    prior = [0.5, 0.3, 0.15, 0.05, 0.0]
    model = ChanceModel(1, prior)
    batch, sims = 64, 400
    out = run_search(
        make_roots(batch, 1),
        model,
        _cfg(sims, len(prior)),
        np.random.default_rng(0),
        add_noise=False,
        rule=CHANCE,
        chance_space_size=len(prior),
    )
    tree = out.tree
    assert tree.node_is_chance[:, 1].all() and not tree.node_is_chance[:, ROOT_INDEX].any()
    draws = tree.children_visits[:, 1, : len(prior)].sum(axis=0)  # [C] over all trees
    total = draws.sum()
    assert total == batch * (sims - 1)  # every simulation after the first draws at node 1
    freq = draws / total
    # 25,536 draws: the standard error is <= 0.0032; 0.02 is > 6 of them (and the run is seeded).
    np.testing.assert_allclose(freq, prior, atol=0.02)
    assert draws[-1] == 0  # a zero-prior outcome is never drawn


def test_each_simulation_expands_one_kind_per_row_and_kinds_alternate_down_the_tree():
    model = ChanceModel(2, [0.6, 0.4])
    out = run_search(
        make_roots(8, 2),
        model,
        _cfg(30, 2),
        np.random.default_rng(1),
        add_noise=True,
        rule=CHANCE,
        chance_space_size=2,
    )
    tree = out.tree
    assert not model.kinds[0].any()  # the first expansion is the root action's afterstate
    assert any(k.any() for k in model.kinds) and any((~k).any() for k in model.kinds)
    rows, nodes = np.nonzero(tree.parents >= 0)
    parents = tree.parents[rows, nodes]
    # A chance node's parent is a decision node and vice versa.
    assert (tree.node_is_chance[rows, nodes] != tree.node_is_chance[rows, parents]).all()
    assert out.visit_counts.shape == (8, 2) and out.visit_counts.sum(axis=1).tolist() == [30] * 8


def test_chance_draws_are_reproducible_from_the_generator_and_change_with_it():
    model = ChanceModel(2, [0.25, 0.25, 0.25, 0.25], rewards=[0.0, 1.0, 2.0, 3.0])
    policy = search_policy("chance")
    cfg = _cfg(40, 4)
    roots = make_roots(4, 2)
    first = policy(roots, model, cfg, np.random.default_rng(5), ActingParams("eval"))
    again = policy(roots, model, cfg, np.random.default_rng(5), ActingParams("eval"))
    other = policy(roots, model, cfg, np.random.default_rng(6), ActingParams("eval"))
    np.testing.assert_array_equal(first.visit_counts, again.visit_counts)
    np.testing.assert_array_equal(first.root_value, again.root_value)
    assert not np.array_equal(first.root_value, other.root_value)


def test_afterstate_q_is_the_visit_weighted_mean_of_its_outcomes():
    # One action, outcome rewards 0 and 10 (prior 0.8 / 0.2), values 0 and γ = 0: every return
    # backed up through the chance node is the drawn outcome's reward, and the edge into the
    # afterstate adds no reward and no discount, so Q(root, 0) = 10·N(outcome 1) / N(afterstate).
    model = ChanceModel(1, [0.8, 0.2], rewards=[0.0, 10.0])
    cfg = SearchConfig(num_simulations=1000, discount=0.0, chance_space_size=2)
    out = run_search(
        make_roots(4, 1),
        model,
        cfg,
        np.random.default_rng(2),
        add_noise=False,
        rule=CHANCE,
        chance_space_size=2,
    )
    tree = out.tree
    np.testing.assert_array_equal(tree.children_reward[:, 1, :2], [[0.0, 10.0]] * 4)
    expected = 10.0 * tree.children_visits[:, 1, 1] / tree.node_visits[:, 1]
    np.testing.assert_allclose(out.q_values[:, 0], expected, rtol=1e-5)
    np.testing.assert_allclose(out.q_values[:, 0], 2.0, atol=0.5)


def test_the_chance_rule_needs_its_outcome_count():
    with pytest.raises(ValueError, match="chance_space_size"):
        run_search(
            make_roots(1, 2),
            ChanceModel(2, [1.0]),
            _cfg(3, 1),
            np.random.default_rng(0),
            add_noise=False,
            rule=CHANCE,
        )


def test_root_latents_reach_the_model_unchanged():
    seen = []

    class Spy(ChanceModel):
        def __call__(self, latent, codes, from_chance):
            seen.append(latent.clone())
            return super().__call__(latent, codes, from_chance)

    roots = make_roots(3, 2)
    run_search(
        roots,
        Spy(2, [1.0]),
        _cfg(2, 1),
        np.random.default_rng(0),
        add_noise=False,
        rule=CHANCE,
        chance_space_size=1,
    )
    assert torch.equal(seen[0], roots.latent)


def _random_model(rng, states: int, actions: int, outcomes: int) -> StochasticModel:
    def f32(*shape, scale=1.0):
        return (rng.normal(size=shape) * scale).astype(np.float32)

    return StochasticModel(
        logits=f32(states, actions),
        value=f32(states),
        after_value=f32(states, actions),
        chance_logits=f32(states, actions, outcomes, scale=1.5),
        next_state=rng.integers(0, states, size=(states, actions, outcomes)),
        reward=f32(states, actions, outcomes),
    )


class _TabularChanceFn:
    """The compiled search's view of a `StochasticModel`: latents [B, 2] = (state, action)."""

    def __init__(self, model: StochasticModel) -> None:
        self.m = model
        self.width = max(model.logits.shape[1], model.chance_logits.shape[2])

    def __call__(self, latent, codes, from_chance) -> StepOutput:
        s = latent[:, 0].numpy().astype(np.int64)
        a = latent[:, 1].numpy().astype(np.int64)
        batch = codes.shape[0]
        logits = np.full((batch, self.width), _LOW, dtype=np.float32)
        out = np.zeros((batch, 2), dtype=np.float32)
        reward = np.zeros(batch, dtype=np.float32)
        value = np.zeros(batch, dtype=np.float32)
        for i in range(batch):
            if from_chance[i]:
                ns = self.m.next_state[s[i], a[i], codes[i]]
                out[i] = (ns, -1)
                reward[i] = self.m.reward[s[i], a[i], codes[i]]
                value[i] = self.m.value[ns]
                logits[i, : self.m.logits.shape[1]] = self.m.logits[ns]
            else:
                out[i] = (s[i], codes[i])
                value[i] = self.m.after_value[s[i], codes[i]]
                logits[i, : self.m.chance_logits.shape[2]] = self.m.chance_logits[s[i], codes[i]]
        return StepOutput(torch.from_numpy(out), reward, value, logits)


@pytest.mark.parametrize(
    ("actions", "outcomes", "discount"), [(3, 4, 0.997), (2, 1, 1.0), (5, 2, 0.9)]
)
def test_the_compiled_chance_search_matches_the_per_node_reference(actions, outcomes, discount):
    """Edge by edge, on random tabular stochastic models; C = 1 is the trivial chance prior."""
    rng = np.random.default_rng(actions * 10 + outcomes)
    model = _random_model(rng, 7, actions, outcomes)
    batch, sims = 6, 60
    starts = rng.integers(0, 7, size=batch)
    legal = rng.random((batch, actions)) < 0.8
    legal[:, 0] = True
    roots = SearchRoots(
        latent=torch.from_numpy(np.stack([starts, -np.ones(batch)], axis=1).astype(np.float32)),
        value=model.value[starts],
        policy_logits=model.logits[starts],
        action_mask=legal,
    )
    # The per-node reference takes the first action of maximal score (LightZero's
    # `deterministic` tie rule), so the compiled search is compared under that rule.
    cfg = SearchConfig(
        num_simulations=sims, discount=discount, chance_space_size=outcomes, tie_break="first"
    )
    out = run_search(
        roots,
        _TabularChanceFn(model),
        cfg,
        np.random.default_rng(9),
        add_noise=False,
        rule=CHANCE,
        chance_space_size=outcomes,
    )
    seed = np.random.default_rng(9).integers(2**63, dtype=np.uint64)
    tree = out.tree
    for b in range(batch):
        root, trace = reference_chance_search(
            model, int(starts[b]), legal[b], sims, seed, b, discount=discount
        )
        kernel_trace = [
            (int(tree.parents[b, n]), int(tree.action_from_parent[b, n]))
            for n in range(1, sims + 1)
        ]
        assert kernel_trace == trace, b
        visits = [root.children[a].visit_count for a in range(actions)]
        assert out.visit_counts[b].tolist() == visits
        np.testing.assert_allclose(
            out.root_value[b], root.value_sum / root.visit_count, rtol=1e-5, atol=1e-6
        )
    if outcomes == 1:  # the trivial prior: every chance node has its one outcome only
        chance = tree.node_is_chance & (tree.node_visits > 1)
        assert (tree.children_visits[chance][:, 1:] == 0).all()


class _OneStepModel:
    """One action, one chance outcome: an afterstate is worth 3, a state 2, the step pays 1."""

    def __call__(self, latent, codes, from_chance) -> StepOutput:
        batch = codes.shape[0]
        return StepOutput(
            latent=latent + 1.0,
            reward=np.where(from_chance, 1.0, 0.0).astype(np.float32),
            value=np.where(from_chance, 2.0, 3.0).astype(np.float32),
            policy_logits=np.zeros((batch, 1), dtype=np.float32),
        )


def test_one_env_step_is_discounted_once_not_at_the_afterstate_too():
    """Ours: γ once per env step, the decision → afterstate edge adds no reward and no discount.

    Two simulations, γ = 0.5: the first expands the afterstate (value 3), the second the state
    below it (reward 1, value 2), whose return through the afterstate is 1 + 0.5·2 = 2. The
    afterstate's value, and Q(root, 0), is (3 + 2) / 2 = 2.5, the root's value (3 + 2) / 3.
    LightZero's stochastic tree also discounts the afterstate edge (`cbackpropagate`,
    ctree_stochastic_muzero/lib/cnode.cpp:496-527): Q = 0 + 0.5·2.5 = 1.25, i.e. γ² per env
    step, which the n-step value targets (γ per env step) do not share — the reference's defect
    that docs/parity.md keeps ours against.
    """
    cfg = SearchConfig(num_simulations=2, discount=0.5, chance_space_size=1)
    out = run_search(
        make_roots(1, 1),
        _OneStepModel(),
        cfg,
        np.random.default_rng(0),
        add_noise=False,
        rule=CHANCE,
        chance_space_size=1,
    )
    assert out.q_values[0, 0] == pytest.approx(2.5)
    assert out.q_values[0, 0] != pytest.approx(1.25)
    assert out.root_value[0] == pytest.approx(5.0 / 3.0)
