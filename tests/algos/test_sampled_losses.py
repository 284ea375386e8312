"""The policy loss over sampled actions: CE / KL by hand, masked slots ignored."""

from __future__ import annotations

import pytest
import torch

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
