"""Gumbel's three root choices (prior term, collect noise, collect action), each against a hand
computation of LightZero's or mctx's formulas on a bandit or the two-step trap MDP."""

from __future__ import annotations

import numpy as np
import pytest

from zeropipe.algos.gumbel_muzero import GumbelMuZeroConfig
from zeropipe.mcts import ActingParams, SearchConfig
from zeropipe.mcts.gumbel import GumbelSearchConfig, gumbel_options
from zeropipe.mcts.policies import gumbel_policy

from .fakes import BanditModel, TrapModel, make_roots

COLLECT = ActingParams("collect")
EVAL = ActingParams("eval")


def _softmax(x: np.ndarray) -> np.ndarray:
    weights = np.exp(x - x.max())
    return weights / weights.sum()


def test_defaults_are_lightzero_and_a_plain_search_config_gets_them() -> None:
    cfg = GumbelMuZeroConfig().search_config(4)
    assert isinstance(cfg, GumbelSearchConfig)
    assert (cfg.prior_term, cfg.collect_root_noise, cfg.collect_action) == (
        "probability",
        True,
        "improved_argmax",
    )
    chosen = GumbelMuZeroConfig(
        gumbel={
            "prior_term": "logit",
            "collect_root_noise": False,
            "collect_action": "halving_winner",
        }
    ).search_config(7)
    assert (chosen.num_simulations, chosen.prior_term) == (7, "logit")
    assert (chosen.collect_root_noise, chosen.collect_action) == (False, "halving_winner")
    plain = gumbel_options(SearchConfig(num_simulations=3, discount=0.5))
    assert (plain.num_simulations, plain.discount, plain.prior_term) == (3, 0.5, "probability")
    with pytest.raises(ValueError, match="prior_term"):
        GumbelSearchConfig(num_simulations=3, discount=0.5, prior_term="log")
    with pytest.raises(ValueError, match="collect_action"):
        GumbelSearchConfig(num_simulations=3, discount=0.5, collect_action="visits")


def test_lightzero_probability_term_by_hand_with_an_unvisited_action() -> None:
    """LightZero's formulas (cnode.cpp:379, :1013, :1127), eval, 3 arms paying [.2, .8, .5],
    logits [1, .5, 0], root value .3, m = 2, 2 simulations.

    p = softmax(logits). Simulation 1: nothing visited, σ = 0, the largest p (arm 0). Then the
    unvisited arms share the mixed value (.3 + .2) / 2 = .25 > .2, so σ = [0, 5.1, 5.1] and
    arm 1 (p1 > p2) is the second. The mixed value weighs the visited Q by softmax(p)
    (LightZero's second softmax); the target is softmax(p + σ), p the probabilities.
    """
    logits = np.array([1.0, 0.5, 0.0])
    cfg = GumbelSearchConfig(num_simulations=2, discount=0.9, max_num_considered_actions=2)
    roots = make_roots(1, 3, logits=logits, value=0.3)
    out = gumbel_policy(roots, BanditModel([0.2, 0.8, 0.5]), cfg, np.random.default_rng(0), EVAL)
    assert out.visit_counts.tolist() == [[1, 1, 0]]
    p = _softmax(logits)
    w = _softmax(p)
    mixed = (0.3 + 2 * (w[0] * 0.2 + w[1] * 0.8) / (w[0] + w[1])) / 3
    completed = np.array([0.2, 0.8, mixed])
    sigma = (50 + 1) * 0.1 * (completed - 0.2) / (0.8 - 0.2)
    np.testing.assert_allclose(out.q_values[0], completed, rtol=1e-5)
    np.testing.assert_allclose(out.policy_target[0], _softmax(p + sigma), rtol=1e-5)
    assert out.action.tolist() == [1]


