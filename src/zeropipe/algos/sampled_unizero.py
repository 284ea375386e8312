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

from typing import Literal

from pydantic import Field

from zeropipe.algos.sampled_muzero import SampledActions
from zeropipe.algos.sampled_options import SampledOptions
from zeropipe.algos.unizero import UniZeroFamily, UniZeroFamilyConfig
from zeropipe.config import ContinuousHead, UniZeroModelConfig


class SampledUniZeroModelConfig(ContinuousHead, UniZeroModelConfig):
    """UniZero's world model with the discrete or tanh-Gaussian policy head."""


class SampledUniZeroConfig(SampledOptions, UniZeroFamilyConfig):
    """`policy.type: sampled_unizero`."""

    type: Literal["sampled_unizero"] = Field(
        "sampled_unizero", description="Policy type; see DESIGN §3."
    )
    model: SampledUniZeroModelConfig = Field(
        default_factory=SampledUniZeroModelConfig, description="Network settings."
    )


class SampledUniZeroFamily(SampledActions, UniZeroFamily):
    """UniZero acting through the sampled search; for Box actions the continuous head."""


SAMPLED_UNIZERO = SampledUniZeroFamily()
