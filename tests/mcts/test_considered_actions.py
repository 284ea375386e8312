"""How many root actions a Gumbel search considers: ours is min(m, legal actions), the
reference's min(m, num_simulations) (ctree_gumbel_muzero/lib/cnode.cpp:727). The two read the same
row of the sequential-halving table whenever m is at most the legal actions and the simulations,
which every shipped Gumbel config keeps (its envs mask no action), so the shipped runs search as
the reference's would. Where m exceeds the legal actions the reference's row asks, at some
simulations, for a visit count no legal action has; it then gives the visit to the first legal
action (its `score_considered` gives every action −inf, cnode.cpp:733-742 keeps
`legal_actions[0]`), which ours never does."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from zeropipe.config.loader import load_config
from zeropipe.envs.registry import env_spec
from zeropipe.mcts.halving import considered_visit_table, root_considered_visits

ROOT = Path(__file__).resolve().parents[2]
GUMBEL_CONFIGS = sorted(p.name for p in (ROOT / "configs").glob("*gumbel_muzero*.yaml"))


def _reference_row(max_considered: int, num_simulations: int) -> np.ndarray:
    """The visit counts the reference asks of the root action at each simulation."""
    return considered_visit_table(max_considered, num_simulations)[
        min(max_considered, num_simulations)
    ]


def test_there_are_shipped_gumbel_configs():
    assert len(GUMBEL_CONFIGS) >= 3


@pytest.mark.parametrize("name", GUMBEL_CONFIGS)
def test_a_shipped_gumbel_config_considers_as_the_reference(name: str):
    cfg = load_config(ROOT / "configs" / name)
    m, sims = cfg.policy.gumbel.max_num_considered_actions, cfg.policy.num_simulations
    actions = env_spec(cfg.env).action_space_size
    assert m <= min(actions, sims), f"{name}: m = {m}, {actions} actions, {sims} simulations"
    every_action = np.ones((1, actions), dtype=bool)
    ours = root_considered_visits(every_action, m, sims)[0]
    assert np.array_equal(ours, _reference_row(m, sims))


def test_with_more_considered_than_legal_the_reference_asks_visits_no_action_has():
    # two legal actions, m = 4: ours halves over the two, the reference's first phase lists
    # four actions' visits, so simulations 2 and 3 ask for a 0-visit action when both have one
    m, sims, legal = 4, 8, np.ones((1, 2), dtype=bool)
    assert list(_reference_row(m, sims)) == [0, 0, 0, 0, 1, 1, 2, 2]
    assert list(root_considered_visits(legal, m, sims)[0]) == [0, 0, 1, 1, 2, 2, 3, 3]
