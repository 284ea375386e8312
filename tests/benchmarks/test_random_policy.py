"""The random-policy baseline: a fixed seed gives one answer, and CartPole's is random play's."""

from __future__ import annotations

import numpy as np
from benchmarks.random_policy import random_policy_scores


def test_cartpole_random_play_is_short_and_reproducible():
    a = random_policy_scores("configs/cartpole_muzero.yaml", 20)
    b = random_policy_scores("configs/cartpole_muzero.yaml", 20)
    assert a == b
    # CartPole pays 1 per step: a game's return is its length; random play falls in ~22 steps
    assert a.returns == [float(s) for s in a.steps]
    assert 12 < np.mean(a.returns) < 40


def test_a_box_action_space_gets_actions_in_its_bounds():
    scores = random_policy_scores("configs/pendulum_sampled_muzero.yaml", 2)
    assert scores.steps == [200, 200]  # Pendulum-v1's time limit
    assert all(-1700 < r < -100 for r in scores.returns)
