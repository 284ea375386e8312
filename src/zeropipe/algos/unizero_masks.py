"""Which unroll steps each term of the UniZero loss trains, and what each is divided by
(`policy.loss_masks`).

Runs in: driver. `StepLosses` holds every step's terms of one teacher-forced pass before any
mask; `per_term_means` (each term over its own mask) and `reference_means` (the reference's one
mask, `WorldModel.compute_loss`) reduce them to per-sample terms, which the loss then weights per
sample.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from zeropipe.algos.losses import UnrollInputs


@dataclass(frozen=True)
class StepLosses:
    """Every step's unmasked loss terms of one teacher-forced pass over o_0, a_0, …, a_{K-1}."""

    latent: torch.Tensor  # [B, K] MSE of the prediction at a_k against the target's o_{k+1}
    reward: torch.Tensor  # [B, K] CE of the reward of a_k
    value: torch.Tensor  # [B, K] CE of the value at o_k
    policy: torch.Tensor  # [B, K] policy loss at o_k, less the entropy bonus
    entropy: torch.Tensor  # [B, K] the policy's entropy at o_k
    values: torch.Tensor  # [B, K] the predicted scalar values, detached


def per_term_means(
    steps: StepLosses, inp: UnrollInputs
) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
    """`loss_masks: per_term`: each term over its own mask, divided by that mask's count per
    sample. The latent, reward and policy terms train the K steps whose action exists (the
    successor's steps padded on included); the value term every state that exists, the final
    observation of an episode included.

    Returns:
        The per-sample terms ([B] each) and the mask of the steps whose action exists [B, K].
    """
    step_mask = inp.reward_mask  # [B, K] action k exists, so o_{k+1} and r_k exist
    k = step_mask.shape[1]
    value_mask = inp.value_mask[:, :k]
    policy_mask = inp.policy_mask[:, :k]
    terms = {
        "latent_loss": per_sample_mean(steps.latent * step_mask, step_mask),
        "reward_loss": per_sample_mean(steps.reward * step_mask, step_mask),
        "value_loss": per_sample_mean(steps.value * value_mask, value_mask),
        "policy_loss": per_sample_mean(steps.policy * policy_mask, policy_mask),
        "entropy": per_sample_mean(steps.entropy * policy_mask, policy_mask),
    }
    return terms, step_mask


def reference_means(
    steps: StepLosses, inp: UnrollInputs, continuous: bool
) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
    """`loss_masks: reference` (`WorldModel.compute_loss`): one mask for every term, step k
    in the root's own segment (`mask_padding`); K − 1 latent terms, the prediction at a_k
    against o_{k+1} for k < K − 1, masked by step k+1's mask; each term's sum divided by the
    sample's count of its mask, or with continuous actions by the batch's count (as a
    per-sample share, so that the batch mean is the reference's ratio).

    Returns:
        The per-sample terms ([B] each) and the one mask [B, K].

    Raises:
        ValueError: the inputs carry no own-segment mask.
    """
    if inp.own_segment_mask is None:
        raise ValueError("loss_masks 'reference': the unroll inputs carry no own_segment_mask")
    k = steps.reward.shape[1]
    mask = inp.own_segment_mask[:, :k]  # [B, K]
    next_mask = mask[:, 1:]  # [B, K-1] o_{k+1} for k < K-1
    mean = per_batch_share if continuous else per_sample_mean
    terms = {
        "latent_loss": mean(steps.latent[:, : k - 1] * next_mask, next_mask),
        "reward_loss": mean(steps.reward * mask, mask),
        "value_loss": mean(steps.value * mask, mask),
        "policy_loss": mean(steps.policy * mask, mask),
        "entropy": mean(steps.entropy * mask, mask),
    }
    return terms, mask


def per_sample_mean(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Σ_k values / number of valid steps, per sample ([B, K] → [B]); 0 for a fully masked row."""
    return values.sum(dim=1) / mask.sum(dim=1).clamp(min=1.0)


def per_batch_share(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Σ_k values · B / the batch's number of valid steps ([B, K] → [B]): the batch mean of
    these is Σ_{b,k} values / Σ_{b,k} mask, the reference's continuous normalisation
    (model/unizero_world_models/world_model.py:2848-2853 at the pinned commit)."""
    return values.sum(dim=1) * values.shape[0] / mask.sum().clamp(min=1.0)
