"""The sampled_unizero family: UniZero's transformer world model acting through the sampled search.

Runs in: any (network building and per-env root contexts in every process; the loss in the driver).
LightZero's `sampled_unizero` (`SampledUniZeroGameBuffer`, `SampledUniZeroMCTSCtree`): the UniZero
world model and its teacher-forced loss (`algos/unizero.py`), K sampled actions per node with the
`uniform` PUCT prior term (`mcts/sampled.py`), and for Box actions
(`policy.model.continuous_action_space`) a tanh-Gaussian policy head on the observation tokens with
a linear action embedding (`models/world_model.py`); the policy loss is then the one over the root
sampled actions (`sampled_losses.continuous_policy_terms`, CE or KL by
`policy.sampled.policy_loss_type`; the reference's default is KL). Discrete actions keep UniZero's
full-A cross-entropy: the search scatters the target onto the distinct sampled actions (see
`sampled_muzero.py`).
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field, model_validator

from zeropipe.algos.sampled_muzero import SampledActions
from zeropipe.algos.sampled_options import SampledOptions
from zeropipe.algos.unizero import UniZeroFamily, UniZeroFamilyConfig
from zeropipe.config import ContinuousHead, PolicyConfig, UniZeroModelConfig, WorldModelConfig

# The reference's loss weights for continuous actions ("like TD-MPC2 for DMC"):
# model/unizero_world_models/utils.py:291-297 (latent 10, value 0.1, reward 0.1, policy 0.1).
CONTINUOUS_LOSS_WEIGHTS = {
    "latent_loss_weight": 10.0,
    "value_loss_weight": 0.1,
    "reward_loss_weight": 0.1,
    "policy_loss_weight": 0.1,
}


class SampledUniZeroModelConfig(ContinuousHead, UniZeroModelConfig):
    """UniZero's world model with the discrete or tanh-Gaussian policy head.

    With `continuous_action_space` the world model's loss weights that the config does not set
    are the reference's continuous ones (`CONTINUOUS_LOSS_WEIGHTS`); with discrete actions they
    stay UniZero's (10, 0.5, 1, 1), as the reference picks its weights by the action space.
    """

    world_model: WorldModelConfig = Field(
        default_factory=WorldModelConfig,
        description="UniZero transformer settings; with continuous_action_space the loss "
        "weights not given are the reference's continuous ones: latent 10, value 0.1, reward "
        "0.1, policy 0.1 (model/unizero_world_models/utils.py:291-297).",
    )

    @model_validator(mode="after")
    def _continuous_loss_weights(self):
        if self.continuous_action_space:
            given = self.world_model.model_fields_set
            for name, weight in CONTINUOUS_LOSS_WEIGHTS.items():
                if name not in given:
                    setattr(self.world_model, name, weight)
        return self


class SampledUniZeroConfig(SampledOptions, UniZeroFamilyConfig):
    """`policy.type: sampled_unizero`."""

    # options added later with a default that changes what a run does, and what a run's
    # config.yaml written before each existed meant (config/versions.py reads them)
    OLDER_VALUES: ClassVar[dict[str, Any]] = {
        "sampled.continuous_entropy": "tanh_sample_estimate",
        **PolicyConfig.OLDER_VALUES,
        "bootstrap_values": "per_observation",
        "priority_td": "root",
    }

    type: Literal["sampled_unizero"] = Field(
        "sampled_unizero", description="Policy type; see docs/policies/sampled_unizero.md."
    )
    model: SampledUniZeroModelConfig = Field(
        default_factory=SampledUniZeroModelConfig, description="Network settings."
    )


class SampledUniZeroFamily(SampledActions, UniZeroFamily):
    """UniZero acting through the sampled search; for Box actions the continuous head."""


SAMPLED_UNIZERO = SampledUniZeroFamily()
