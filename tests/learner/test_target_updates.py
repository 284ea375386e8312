"""Target-network updates: the hard copy every `target_update_freq` steps and the per-step EMA.

LightZero semantics (lightzero_facts §learner, pitfall 11): the hard copy is a full
`load_state_dict` (BatchNorm running statistics included) on the freq-th, 2·freq-th, ... learner
step; the EMA is p_target ← θ·p + (1 − θ)·p_target on the parameters after every step.
"""

from __future__ import annotations

import torch

from tests.buffer.factories import make_segment
from zeropipe.learner.learner import Learner

from .factories import parameters, sample_batch, state, tiny_network, tiny_policy


def _assert_state_equal(got: dict, want: dict) -> None:
    assert got.keys() == want.keys()
    for name, tensor in want.items():
        assert torch.equal(got[name], tensor), name


def _differs(a: dict, b: dict) -> bool:
    return any(not torch.equal(a[name], b[name]) for name in a)


def test_hard_update_copies_exactly_every_freq_steps_and_not_before():
    freq = 3
    cfg = tiny_policy(norm_type="BN", target_update_type="hard", target_update_freq=freq)
    batch = sample_batch(cfg, 4, make_segment(12, ends_episode=True, terminated=True))
    learner = Learner(tiny_network(cfg), cfg, 1, seed=0)
    copied = state(learner.network)
    assert any("running_mean" in name for name in copied)  # BN statistics are part of the copy
    for step in range(1, 2 * freq + 2):
        learner.step(batch)
        assert learner.train_iter == step
        online, target = state(learner.network), state(learner.target_network)
        if step % freq == 0:
            _assert_state_equal(target, online)
            copied = online
        else:
            _assert_state_equal(target, copied)
            assert _differs(online, copied)  # the network did move since the last copy


def test_ema_mixes_target_and_network_parameters_by_theta_every_step():
    theta = 0.25
    cfg = tiny_policy(target_update_type="ema", target_update_theta=theta)
    batch = sample_batch(cfg, 4, make_segment(12, ends_episode=True, terminated=True))
    learner = Learner(tiny_network(cfg), cfg, 1, seed=0)
    for _ in range(3):
        before = parameters(learner.target_network)
        learner.step(batch)
        online = parameters(learner.network)
        moved = False
        for got, p, old in zip(parameters(learner.target_network), online, before, strict=True):
            torch.testing.assert_close(got, theta * p + (1 - theta) * old, rtol=1e-6, atol=1e-7)
            moved |= not torch.equal(p, old)
        assert moved  # the check is not vacuous: network and target differ
    assert not any(p.requires_grad for p in learner.target_network.parameters())
