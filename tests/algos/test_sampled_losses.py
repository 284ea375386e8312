"""The policy loss over sampled actions: CE / KL by hand, masked slots ignored."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from tests.tiny import TINY_CONTINUOUS_MODEL
from zeropipe.algos.sampled_losses import sampled_policy_loss


def test_cross_entropy_and_kl_match_a_hand_computation() -> None:
    log_probs = torch.log(torch.tensor([[0.5, 0.2, 0.1]]))
    target = torch.tensor([[0.6, 0.4, 0.0]])
    mask = torch.ones(1, 3)
    ce = sampled_policy_loss(log_probs, target, mask, "cross_entropy")
    kl = sampled_policy_loss(log_probs, target, mask, "kl")
    hand_ce = -(0.6 * torch.log(torch.tensor(0.5)) + 0.4 * torch.log(torch.tensor(0.2)))
    hand_kl = 0.6 * torch.log(torch.tensor(0.6 / 0.5)) + 0.4 * torch.log(torch.tensor(0.4 / 0.2))
    torch.testing.assert_close(ce, hand_ce[None])
    torch.testing.assert_close(kl, hand_kl[None])


@pytest.mark.parametrize("loss_type", ["cross_entropy", "kl"])
def test_masked_slots_contribute_neither_loss_nor_gradient(loss_type) -> None:
    log_probs = torch.tensor([[-1.0, -2.0, -0.5, -3.0]], requires_grad=True)
    target = torch.tensor([[0.5, 0.25, 0.25, 0.0]])
    mask = torch.tensor([[1.0, 1.0, 0.0, 1.0]])
    loss = sampled_policy_loss(log_probs, target, mask, loss_type)
    changed = log_probs.detach().clone()
    changed[0, 2] = -50.0  # a masked slot's score does not matter
    assert float(sampled_policy_loss(changed, target, mask, loss_type)) == pytest.approx(
        float(loss.detach())
    )
    loss.sum().backward()
    assert log_probs.grad[0, 2] == 0.0 and log_probs.grad[0, 0] == -0.5


def test_unknown_loss_type_is_refused() -> None:
    with pytest.raises(ValueError, match="cross_entropy"):
        sampled_policy_loss(torch.zeros(1, 2), torch.zeros(1, 2), torch.ones(1, 2), "l2")  # type: ignore[arg-type]


SAMPLED_TYPES = ("sampled_muzero", "sampled_efficientzero", "sampled_unizero")
_WORLD = {"embed_dim": 8, "num_layers": 1, "num_heads": 2, "context_steps": 2, "dropout": 0.0}


def _continuous_setup(policy_type: str = "sampled_muzero"):
    from zeropipe.algos.registry import algorithm
    from zeropipe.algos.targets import Targets
    from zeropipe.buffer import ReplayBatch
    from zeropipe.config import PolicyConfig

    extra = {}
    if policy_type == "sampled_efficientzero":
        extra = {"value_prefix": {"lstm_hidden_size": 8}, "ssl_loss_weight": 0.0}
    world = {"world_model": _WORLD} if policy_type == "sampled_unizero" else {}
    cfg = PolicyConfig.model_validate(
        {
            "type": policy_type,
            "num_unroll_steps": 2,
            **extra,
            "model": {**TINY_CONTINUOUS_MODEL, **world},
        }
    )
    family = algorithm(policy_type).family
    torch.manual_seed(0)
    net = family.build_network((3,), 1, cfg)
    rng = np.random.default_rng(0)
    b, k, ks = 4, 2, 3

    def batch(policy_mask, sampled, target):
        fields = {
            "obs": rng.standard_normal((b, 1 + k, 3)).astype(np.float32),
            "actions": rng.uniform(-1, 1, (b, k, 1)).astype(np.float32),
            "reward_targets": np.zeros((b, k), np.float32),
            "reward_mask": np.ones((b, k), np.float32),
            "policy_targets": target,
            "policy_mask": policy_mask,
            "value_reward_sum": np.zeros((b, k + 1), np.float32),
            "bootstrap_discount": np.zeros((b, k + 1), np.float32),
            "bootstrap_obs": np.zeros((b, k + 1, 1, 3), np.float32),
            "value_mask": np.ones((b, k + 1), np.float32),
            "legal_masks": np.ones((b, k + 1, 1), bool),
            "target_indices": np.zeros((b, k + 1), np.int64),
            "weights": np.ones(b, np.float32),
            "indices": np.arange(b),
            "make_time": np.zeros(b, np.int64),
            "root_sampled_actions": sampled,
        }
        batch = ReplayBatch(**fields)
        zeros = torch.zeros(b, k + 1), torch.zeros(b, k)
        targets = Targets(*zeros, torch.from_numpy(target), None, sampled)
        return family.unroll_inputs(batch, targets, 1, cfg)

    sampled = rng.uniform(-0.9, 0.9, (b, k + 1, ks, 1)).astype(np.float32)
    target = np.full((b, k + 1, ks), 1.0 / ks, np.float32)
    return family, net, cfg, batch, sampled, target


@pytest.mark.parametrize("policy_type", SAMPLED_TYPES)
def test_continuous_policy_loss_ignores_masked_slots_in_the_learner_path(policy_type) -> None:
    family, net, cfg, make, sampled, target = _continuous_setup(policy_type)
    # the masked step: 2 (past the stored data); UniZero's loss reads the policy at o_0..o_{K-1}
    # only, so there step 1
    step = 1 if policy_type == "sampled_unizero" else 2
    mask = np.ones((4, 3), np.float32)
    mask[:, step] = 0.0
    state = np.random.get_state()
    base = make(mask, sampled, target)
    np.random.set_state(state)
    changed_sampled, changed_target = sampled.copy(), target.copy()
    changed_sampled[:, step] = -0.5
    changed_target[:, step] = [1.0, 0.0, 0.0]
    other = make(mask, changed_sampled, changed_target)
    other = dataclasses.replace(
        other, root_obs=base.root_obs, actions=base.actions, obs_seq=base.obs_seq
    )
    loss_a = family.loss(net, net, base, cfg, 0)
    loss_b = family.loss(net, net, other, cfg, 0)
    torch.testing.assert_close(loss_a.per_sample, loss_b.per_sample)
    assert base.sampled_actions.shape == (4, 3, 3, 1) and base.actions.dtype == torch.float32
    # unmasked, the same change does move the loss
    full = np.ones_like(mask)
    loss_c = family.loss(
        net, net, dataclasses.replace(base, policy_mask=torch.from_numpy(full)), cfg, 0
    )
    loss_d = family.loss(
        net, net, dataclasses.replace(other, policy_mask=torch.from_numpy(full)), cfg, 0
    )
    assert not torch.allclose(loss_c.per_sample, loss_d.per_sample)


def test_reanalysis_re_samples_the_root_actions_with_the_targets() -> None:
    from tests.buffer.test_sampled_columns import _buffer, sampled_segment
    from zeropipe.algos.targets import TargetComputer
    from zeropipe.mcts import search_policy

    family, net, cfg, _, _, _ = _continuous_setup()
    seg = sampled_segment(True)  # [5] frames stacked 2, D = 2, Ks = 4
    cfg = cfg.model_copy(
        update={"sampled": cfg.sampled.model_copy(update={"num_of_sampled_actions": 4})}
    )
    net = family.build_network((10,), 2, cfg)  # frame stack 2 of [5] frames
    buffer = _buffer()
    buffer.push([seg])
    batch = buffer.sample(6)
    search = cfg.search_config(4)
    computer = TargetComputer(net, 1, search, search_policy("sampled"), 0.5, 0)
    targets = computer.compute(batch)
    wb = targets.writeback
    assert wb.sampled_actions.shape == (wb.indices.size, 4, 2)
    assert targets.sampled_actions.shape == batch.root_sampled_actions.shape
    redone = targets.sampled_actions[:3] != batch.root_sampled_actions[:3]
    kept = targets.sampled_actions[3:] == batch.root_sampled_actions[3:]
    mask = batch.policy_mask[:3] > 0
    assert redone.all(axis=(2, 3))[mask].all() and kept.all()
    inputs = family.unroll_inputs(batch, targets, 1, cfg)
    torch.testing.assert_close(inputs.sampled_actions, torch.from_numpy(targets.sampled_actions))
    buffer.write_policy_targets(wb.indices, wb.visits, wb.make_time, wb.sampled_actions)
