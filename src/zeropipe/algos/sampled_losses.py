"""The policy loss over sampled actions (Sampled MuZero; LightZero `_calculate_policy_loss_*`).

Runs in: driver. The target of a stored state is the search's visit distribution over its K root
sampled actions; the network scores each sampled action by its log-probability (the log-softmax
at a discrete action, the tanh-corrected Gaussian log-density at a continuous one). Slots that
hold no sampled action (mask 0) contribute nothing. B denotes the batch and K the sampled
actions.
"""

from __future__ import annotations

from typing import Literal

import torch

from zeropipe.algos.losses import PolicyTerms, UnrollInputs
from zeropipe.models.gaussian import (
    gaussian_entropy,
    split_params,
    tanh_entropy_estimate,
    tanh_log_prob,
)

PolicyLossType = Literal["cross_entropy", "kl"]
EntropyKind = Literal["gaussian", "tanh_sample_estimate"]


def sampled_policy_loss(
    log_probs: torch.Tensor,
    target: torch.Tensor,
    mask: torch.Tensor,
    loss_type: PolicyLossType = "cross_entropy",
) -> torch.Tensor:
    """Per-sample policy loss over the sampled actions.

    cross_entropy: −Σ_k m_k·t_k·log π(a_k) (the reference's default); kl: Σ_k m_k·t_k·
    (log t_k − log π(a_k)), which differs by the target's entropy (no gradient difference).
    The target is not renormalised over the sampled set (`normalize_prob_of_sampled_actions=
    False`, the reference's default).

    Args:
        log_probs: log π(a_k) of the network.  # [B, K]
        target: visit distribution over the K slots.  # [B, K]
        mask: 1 for slots holding a sampled action, 0 for padding.  # [B, K]
        loss_type: "cross_entropy" or "kl".

    Returns:
        [B] losses.
    """
    weight = target * mask
    if loss_type == "cross_entropy":
        return -(weight * log_probs).sum(dim=-1)
    if loss_type == "kl":
        log_target = torch.log(torch.where(weight > 0, target, torch.ones_like(target)))
        return (weight * (log_target - log_probs)).sum(dim=-1)
    raise ValueError(f"policy loss type must be 'cross_entropy' or 'kl', got {loss_type!r}")


def continuous_policy_terms(
    loss_type: PolicyLossType, entropy: EntropyKind = "gaussian"
) -> PolicyTerms:
    """Policy terms of an unroll over continuous root sampled actions (`unroll_loss`).

    Step k's loss is `sampled_policy_loss` of the tanh-corrected log-densities of the K_s root
    sampled actions `inp.sampled_actions[:, k]` [B, Ks, D] under the head's [B, 2D] output,
    against the visit distribution `inp.policy_target[:, k]` [B, Ks]. The entropy is the
    pre-tanh Gaussian's closed form (`gaussian`, the reference's) or the Monte-Carlo estimate of
    the squashed policy's over the same actions (`tanh_sample_estimate`). `unroll_loss` masks
    both by `policy_mask`.
    """
    if entropy not in ("gaussian", "tanh_sample_estimate"):
        raise ValueError(f"entropy must be 'gaussian' or 'tanh_sample_estimate', got {entropy!r}")

    def terms(params: torch.Tensor, inp: UnrollInputs, k: int):
        if inp.sampled_actions is None:
            raise ValueError("continuous policy loss: the batch carries no root sampled actions")
        mu, sigma = split_params(params.float())  # [B, D] each
        actions = inp.sampled_actions[:, k]  # [B, Ks, D]
        log_probs = tanh_log_prob(mu.unsqueeze(1), sigma.unsqueeze(1), actions)  # [B, Ks]
        target = inp.policy_target[:, k]
        loss = sampled_policy_loss(log_probs, target, torch.ones_like(target), loss_type)
        if entropy == "gaussian":
            return loss, gaussian_entropy(sigma)
        return loss, tanh_entropy_estimate(mu, sigma, actions)

    return terms
