"""select_action: argmax, temperature sampling and ε-greedy legal exploration."""

from __future__ import annotations

import numpy as np
import pytest

from zeropipe.mcts import select_action

VISITS = np.array([[1, 6, 3], [4, 4, 0]], dtype=np.int32)


def test_deterministic_takes_most_visited_lowest_on_ties() -> None:
    actions = select_action(VISITS, 1.0, np.random.default_rng(0), deterministic=True)
    assert actions.dtype == np.int64
    assert actions.tolist() == [1, 0]
    assert select_action(VISITS, 0.0, np.random.default_rng(0)).tolist() == [1, 0]


def test_temperature_one_samples_proportional_to_visits() -> None:
    visits = np.tile(VISITS[:1], (20000, 1))
    actions = select_action(visits, 1.0, np.random.default_rng(0))
    frequencies = np.bincount(actions, minlength=3) / actions.size
    np.testing.assert_allclose(frequencies, [0.1, 0.6, 0.3], atol=0.015)


def test_small_temperature_is_nearly_greedy_and_never_picks_unvisited() -> None:
    visits = np.tile(VISITS, (1000, 1))
    actions = select_action(visits, 0.01, np.random.default_rng(0))
    assert (actions[0::2] == 1).all()  # (6/3)^100: the runner-up never wins
    assert set(actions[1::2].tolist()) == {0, 1}  # exact tie stays a fair coin
    high = select_action(visits, 1e6, np.random.default_rng(0))
    assert (high[1::2] != 2).all()  # zero visits stay impossible at any temperature


def test_epsilon_draws_uniform_legal_actions() -> None:
    mask = np.array([[True, False, True]] * 4000)
    visits = np.tile(np.array([[0, 0, 10]]), (4000, 1))
    actions = select_action(
        visits, 1.0, np.random.default_rng(0), deterministic=True, epsilon=1.0, action_mask=mask
    )
    assert set(actions.tolist()) == {0, 2}
    assert abs((actions == 0).mean() - 0.5) < 0.03
    partly = select_action(
        visits, 1.0, np.random.default_rng(0), deterministic=True, epsilon=0.2, action_mask=mask
    )
    assert abs((partly == 0).mean() - 0.1) < 0.02  # half of the ε draws land on action 0


def test_rejects_bad_arguments() -> None:
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="action_mask"):
        select_action(VISITS, 1.0, rng, epsilon=0.1)
    with pytest.raises(ValueError, match="temperature"):
        select_action(VISITS, -1.0, rng)
    with pytest.raises(ValueError, match="epsilon"):
        select_action(VISITS, 1.0, rng, epsilon=2.0, action_mask=VISITS > 0)
