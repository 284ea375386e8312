"""The sampled_muzero family: MuZero's network and loss, acting through the sampled search.

Runs in: any. Sampled MuZero (Hubert et al. 2021) changes the search (K sampled actions per
node, `mcts/sampled.py`) and the policy target (the visit distribution over the K root sampled
actions). For discrete actions the search returns that target scattered onto the sampled
actions, which are distinct, so MuZero's cross-entropy −Σ_a target(a)·log π(a) equals the
reference's −Σ_k target_k·log π(a_k) over the sampled actions (`normalize_prob_of_sampled_actions
=False`, its default) and the family reuses MuZero's unroll loss unchanged. For continuous
actions (`policy.model.continuous_action_space`) the target stays over the K root slots and
the batch carries their actions; the policy term is `sampled_losses.continuous_policy_terms`.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import numpy as np
import torch
from pydantic import Field

from zeropipe.algos.losses import PolicyTerms, UnrollInputs
from zeropipe.algos.muzero import MuZeroFamily, MuZeroFamilyConfig
from zeropipe.algos.observation import to_tensor
from zeropipe.algos.sampled_losses import continuous_policy_terms
from zeropipe.algos.sampled_options import SampledOptions
from zeropipe.algos.unroll_inputs import unroll_inputs
from zeropipe.config import ConfigError, ContinuousHead, PolicyConfig, ProjectionModelConfig

if TYPE_CHECKING:
    from zeropipe.algos.targets import Targets
    from zeropipe.buffer import ReplayBatch


class SampledMuZeroModelConfig(ContinuousHead, ProjectionModelConfig):
    """MuZero's network with the discrete or tanh-Gaussian policy head."""


class SampledMuZeroConfig(SampledOptions, MuZeroFamilyConfig):
    """`policy.type: sampled_muzero`."""

    # options added later with a default that changes what a run does, and what a run's
    # config.yaml written before each existed meant (config/versions.py reads them)
    OLDER_VALUES: ClassVar[dict[str, Any]] = {
        "loss_weighting": "appendix_g",
        "sampled.continuous_entropy": "tanh_sample_estimate",
        **PolicyConfig.OLDER_VALUES,
    }

    type: Literal["sampled_muzero"] = Field(
        "sampled_muzero", description="Policy type; see docs/policies/sampled_muzero.md."
    )
    model: SampledMuZeroModelConfig = Field(
        default_factory=SampledMuZeroModelConfig, description="Network settings."
    )


def check_sampled_actions(num_actions: int, cfg: PolicyConfig) -> None:
    """K sampled actions must fit a discrete action set (sampling is without replacement).

    Raises:
        ConfigError: more sampled actions than the env has discrete actions.
    """
    k = cfg.sampled.num_of_sampled_actions
    if not cfg.model.continuous_actions and k > num_actions:
        raise ConfigError(
            f"policy.sampled.num_of_sampled_actions={k} exceeds the env's {num_actions} "
            "discrete actions (sampling is without replacement); set it to at most "
            f"{num_actions}"
        )


def continuous_unroll_inputs(
    batch: ReplayBatch, targets: Targets, frame_ndim: int, needs_obs_seq: bool, cfg: PolicyConfig
) -> UnrollInputs:
    """The loss's inputs for continuous actions: float32 [B, K, D] actions and the
    [B, K+1, Ks, D] root sampled actions the policy targets belong to (re-sampled where
    reanalysed); the absorbing states with a MuZero-family `policy.absorbing_terminal`.

    Raises:
        ValueError: the targets carry no root sampled actions.
    """
    if targets.sampled_actions is None:
        raise ValueError("sampled search (continuous): the batch has no root sampled actions")
    # the MuZero family's absorbing states (sampled_unizero masks them, as its reference)
    absorbing = isinstance(cfg, MuZeroFamilyConfig) and cfg.absorbing_terminal
    inputs = unroll_inputs(
        batch, targets, frame_ndim, needs_obs_seq, cfg.device, np.float32, absorbing=absorbing
    )
    sampled = to_tensor(targets.sampled_actions.astype(np.float32), cfg.device)
    return replace(inputs, sampled_actions=sampled)


class SampledActions:
    """What sampled search changes in any family, as a mixin before it (cooperative `super()`):
    a check that K sampled actions fit a discrete action set, and with
    `policy.model.continuous_action_space` a tanh-Gaussian policy over D-dimensional actions
    (float actions and the root sampled actions in the loss's inputs, the loss over them)."""

    def build_network(
        self, input_shape: tuple[int, ...], num_actions: int, cfg: PolicyConfig
    ) -> torch.nn.Module:
        """The next family's network after `check_sampled_actions` (continuous: `num_actions`
        is D)."""
        check_sampled_actions(num_actions, cfg)
        return super().build_network(input_shape, num_actions, cfg)  # type: ignore[misc]

    def unroll_inputs(
        self, batch: ReplayBatch, targets: Targets, frame_ndim: int, cfg: PolicyConfig
    ) -> UnrollInputs:
        """The next family's inputs; continuous: `continuous_unroll_inputs`."""
        if not cfg.model.continuous_actions:
            return super().unroll_inputs(batch, targets, frame_ndim, cfg)  # type: ignore[misc]
        needs_obs_seq = self.needs_obs_seq(cfg)  # type: ignore[attr-defined]
        return continuous_unroll_inputs(batch, targets, frame_ndim, needs_obs_seq, cfg)

    def policy_terms(self, cfg: PolicyConfig) -> PolicyTerms | None:
        """The next family's policy terms (discrete); continuous: the policy loss over the root
        sampled actions (`sampled_losses.continuous_policy_terms`)."""
        if not cfg.model.continuous_actions:
            return super().policy_terms(cfg)  # type: ignore[misc]
        return continuous_policy_terms(cfg.sampled.policy_loss_type, cfg.sampled.continuous_entropy)


class SampledMuZeroFamily(SampledActions, MuZeroFamily):
    """MuZero acting through the sampled search (discrete or continuous actions)."""


SAMPLED_MUZERO = SampledMuZeroFamily()
