"""`root_visit_value`: what the root's initial visit adds to its value sum.

"zero" is LightZero's MuZero tree (root value W / (n + 1)); "network" counts the network's root
value in that visit, as mctx and LightZero's Gumbel tree do ((v + W) / (n + 1)). Found on Acrobot
(issue 15): with Q ≈ -100 the zero visit widens the min-max range and the visits follow the prior.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from zeropipe.mcts import SearchConfig, StepOutput, run_search

from .fakes import BanditModel, make_roots

PAYOFFS = [0.1, 0.9, 0.3]


class MinusOnePerStepModel:
    """Acrobot's regime: every step pays -1; the first action a leads to a branch worth
    `values[a]` (about -100, differing by ~1) at every depth below it."""

    def __init__(self, values: list[float]) -> None:
        self.values = np.asarray(values, dtype=np.float32)  # [A]

    def __call__(self, latent: torch.Tensor, actions: np.ndarray) -> StepOutput:
        branch = latent[:, 0].numpy().astype(np.int64)  # [B] 0 at the root, 1 + a below arm a
        branch = np.where(branch == 0, actions + 1, branch)
        batch_size = actions.shape[0]
        return StepOutput(
            latent=torch.from_numpy(branch.astype(np.float32))[:, None],
            reward=np.full(batch_size, -1.0, dtype=np.float32),
            value=self.values[branch - 1],
            policy_logits=np.zeros((batch_size, self.values.shape[0]), dtype=np.float32),
        )


def test_the_network_visit_counts_the_root_value() -> None:
    # The first simulation ties every arm (N = 0); the first-action rule visits arm 0.
    cfg = SearchConfig(
        num_simulations=1, discount=0.9, root_visit_value="network", tie_break="first"
    )
    roots = make_roots(1, 3, value=2.0)
    out = run_search(roots, BanditModel(PAYOFFS), cfg, np.random.default_rng(0), False)
    assert out.visit_counts.tolist() == [[1, 0, 0]]
    assert out.root_value[0] == pytest.approx((2.0 + PAYOFFS[0]) / 2)


@pytest.mark.parametrize(("rule", "most_visited"), [("zero", 0), ("network", 1)])
def test_large_negative_values_flatten_q_only_with_the_zero_visit(rule, most_visited) -> None:
    """Q ≈ -100 everywhere, arm 1 is best by 2, the prior favours arm 0. LightZero's zero visit
    (≈ -50 after one simulation) widens the min-max range, so the normalised Q differences
    shrink and the prior's arm gets the most visits; the network visit keeps them apart."""
    cfg = SearchConfig(num_simulations=25, discount=0.99, root_visit_value=rule)
    roots = make_roots(1, 3, logits=np.array([1.0, 0.0, 0.0]), value=-99.0)
    model = MinusOnePerStepModel([-100.0, -98.0, -100.0])
    out = run_search(roots, model, cfg, np.random.default_rng(0), False)
    assert int(np.argmax(out.visit_counts[0])) == most_visited, out.visit_counts


def test_an_unknown_rule_is_refused() -> None:
    with pytest.raises(ValueError, match="root_visit_value"):
        SearchConfig(num_simulations=1, discount=0.9, root_visit_value="mean")
