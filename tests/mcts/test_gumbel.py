"""The Gumbel search policy on hand-checkable bandits: improved policy, halving, noise, masks.

These pin the paper's (mctx's) root choices; LightZero's are in test_gumbel_options.py.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from zeropipe.mcts import SEARCH_POLICIES, ActingParams, SearchConfig, SearchRoots, search_policy
from zeropipe.mcts.gumbel import GumbelSearchConfig
from zeropipe.mcts.halving import considered_visit_sequence
from zeropipe.mcts.policies import gumbel_policy
from zeropipe.mcts.search import run_search
from zeropipe.mcts.selection import GUMBEL
from zeropipe.mcts.tree import Tree

from .fakes import BanditModel, make_roots
from .gumbel_tree import gumbel_reference_search
from .test_lightzero_exact import TabularRecurrent, random_mask, random_model

COLLECT = ActingParams("collect")
EVAL = ActingParams("eval")


def _softmax(x: np.ndarray) -> np.ndarray:
    weights = np.exp(x - x.max())
    return weights / weights.sum()


def _mctx(**fields: object) -> GumbelSearchConfig:
    """The paper's (mctx's) root choices: logits, no Dirichlet noise, the halving winner."""
    return GumbelSearchConfig(
        prior_term="logit", collect_root_noise=False, collect_action="halving_winner", **fields
    )


def test_registered() -> None:
    assert SEARCH_POLICIES["gumbel"] is gumbel_policy
    assert search_policy("gumbel") is gumbel_policy


def test_improved_policy_by_hand_with_an_unvisited_action() -> None:
    """Eval (g = 0), 3 arms paying [.2, .8, .5], logits [1, .5, 0], root value .3, m = 2, 2 sims.

    Top-2 by logits visits arms 0 then 1 (each once); arm 2 is completed with the mixed value
    (v + 2·(p0·q0 + p1·q1)/(p0 + p1)) / 3. Rescaled to [0, 1] over the three arms and scaled by
    (50 + 1)·0.1, σ feeds π' = softmax(logits + σ).
    """
    logits = np.array([1.0, 0.5, 0.0])
    payoffs = [0.2, 0.8, 0.5]
    cfg = _mctx(num_simulations=2, discount=0.9, max_num_considered_actions=2)
    roots = make_roots(1, 3, logits=logits, value=0.3)
    out = gumbel_policy(roots, BanditModel(payoffs), cfg, np.random.default_rng(0), EVAL)
    assert out.visit_counts.tolist() == [[1, 1, 0]]
    prior = _softmax(logits)
    mixed = (0.3 + 2 * (prior[0] * 0.2 + prior[1] * 0.8) / (prior[0] + prior[1])) / 3
    completed = np.array([0.2, 0.8, mixed])
    sigma = (50 + 1) * 0.1 * (completed - 0.2) / (0.8 - 0.2)
    improved = _softmax(logits + sigma)
    np.testing.assert_allclose(out.q_values[0], completed, rtol=1e-5)
    np.testing.assert_allclose(out.policy_target[0], improved, rtol=1e-5)
    assert out.action.tolist() == [int(np.argmax(improved))] == [1]
    # Root value as PUCT's convention: (0.2 + 0.8) over 3 visits.
    assert out.root_value[0] == pytest.approx(1.0 / 3.0)


def test_eval_picks_the_best_arm_with_four_simulations() -> None:
    # The prior favours arm 0 by e^2; one visit per arm and σ's spread of 5.1 overturn it.
    payoffs = [0.1, 0.9, 0.3, 0.2]
    cfg = _mctx(num_simulations=4, discount=0.9, max_num_considered_actions=4)
    roots = make_roots(8, 4, logits=np.array([2.0, 0.0, 0.0, 0.0]))
    out = gumbel_policy(roots, BanditModel(payoffs), cfg, np.random.default_rng(0), EVAL)
    assert (out.visit_counts == 1).all()
    assert (out.action == 1).all()
    assert (np.argmax(out.policy_target, axis=1) == 1).all()


def test_collect_uses_fresh_noise_per_root_and_per_search() -> None:
    # Near-equal arms and 2 considered actions: which two get searched depends on the noise.
    payoffs = [0.50, 0.52, 0.48, 0.51, 0.49, 0.50]
    cfg = _mctx(num_simulations=4, discount=0.9, max_num_considered_actions=2)
    roots = make_roots(64, 6)
    model = BanditModel(payoffs)
    first = gumbel_policy(roots, model, cfg, np.random.default_rng(11), COLLECT)
    again = gumbel_policy(roots, model, cfg, np.random.default_rng(11), COLLECT)
    for name in ("action", "policy_target", "visit_counts", "q_values", "root_value"):
        np.testing.assert_array_equal(getattr(first, name), getattr(again, name))
    assert len(set(first.action.tolist())) > 2  # identical roots, different noise per root
    rng = np.random.default_rng(11)
    one = gumbel_policy(roots, model, cfg, rng, COLLECT)
    two = gumbel_policy(roots, model, cfg, rng, COLLECT)
    assert not np.array_equal(one.visit_counts, two.visit_counts)
    # Reanalyze draws its noise the same way and returns the same improved policy.
    reanalyzed = gumbel_policy(
        roots, model, cfg, np.random.default_rng(11), ActingParams("reanalyze")
    )
    np.testing.assert_array_equal(reanalyzed.policy_target, first.policy_target)


def test_eval_is_deterministic_and_draws_nothing() -> None:
    cfg = _mctx(num_simulations=10, discount=0.9, max_num_considered_actions=4)
    roots = make_roots(4, 6, logits=np.linspace(-1.0, 1.0, 6))
    model = BanditModel([0.3, 0.1, 0.6, 0.2, 0.5, 0.4])
    rng = np.random.default_rng(3)
    state = rng.bit_generator.state
    first = gumbel_policy(roots, model, cfg, rng, EVAL)
    assert rng.bit_generator.state == state
    second = gumbel_policy(roots, model, cfg, np.random.default_rng(99), EVAL)
    np.testing.assert_array_equal(first.action, second.action)
    np.testing.assert_array_equal(first.policy_target, second.policy_target)
    np.testing.assert_array_equal(first.visit_counts, second.visit_counts)


@pytest.mark.parametrize("mode", ["collect", "eval", "reanalyze"])
def test_illegal_actions_get_no_visit_no_mass_no_choice(mode: str) -> None:
    # The illegal arm pays most and has the largest logit.
    mask = np.array([True, False, True, True, False, True])
    roots = make_roots(32, 6, logits=np.array([0.0, 5.0, 0.0, 0.0, 3.0, 0.0]), action_mask=mask)
    model = BanditModel([0.1, 9.0, 0.3, 0.2, 8.0, 0.25])
    for m in (2, 4, 16):
        cfg = _mctx(num_simulations=12, discount=0.9, max_num_considered_actions=m)
        out = gumbel_policy(roots, model, cfg, np.random.default_rng(m), ActingParams(mode))
        assert (out.visit_counts[:, ~mask] == 0).all()
        assert (out.policy_target[:, ~mask] == 0.0).all()
        assert (out.q_values[:, ~mask] == 0.0).all()
        assert mask[out.action].all()
        np.testing.assert_allclose(out.policy_target.sum(axis=1), 1.0, rtol=1e-6)
        assert (out.visit_counts.sum(axis=1) == 12).all()


def _root_action_of_each_simulation(tree: Tree, b: int) -> list[int]:
    """The root edge that simulation s went through: walk node s + 1 up to the root."""
    actions = []
    for node in range(1, tree.parents.shape[1]):
        while tree.parents[b, node] != 0:
            node = tree.parents[b, node]
        actions.append(int(tree.action_from_parent[b, node]))
    return actions


@pytest.mark.parametrize(("m", "n", "legal"), [(4, 16, 6), (4, 50, 6), (2, 9, 6), (8, 30, 3)])
def test_sequential_halving_visits_the_planned_counts(m: int, n: int, legal: int) -> None:
    num_actions = 6
    mask = np.arange(num_actions) < legal
    roots = make_roots(16, num_actions, action_mask=mask)
    model = BanditModel([0.3, 0.1, 0.6, 0.2, 0.5, 0.4])
    cfg = SearchConfig(num_simulations=n, discount=0.9, max_num_considered_actions=m)
    rng = np.random.default_rng(n)
    gumbel = rng.gumbel(size=(16, num_actions)).astype(np.float32)
    out = run_search(
        roots, model, cfg, rng, False, rule=GUMBEL,
        gumbel=gumbel,
    )  # fmt: skip
    plan = considered_visit_sequence(min(m, legal), n)
    for b in range(16):
        visits = np.zeros(num_actions, dtype=int)
        for s, action in enumerate(_root_action_of_each_simulation(out.tree, b)):
            assert visits[action] == plan[s], (b, s)
            visits[action] += 1
        assert visits.tolist() == out.visit_counts[b].tolist()
    # The first min(m, legal) simulations visit the top actions by g + logits (uniform here).
    k = min(m, legal)
    top = np.argsort(-np.where(mask, gumbel, -np.inf), axis=1)[:, :k]
    for b in range(16):
        assert sorted(_root_action_of_each_simulation(out.tree, b)[:k]) == sorted(top[b])


def test_gumbel_rule_needs_its_noise() -> None:
    cfg = SearchConfig(num_simulations=4, discount=0.9)
    with pytest.raises(ValueError, match="gumbel"):
        run_search(make_roots(2, 3), BanditModel([0.1, 0.2, 0.3]), cfg, None, False, rule=GUMBEL)


def test_config_validates_gumbel_fields() -> None:
    for key, value in [
        ("max_num_considered_actions", 0),
        ("gumbel_scale", -1.0),
        ("gumbel_scale", math.inf),
        ("maxvisit_init", -1.0),
        ("value_scale", 0.0),
    ]:
        with pytest.raises(ValueError, match=key):
            SearchConfig(num_simulations=4, discount=0.9, **{key: value})


@pytest.mark.parametrize(("shape", "m"), [((7, 2), 4), ((11, 4), 2), ((17, 6), 4), ((17, 6), 16)])
def test_matches_a_per_node_gumbel_search_on_random_mdps(shape: tuple[int, int], m: int) -> None:
    rng = np.random.default_rng(sum(shape) + m)
    model = random_model(*shape, rng)
    num_actions = shape[1]
    for num_simulations, masked in [(1, False), (9, True), (32, False), (50, True)]:
        states = rng.integers(0, shape[0], 12)
        mask = random_mask(12, num_actions, rng) if masked else np.ones((12, num_actions), bool)
        gumbel = rng.gumbel(size=(12, num_actions)).astype(np.float32)
        roots = SearchRoots(
            latent=torch.from_numpy(states.astype(np.float32))[:, None],
            value=model.value[states],
            policy_logits=model.logits[states],
            action_mask=mask,
        )
        cfg = SearchConfig(
            num_simulations=num_simulations, discount=0.95, max_num_considered_actions=m
        )
        out = run_search(
            roots, TabularRecurrent(model), cfg, None, False, rule=GUMBEL, gumbel=gumbel
        )
        for b in range(12):
            root, trace = gumbel_reference_search(
                model, int(states[b]), mask[b].tolist(), gumbel[b], num_simulations, 0.95, m
            )
            edges = zip(
                out.tree.parents[b, 1:].tolist(),
                out.tree.action_from_parent[b, 1:].tolist(),
                strict=True,
            )
            assert list(edges) == trace, (num_simulations, b)
            assert out.root_value[b] == pytest.approx(root.value_sum / root.visit_count, abs=1e-6)
