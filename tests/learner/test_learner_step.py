"""Learner.step: it learns, PER importance weights weigh samples, priorities are value errors,
and reanalysed policy targets come back stamped with their rows' make_time.

The per-sample checks use LayerNorm and plain SGD (no momentum, no weight decay, no clipping), so a
step moves the parameters by exactly −lr·∇(Σ_b w_b·loss_b / B) and each sample's gradient is its
own (BatchNorm in train mode would couple the samples of a batch).
"""

from __future__ import annotations

import copy
import dataclasses

import numpy as np
import pytest
import torch

from tests.buffer.factories import make_segment
from zeropipe.algos.registry import algorithm
from zeropipe.learner.learner import Learner
from zeropipe.models import logits_to_scalar, scalar_to_two_hot

from .factories import OBS, A, all_roots, parameters, rows, sample_batch, tiny_network, tiny_policy

B = 4


def _sgd_policy():
    return tiny_policy(
        optim_type="SGD", learning_rate=0.05, momentum=0.0, weight_decay=0.0, grad_clip_value=1e9
    )


def _step_delta(net, cfg, batch) -> list[torch.Tensor]:
    """Parameter change of one learner step on `batch`, from a copy of `net`."""
    learner = Learner(copy.deepcopy(net), cfg, 1, seed=0)
    before = parameters(learner.network)
    learner.step(batch)
    return [after - b for after, b in zip(parameters(learner.network), before, strict=True)]


def test_steps_on_a_fixed_batch_reduce_its_loss():
    cfg = tiny_policy(norm_type="BN", learning_rate=3e-3)
    batch = sample_batch(cfg, 8, make_segment(12, ends_episode=True, terminated=True))
    learner = Learner(tiny_network(cfg, reinit=False), cfg, 1, seed=0)
    losses = [learner.step(batch).metrics["total_loss"] for _ in range(20)]
    assert learner.train_iter == 20
    # total_loss of step n is the loss before its update; targets are fixed (no target copy yet)
    assert losses[-1] < 0.85 * losses[0], losses
    assert np.all(np.isfinite(losses))


@pytest.mark.parametrize(
    "weights",
    [[0.0, 1.0, 0.0, 0.0], [1.0, 1.0, 1.0, 1.0], [0.5, 2.0, 0.0, 1.25]],
    ids=["one-hot", "uniform", "mixed"],
)
def test_importance_weights_scale_each_samples_gradient(weights):
    cfg = _sgd_policy()
    net = tiny_network(cfg)
    batch = sample_batch(cfg, B, make_segment(12, ends_episode=True, terminated=True))
    weighted = dataclasses.replace(batch, weights=np.asarray(weights, dtype=np.float32))
    got = _step_delta(net, cfg, weighted)
    # Each sample alone (a batch of one with weight 1) moves the parameters by −lr·∇loss_b.
    alone = [_step_delta(net, cfg, rows(batch, [b])) for b in range(B)]
    for i, delta in enumerate(got):
        want = sum(w * single[i] for w, single in zip(weights, alone, strict=True)) / B
        torch.testing.assert_close(delta, want, atol=2e-6, rtol=1e-4)
    assert any(float(d.abs().max()) > 1e-4 for d in got)  # the step did move the parameters


def test_one_hot_weights_ignore_the_other_samples_targets():
    cfg = _sgd_policy()
    net = tiny_network(cfg)
    batch = sample_batch(cfg, B, make_segment(12, ends_episode=True, terminated=True))
    one_hot = dataclasses.replace(batch, weights=np.array([0, 0, 1, 0], dtype=np.float32))
    changed = dataclasses.replace(
        one_hot,
        reward_targets=one_hot.reward_targets + np.array([[5.0], [-3.0], [0.0], [2.0]], "f4"),
        value_reward_sum=one_hot.value_reward_sum + np.array([[4.0], [1.0], [0.0], [-2.0]], "f4"),
    )
    for got, want in zip(
        _step_delta(net, cfg, changed), _step_delta(net, cfg, one_hot), strict=True
    ):
        torch.testing.assert_close(got, want, atol=1e-7, rtol=1e-6)


