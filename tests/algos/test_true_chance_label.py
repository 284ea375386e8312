"""stochastic_muzero with `use_true_chance_label`: the env's chance outcome is the code."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from tests.algos.test_stochastic import C, _grad_norm, _inputs, _net, _policy
from tests.buffer.test_chance_labels import _buffer, labelled_segment
from zeropipe.algos.losses import cross_entropy
from zeropipe.algos.stochastic import STOCHASTIC, ChanceUnrollInputs, stochastic_unroll_loss
from zeropipe.algos.targets import Targets
from zeropipe.config import ConfigError
from zeropipe.models import scalar_to_two_hot

LABELS = torch.tensor([[2, 0], [1, 2], [0, 1]])  # [B, K]


def _labelled(labels: torch.Tensor = LABELS) -> ChanceUnrollInputs:
    inp = _inputs()
    base = {f.name: getattr(inp, f.name) for f in dataclasses.fields(inp)}
    return ChanceUnrollInputs(**base, chance_labels=labels)


def test_the_true_label_is_the_code_and_the_afterstate_policy_target():
    """Step 0 recomputed by hand with one_hot(label) as the code: the afterstate policy and
    reward terms of the loss are exactly those of the true code."""
    net = _net()
    net.eval()
    inp = _labelled()
    loss = stochastic_unroll_loss(net, inp, _policy())
    k_steps = inp.actions.shape[1]
    with torch.no_grad():
        latent = net.initial_inference(inp.root_obs).latent
        after = net.afterstate_inference(latent, inp.actions[:, 0])
        one_hot = F.one_hot(LABELS[:, 0], C).float()
        out = net.chance_inference(after.latent, one_hot)
        reward_cat = scalar_to_two_hot(inp.reward_target, net.reward_support)
        as_policy = cross_entropy(after.policy_logits, one_hot) * inp.reward_mask[:, 0]
        reward = cross_entropy(out.reward_logits, reward_cat[:, 0]) * inp.reward_mask[:, 0]
    # K = 2 and sample 0 has no step 1: its terms are step 0's alone, weight 1 (the reference's
    # weighting, the default) or 1/K (appendix_g)
    unlabelled = stochastic_unroll_loss(net, _inputs(), _policy())
    assert not torch.allclose(loss.per_sample, unlabelled.per_sample)
    one_step = dataclasses.replace(
        inp, reward_mask=torch.cat([inp.reward_mask[:, :1], torch.zeros(3, 1)], dim=1)
    )
    loss = stochastic_unroll_loss(net, one_step, _policy())
    torch.testing.assert_close(loss.terms["afterstate_policy_loss"], as_policy.mean())
    torch.testing.assert_close(loss.terms["reward_loss"], reward.mean())
    loss = stochastic_unroll_loss(net, one_step, _policy(loss_weighting="appendix_g"))
    torch.testing.assert_close(loss.terms["afterstate_policy_loss"], as_policy.mean() / k_steps)
    torch.testing.assert_close(loss.terms["reward_loss"], reward.mean() / k_steps)


def test_with_true_labels_the_encoder_learns_from_the_commitment_alone():
    net = _net()
    net.train()
    policy = _policy(stochastic={"chance_space_size": C, "commitment_loss_weight": 0.0})
    stochastic_unroll_loss(net, _labelled(), policy).per_sample.sum().backward()
    assert _grad_norm(net.chance_encoder) == 0.0
    assert _grad_norm(net.dynamics) > 0.0
    net.zero_grad()
    stochastic_unroll_loss(net, _labelled(), _policy()).per_sample.sum().backward()
    assert _grad_norm(net.chance_encoder) > 0.0  # pulled towards the true code


def _batch_and_targets(labels: bool):
    """A sampled batch of one stored segment (with or without labels) and stand-in targets
    (`unroll_inputs` only moves them)."""
    buffer = _buffer()
    seg = labelled_segment()
    if not labels:
        seg = dataclasses.replace(seg, chance_labels=None)
    buffer.push([seg])
    batch = buffer.sample(4)
    b, k = batch.actions.shape
    targets = Targets(torch.zeros(b, k + 1), torch.zeros(b, k), torch.zeros(b, k + 1, 3), None)
    return batch, targets, seg


def test_the_family_hands_the_batch_labels_to_the_loss():
    batch, targets, _ = _batch_and_targets(labels=True)
    cfg = _policy(stochastic={"chance_space_size": 33, "use_true_chance_label": True})
    inputs = STOCHASTIC.unroll_inputs(batch, targets, 1, cfg)
    assert isinstance(inputs, ChanceUnrollInputs)
    np.testing.assert_array_equal(inputs.chance_labels.numpy(), batch.chance_labels)
    off = STOCHASTIC.unroll_inputs(batch, targets, 1, _policy())
    assert not isinstance(off, ChanceUnrollInputs)


def test_missing_or_too_large_labels_are_config_errors():
    batch, targets, _ = _batch_and_targets(labels=False)
    cfg = _policy(stochastic={"chance_space_size": 33, "use_true_chance_label": True})
    with pytest.raises(ConfigError, match="does not report info\\['chance'\\]"):
        STOCHASTIC.unroll_inputs(batch, targets, 1, cfg)
    batch, targets, seg = _batch_and_targets(labels=True)
    small = _policy(stochastic={"chance_space_size": 3, "use_true_chance_label": True})
    if batch.chance_labels.max() < 3:
        pytest.fail(f"the fixture's labels should exceed 3: {seg.chance_labels}")
    with pytest.raises(ConfigError, match="chance_space_size is 3"):
        STOCHASTIC.unroll_inputs(batch, targets, 1, small)
