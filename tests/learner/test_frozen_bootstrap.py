"""The learner's bootstrap values through a frozen graph of the target network
(`policy.actor_inference: frozen`) equal the eager ones, and follow every target copy."""

from __future__ import annotations

import torch

from tests.buffer.factories import make_segment
from zeropipe.learner.learner import Learner

from .factories import sample_batch, tiny_network, tiny_policy


def _learner(inference: str) -> Learner:
    cfg = tiny_policy(norm_type="BN", actor_inference=inference)
    return Learner(tiny_network(cfg, seed=0), cfg, 1, seed=0)


def test_frozen_bootstrap_values_equal_eager_and_follow_the_target_copies():
    cfg = tiny_policy(norm_type="BN")
    batch = sample_batch(cfg, 8, make_segment(12, ends_episode=True, terminated=True))
    assert (batch.bootstrap_discount > 0).any()  # some values are bootstrapped
    frozen, eager = _learner("frozen"), _learner("eager")
    for _ in range(2):  # frozen at the second learner step on the same target weights
        before = frozen.targets.compute(batch).value
    assert frozen.targets._graph.frozen is not None
    torch.testing.assert_close(before, eager.targets.compute(batch).value, rtol=1e-4, atol=1e-4)
    other = tiny_network(cfg, seed=1).state_dict()
    for learner in (frozen, eager):
        learner.target_network.load_state_dict(other)  # a hard target copy
    after, want = frozen.targets.compute(batch).value, eager.targets.compute(batch).value
    assert (want - before).abs().max() > 1e-2  # the copy moved the values
    torch.testing.assert_close(after, want, rtol=1e-4, atol=1e-4)
