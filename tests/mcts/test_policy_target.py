"""The stored policy target is the root visit distribution, whatever the acting temperature.

Collect acts on visits^(1/T) (MuZero appendix D), but the learner imitates the search itself:
the target is the visits normalised, N(a) / Σ N, never the temperature-sharpened (or flattened)
distribution the action was drawn from. PUCT and chance searches, collect mode, T ≠ 1.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from zeropipe.mcts import ActingParams, SearchConfig, search_policy
from zeropipe.mcts import policies as policies_module

from .fakes import BanditModel, make_roots

# root visits of a 10-simulation search and the target they give, by hand: N(a) / 10
VISITS = np.array([[6, 3, 1, 0], [0, 5, 5, 0]], dtype=np.int64)
TARGET = np.array([[0.6, 0.3, 0.1, 0.0], [0.0, 0.5, 0.5, 0.0]], dtype=np.float32)
# what acting at T = 0.5 samples from (visits², normalised), which must not be stored
ACTING_AT_HALF = np.array([[36 / 46, 9 / 46, 1 / 46, 0.0], [0.0, 0.5, 0.5, 0.0]])


@pytest.mark.parametrize("temperature", [0.25, 0.5, 2.0, 4.0])
@pytest.mark.parametrize("policy", ["puct", "chance"])
def test_the_target_is_the_visit_distribution_not_the_acting_one(
    policy: str, temperature: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    searched = SimpleNamespace(
        visit_counts=VISITS,
        root_value=np.zeros(2, dtype=np.float32),
        q_values=np.zeros((2, 4), dtype=np.float32),
    )
    monkeypatch.setattr(policies_module, "run_search", lambda *args, **kwargs: searched)
    cfg = SearchConfig(num_simulations=10, discount=0.997, chance_space_size=2)
    acting = ActingParams("collect", temperature=temperature, epsilon=0.25)
    out = search_policy(policy)(make_roots(2, 4), None, cfg, np.random.default_rng(0), acting)
    np.testing.assert_array_equal(out.policy_target, TARGET)
    assert not np.allclose(TARGET, ACTING_AT_HALF)  # the table tells the two apart


@pytest.mark.parametrize("temperature", [0.25, 4.0])
def test_a_real_collect_search_stores_its_visits_normalised(temperature: float) -> None:
    cfg = SearchConfig(num_simulations=30, discount=0.9)
    out = search_policy("puct")(
        make_roots(3, 3),
        BanditModel([0.1, 0.9, 0.3]),
        cfg,
        np.random.default_rng(1),
        ActingParams("collect", temperature=temperature),
    )
    visits = out.visit_counts.astype(np.float64)
    np.testing.assert_allclose(out.policy_target, visits / 30, rtol=1e-6)
    tempered = visits ** (1 / temperature)
    assert not np.allclose(out.policy_target, tempered / tempered.sum(axis=1, keepdims=True))