def test_priorities_are_the_root_value_errors_against_the_target():
    cfg = tiny_policy()
    net = tiny_network(cfg)
    batch, row_of = all_roots(cfg, make_segment(10, ends_episode=True, terminated=False))
    learner = Learner(copy.deepcopy(net), cfg, 1, seed=0)
    result = learner.step(batch)
    # By hand: |v(root) − (Σ_{i<td} γ^i r + γ^td·v_target(bootstrap))| + 1e-6 with the weights of
    # before the step (the target network starts as a copy of the network).
    with torch.no_grad():
        root = net.initial_inference(torch.from_numpy(batch.obs[:, 0].reshape(-1, OBS)))
        boot = net.initial_inference(torch.from_numpy(batch.bootstrap_obs[:, 0].reshape(-1, OBS)))
    v_root = logits_to_scalar(root.value_logits, net.value_support).numpy()
    v_boot = logits_to_scalar(boot.value_logits, net.value_support).numpy()
    target = batch.value_reward_sum[:, 0] + batch.bootstrap_discount[:, 0] * v_boot
    assert result.priorities.shape == (batch.indices.size,)
    np.testing.assert_allclose(result.priorities, np.abs(v_root - target) + 1e-6, atol=1e-5)
    # the last root bootstraps from the truncation's final observation: γ^1 · v_target(obs[10])
    last = row_of[9]
    assert batch.bootstrap_discount[last, 0] == pytest.approx(0.5)
    np.testing.assert_allclose(target[last], 10.0 + 0.5 * v_boot[last], rtol=1e-6)


def _constant_value(net: torch.nn.Module, value: float) -> None:
    """A UniZero network whose value head predicts `value` at every observation."""
    last = net.value_head[-1]
    two_hot = scalar_to_two_hot(torch.tensor(value), net.value_support)
    with torch.no_grad():
        last.weight.zero_()
        last.bias.copy_(two_hot.log().clamp_min(-1e4))


@pytest.mark.parametrize(
    ("priority_td", "want"),
    [
        # root 2: z = 3 + 0.5·1, 4 + 0.5·1; both actions exist: (|2 − 3.5| + |2 − 4.5|) / 2
        # root 9: z_0 = 10 + 0.5·1 (the truncation's final observation); no action at step 1
        ("unroll_mean", {2: (1.5 + 2.5) / 2, 9: 8.5}),
        ("root", {2: 1.5, 9: 8.5}),
    ],
)
def test_unizero_priorities_average_the_unroll(priority_td, want):
    """v̂ = 2 from the network, bootstrap values 1 from the target network; K = 2, T = 1,
    γ = 0.5; step e has reward e + 1."""
    cfg = tiny_policy(
        type="unizero",
        model={"world_model": {"context_steps": 2}},
        td_steps=1,
        priority_td=priority_td,
    )
    net = algorithm("unizero").family.build_network((OBS,), A, cfg)
    learner = Learner(net, cfg, 1, seed=0)
    _constant_value(learner.network, 2.0)
    _constant_value(learner.target_network, 1.0)
    batch, row_of = all_roots(cfg, make_segment(10, ends_episode=True, terminated=False))
    priorities = learner.step(batch).priorities
    for root, td in want.items():
        assert priorities[row_of[root]] == pytest.approx(td + 1e-6, abs=1e-5)


def test_reanalysed_policy_targets_come_back_with_their_rows_make_time():
    cfg = tiny_policy(reanalyze_ratio=0.5, num_simulations=2)
    batch = sample_batch(cfg, B, make_segment(12, ends_episode=True, terminated=True))
    stamped = dataclasses.replace(batch, make_time=np.array([10, 11, 12, 13], dtype=np.int64))
    wb = Learner(tiny_network(cfg), cfg, 1, seed=0).step(stamped).writeback
    # the first round(B · 0.5) rows are re-searched at every stored state of their unroll
    want = [
        (int(stamped.target_indices[r, c]), int(stamped.make_time[r]))
        for r in range(B // 2)
        for c in range(cfg.num_unroll_steps + 1)
        if stamped.policy_mask[r, c] > 0 and stamped.target_indices[r, c] >= 0
    ]
    assert sorted(zip(wb.indices.tolist(), wb.make_time.tolist(), strict=True)) == sorted(want)
    assert wb.visits.shape == (len(want), A)
    np.testing.assert_allclose(wb.visits.sum(axis=1), 1.0, rtol=1e-6)
