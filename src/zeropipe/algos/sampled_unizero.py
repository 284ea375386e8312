"""The sampled_unizero family: UniZero's transformer world model acting through the sampled search.

Runs in: any (network building and per-env root contexts in every process; the loss in the
driver). LightZero's `sampled_unizero` (lightzero_facts §6.6): the UniZero world model and its
teacher-forced loss (`algos/unizero.py`), K sampled actions per node with the `uniform` PUCT
prior term (`mcts/sampled.py`), and for Box actions (`policy.model.continuous_action_space`) a
tanh-Gaussian policy head on the observation tokens with a linear action embedding
(`models/world_model.py`); the policy loss is then the one over the root sampled actions
(`sampled_losses.continuous_policy_terms`, CE or KL by `policy.sampled.policy_loss_type`; the
reference's default is KL). Discrete actions keep UniZero's full-A cross-entropy: the search
scatters the target onto the distinct sampled actions (see `sampled_muzero.py`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from zeropipe.algos.losses import PolicyTerms, UnrollInputs
from zeropipe.algos.sampled_losses import continuous_policy_terms
from zeropipe.algos.sampled_muzero import check_sampled_actions, continuous_unroll_inputs
from zeropipe.algos.unizero import UniZeroFamily
from zeropipe.config import PolicyConfig
from zeropipe.models import UniZeroNetwork

if TYPE_CHECKING:
    from zeropipe.algos.targets import Targets
    from zeropipe.buffer import ReplayBatch


class SampledUniZeroFamily(UniZeroFamily):
    """UniZero with the K check of sampled search and, for Box actions, the continuous head."""

    def build_network(
        self, input_shape: tuple[int, ...], num_actions: int, cfg: PolicyConfig
    ) -> UniZeroNetwork:
        """UniZero's network after `check_sampled_actions` (continuous: `num_actions` is D)."""
        check_sampled_actions(num_actions, cfg)
        return super().build_network(input_shape, num_actions, cfg)

    def unroll_inputs(
        self, batch: ReplayBatch, targets: Targets, frame_ndim: int, cfg: PolicyConfig
    ) -> UnrollInputs:
        """UniZero's inputs; continuous: float actions and the root sampled actions."""
        if not cfg.model.continuous_action_space:
            return super().unroll_inputs(batch, targets, frame_ndim, cfg)
        return continuous_unroll_inputs(batch, targets, frame_ndim, self.needs_obs_seq(cfg), cfg)

    def policy_terms(self, cfg: PolicyConfig) -> PolicyTerms | None:
        """UniZero's cross-entropy (discrete); continuous: the loss over the root samples."""
        if not cfg.model.continuous_action_space:
            return super().policy_terms(cfg)
        return continuous_policy_terms(cfg.sampled.policy_loss_type)


SAMPLED_UNIZERO = SampledUniZeroFamily()