@pytest.mark.parametrize("prior_term", ["logit", "probability"])
def test_four_simulations_on_the_trap_by_hand(prior_term: str) -> None:
    """Eval, the trap MDP (fakes.TrapModel), root logits [.4, 0], γ = .9, m = 2, 4 simulations
    (schedule [0, 0, 1, 1]); interior logits and every value are 0.

    Sim 1: σ = 0, action 0 (larger prior): Q0 = 1. Sim 2: action 1, the only one unvisited:
    Q1 = 0. Sim 3: σ = 5.1·[1, 0], action 0; below it nothing is visited, the prior is uniform,
    the first action: Q0 = 1 + .9·(0 + 0) / 2 = 1. Sim 4: action 1 (1 visit); below it action 0
    pays 3: V(state 2) = (0 + 3) / 2, Q1 = .9·1.5 = 1.35. σ = (50 + 2)·.1·[0, 1]. The target is
    softmax(logits + σ) (mctx) or softmax(p + σ), p = softmax(logits) (LightZero); either way
    action 1, the trap's way out, wins.
    """
    logits = np.array([0.4, 0.0])
    cfg = GumbelSearchConfig(
        num_simulations=4,
        discount=0.9,
        max_num_considered_actions=2,
        prior_term=prior_term,
    )
    out = gumbel_policy(
        make_roots(1, 2, logits=logits), TrapModel(), cfg, np.random.default_rng(0), EVAL
    )
    assert out.visit_counts.tolist() == [[2, 2]]
    np.testing.assert_allclose(out.q_values[0], [1.0, 1.35], rtol=1e-5)
    term = logits if prior_term == "logit" else _softmax(logits)
    expected = _softmax(term + np.array([0.0, 5.2]))
    np.testing.assert_allclose(out.policy_target[0], expected, rtol=1e-5)
    assert out.action.tolist() == [1]
    # (1 + 0 + 1 + .9·3) over the root's 5 visits (its first carries no value).
    assert out.root_value[0] == pytest.approx(4.7 / 5)


@pytest.mark.parametrize("prior_term", ["logit", "probability"])
def test_collect_root_noise_moves_the_target_only_in_collect(prior_term: str) -> None:
    """Equal arms: completed Q are equal, σ = 0, so the target is the tree's root prior itself
    (softmax of log prior, or of the probabilities). Collect with the noise: (1 - w)·p + w·noise
    per root; without it, or in eval, p for every root."""
    logits = np.array([1.0, 0.0])
    p = _softmax(logits)
    roots = make_roots(64, 2, logits=logits)
    model = BanditModel([0.5, 0.5])
    base = {"num_simulations": 2, "discount": 0.9, "max_num_considered_actions": 2}
    clean = p if prior_term == "logit" else _softmax(p)
    for noise in (True, False):
        cfg = GumbelSearchConfig(**base, prior_term=prior_term, collect_root_noise=noise)
        evaluated = gumbel_policy(roots, model, cfg, np.random.default_rng(1), EVAL)
        np.testing.assert_allclose(evaluated.policy_target, np.tile(clean, (64, 1)), rtol=1e-5)
        collected = gumbel_policy(roots, model, cfg, np.random.default_rng(1), COLLECT)
        if not noise:
            np.testing.assert_allclose(collected.policy_target, evaluated.policy_target)
            continue
        noised = collected.policy_target[:, 0]
        if prior_term == "probability":  # undo the softmax: p0' - p1' = log(t0 / t1)
            noised = (1 + np.log(noised / collected.policy_target[:, 1])) / 2
        assert np.ptp(noised) > 0.1  # a different noise at every root
        assert ((noised >= 0.75 * p[0] - 1e-6) & (noised <= 0.75 * p[0] + 0.25 + 1e-6)).all()


def test_collect_action_improved_argmax_or_halving_winner() -> None:
    """Two arms, both visited twice: LightZero plays argmax π' at every root; the halving
    winner argmax(g + logits + σ) follows the Gumbel noise (scale 10) at some roots."""
    roots = make_roots(64, 2)
    model = BanditModel([0.4, 0.6])
    base = {
        "num_simulations": 4,
        "discount": 0.9,
        "max_num_considered_actions": 2,
        "gumbel_scale": 10.0,
        "collect_root_noise": False,
    }
    for action in ("improved_argmax", "halving_winner"):
        cfg = GumbelSearchConfig(**base, collect_action=action)
        out = gumbel_policy(roots, model, cfg, np.random.default_rng(2), COLLECT)
        assert (out.visit_counts == 2).all()
        assert (np.argmax(out.policy_target, axis=1) == 1).all()
        if action == "improved_argmax":
            assert (out.action == 1).all()
        else:
            assert 0 < (out.action == 0).sum() < 64
