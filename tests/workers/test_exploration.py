"""Held exploration: ε-greedy random actions held for several env steps, alone and through the
collector that plays them."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest

from tests.tiny import tiny_config
from zeropipe.config import ConfigError
from zeropipe.pipeline.build import build_collector
from zeropipe.workers.exploration import HeldExploration

pytestmark = pytest.mark.timeout(120)

LEGAL = np.ones((4, 3), dtype=bool)  # [B, A]
SEARCH = np.full(4, 7, dtype=np.int64)  # a marker no random action can equal


def test_epsilon_one_holds_each_random_action_for_hold_steps():
    held, rng = HeldExploration(4, hold_steps=3), np.random.default_rng(0)
    played = np.stack([held.apply(SEARCH, LEGAL, 1.0, rng) for _ in range(12)])  # [12, B]
    assert np.all(played < 3)  # every step random, all legal
    runs = played.reshape(4, 3, 4)  # [hold, step in hold, B]
    assert np.all(runs == runs[:, :1])  # constant within each hold of 3 steps


def test_epsilon_zero_plays_the_search_actions():
    held, rng = HeldExploration(4, hold_steps=3), np.random.default_rng(0)
    for _ in range(5):
        assert np.array_equal(held.apply(SEARCH, LEGAL, 0.0, rng), SEARCH)


def test_epsilon_is_the_fraction_of_random_steps():
    held, rng = HeldExploration(1000, hold_steps=4), np.random.default_rng(0)
    search = np.full(1000, 7, dtype=np.int64)
    random = [
        np.mean(held.apply(search, np.ones((1000, 3), bool), 0.2, rng) != 7) for _ in range(200)
    ]
    assert np.mean(random[50:]) == pytest.approx(0.2, abs=0.01)  # steady state


def test_a_hold_ends_at_an_illegal_action_and_at_a_reset():
    held, rng = HeldExploration(1, hold_steps=10), np.random.default_rng(0)
    first = held.apply(SEARCH[:1], LEGAL[:1], 1.0, rng)[0]
    mask = np.ones((1, 3), dtype=bool)
    mask[0, first] = False
    assert held.apply(SEARCH[:1], mask, 0.0, rng)[0] == 7  # illegal now: the search's action
    held.apply(SEARCH[:1], LEGAL[:1], 1.0, rng)
    held.reset(0)
    assert held.apply(SEARCH[:1], LEGAL[:1], 0.0, rng)[0] == 7


def test_collector_plays_each_random_action_for_hold_steps(tmp_path):
    """ε = 1 with holds of 4: every episode's actions are constant over steps [4j, 4j+4)."""
    cfg = tiny_config(tmp_path / "run", eps={"hold_steps": 4})
    collector = build_collector(cfg)
    try:
        segments = [s for _ in range(4) for s in collector.collect(1.0, 1.0).segments]
    finally:
        collector.close()
    episodes: dict[int, dict[int, int]] = defaultdict(dict)
    for seg in segments:
        for t in range(seg.length):
            episodes[seg.episode_id][seg.start_step + t] = int(seg.actions[t])
    holds = 0
    for actions in episodes.values():
        for step, action in actions.items():
            if step % 4 and step - 1 in actions:
                assert action == actions[step - 1], (step, actions)
                holds += 1
    assert holds > 40  # enough held steps that random actions would have differed


def test_hold_steps_is_refused_for_continuous_actions(tmp_path):
    model = {"continuous_action_space": True, "value_support_range": [-3, 4, 1]}
    with pytest.raises((ConfigError, ValueError), match="hold_steps"):
        tiny_config(tmp_path / "run", type="sampled_muzero", model=model, eps={"hold_steps": 2})
