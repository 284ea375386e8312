"""PUCT tie-breaking: LightZero's tie list, drawn at random from a seeded per-tree stream.

LightZero's `cselect_child` (ctree_muzero/lib/cnode.cpp:567-592, the same in every C++ tree)
lists the actions within 1e-6 of the running maximum, restarting the list at every strictly
larger score, and takes `list[rand() % size]` unless its `deterministic` flag asks for the first.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.mcts.fakes import BanditModel, make_roots
from tests.mcts.test_chance import ChanceModel
from tests.mcts.test_selection import PARAMS
from zeropipe.config import PolicyConfig
from zeropipe.mcts import ActingParams, SearchConfig, run_search, search_policy
from zeropipe.mcts.selection import CHANCE, SearchParams, puct_select
from zeropipe.mcts.tree import Tree, allocate_tree

RANDOM = PARAMS._replace(random_ties=True)
FIRST = PARAMS._replace(random_ties=False)
SEEDS = range(200)


def _exact_tie_tree() -> Tree:
    """A root of 4 unvisited children with priors [.1, .4, .1, .4] and one simulation done.

    N = 1, so each score is the shared unvisited Q (0 while the min-max range is empty) plus
    pb_c · prior: actions 1 and 3 tie exactly (the same float32 prior), 0 and 2 are lower.
    """
    tree = allocate_tree(batch_size=1, num_nodes=3, num_actions=4)
    tree.children_prior[0, 0] = [0.1, 0.4, 0.1, 0.4]
    tree.root_legal[0] = True
    tree.node_visits[0, 0] = 2
    return tree


def _choose(tree: Tree, params: SearchParams, seed: int) -> int:
    tree.tie_seed[0] = seed
    return puct_select(tree, params, 0, 0, True, 0.0, np.empty(4))[0]


def test_an_exact_tie_is_broken_at_random_and_replays_per_seed() -> None:
    tree = _exact_tie_tree()
    choices = [_choose(tree, RANDOM, seed) for seed in SEEDS]
    assert set(choices) == {1, 3}
    # A fair coin over 200 seeds: 100 ± 7 (one standard deviation); the bounds are 5 of them.
    assert 65 < choices.count(1) < 135
    assert [_choose(tree, RANDOM, seed) for seed in SEEDS] == choices  # same seed, same choice


def test_the_first_rule_takes_the_lowest_tied_action_whatever_the_seed() -> None:
    tree = _exact_tie_tree()
    assert {_choose(tree, FIRST, seed) for seed in SEEDS} == {1}


def test_each_visit_of_a_node_draws_afresh() -> None:
    # One seed, the same scores, but a different visit count of the node: the key differs.
    tree = _exact_tie_tree()
    choices = set()
    for visits in range(2, 40):
        tree.node_visits[0, 0] = visits
        tree.children_prior[0, 0] = [0.1, 0.4, 0.1, 0.4]
        choices.add(_choose(tree, RANDOM, 5))
    assert choices == {1, 3}


def test_the_tie_list_is_lightzeros_window() -> None:
    """Scores [s, s, s + δ, s] with δ ≈ 5e-7 < 1e-6: LightZero's list is [0], [0, 1], then
    restarted at 2 by the strictly larger score, [2], then [2, 3] (3 is within 1e-6 below).
    So 2 and 3 are drawn, never 0 or 1, although they are within 1e-6 of the maximum too."""
    tree = allocate_tree(batch_size=1, num_nodes=6, num_actions=4)
    tree.children_prior[0, 0] = [0.25, 0.25, 0.25 + 4e-7, 0.25]  # float32: +4.2e-7
    tree.children_visits[0, 0] = [1, 1, 1, 1]
    tree.node_visits[0, 0] = 5
    tree.root_legal[0] = True
    scores = np.empty(4)
    tree.tie_seed[0] = 0
    puct_select(tree, RANDOM, 0, 0, True, 0.0, scores)
    assert scores[0] == scores[1] == scores[3] and 0.0 < scores[2] - scores[0] < 1e-6
    assert {_choose(tree, RANDOM, seed) for seed in SEEDS} == {2, 3}
    tree.root_legal[0, 2] = False  # an illegal action never joins the list
    assert {_choose(tree, RANDOM, seed) for seed in SEEDS} == {0, 1, 3}


def _first_root_action(cfg: SearchConfig, seed: int, batch_size: int = 1) -> np.ndarray:
    """The root action that the first simulation expands ([B]): all three arms tie at N = 0."""
    out = run_search(
        make_roots(batch_size, 3),
        BanditModel([0.0, 0.0, 0.0]),
        cfg,
        np.random.default_rng(seed),
        add_noise=False,
    )
    return np.argmax(out.visit_counts, axis=1)


def test_the_search_draws_its_ties_from_the_generator() -> None:
    cfg = SearchConfig(num_simulations=1, discount=0.9)  # tie_break: random by default
    firsts = [int(_first_root_action(cfg, seed)[0]) for seed in range(60)]
    assert set(firsts) == {0, 1, 2}
    assert [int(_first_root_action(cfg, seed)[0]) for seed in range(60)] == firsts
    # One stream per tree: the 64 roots of one search do not all make the same choice.
    assert len(set(_first_root_action(cfg, 0, batch_size=64).tolist())) == 3
    first = SearchConfig(num_simulations=1, discount=0.9, tie_break="first")
    assert {int(_first_root_action(first, seed)[0]) for seed in range(60)} == {0}


def test_chance_decision_nodes_break_ties_too() -> None:
    cfg = SearchConfig(num_simulations=1, discount=0.9, chance_space_size=1)
    firsts = set()
    for seed in range(60):
        out = run_search(
            make_roots(1, 3),
            ChanceModel(3, [1.0]),
            cfg,
            np.random.default_rng(seed),
            add_noise=False,
            rule=CHANCE,
            chance_space_size=1,
        )
        firsts.add(int(np.argmax(out.visit_counts[0])))
    assert firsts == {0, 1, 2}


@pytest.mark.parametrize(("eval_rule", "expected"), [("first", {0}), ("random", {0, 1, 2})])
def test_eval_searches_use_the_eval_tie_rule(eval_rule: str, expected: set[int]) -> None:
    cfg = SearchConfig(num_simulations=1, discount=0.9, eval_tie_break=eval_rule)
    policy = search_policy("puct")
    actions = set()
    for seed in range(60):
        out = policy(
            make_roots(1, 3),
            BanditModel([0.0, 0.0, 0.0]),
            cfg,
            np.random.default_rng(seed),
            ActingParams("eval"),
        )
        actions.add(int(np.argmax(out.visit_counts[0])))
    assert actions == expected


@pytest.mark.parametrize(
    "policy_type", ["muzero", "efficientzero", "stochastic_muzero", "sampled_unizero", "unizero"]
)
def test_every_type_defaults_to_first_ties_and_random_is_the_option(policy_type: str) -> None:
    # The measured deviation of docs/parity.md S4: LightZero's random rule is an option.
    # (a one-step unroll fits the UniZero types' default context window)
    cfg = PolicyConfig.model_validate({"type": policy_type, "num_unroll_steps": 1})
    search = cfg.search_config(cfg.num_simulations)
    assert (search.tie_break, search.eval_tie_break) == ("first", "first")
    raw = {"type": policy_type, "num_unroll_steps": 1, "tie_break": "random"}
    chosen = PolicyConfig.model_validate({**raw, "eval_tie_break": "random"})
    search = chosen.search_config(chosen.num_simulations)
    assert (search.tie_break, search.eval_tie_break) == ("random", "random")


def test_an_unknown_tie_rule_is_refused() -> None:
    with pytest.raises(ValueError, match="tie_break"):
        SearchConfig(num_simulations=1, discount=0.9, tie_break="lowest")
