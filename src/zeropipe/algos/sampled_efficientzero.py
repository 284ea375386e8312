"""The sampled_efficientzero family: EfficientZero's value-prefix model acting through the sampled
search.

Runs in: any (network building and acting state in every process; the loss in the driver).
Sampled EfficientZero (Hubert et al. 2021 on top of Ye et al. 2021; LightZero
`sampled_efficientzero`) is sampled_muzero with EfficientZero's network and reward term: the
value-prefix LSTM (`models/efficientzero.py`), value-prefix targets and the SSL consistency term
come from the efficientzero family; the K-sampled-action search, the discrete K <= A check and the
continuous tanh-Gaussian head, its unroll inputs (the root sampled actions) and its policy loss
over the sampled actions come from the sampled_muzero family. Nothing is redefined here: the
class composes the two (method resolution: sampled_muzero's checks and policy terms, then
efficientzero's network and value-prefix loss, then MuZero's).
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field

from zeropipe.algos.efficientzero import EfficientZeroFamily, EfficientZeroFamilyConfig
from zeropipe.algos.sampled_muzero import SampledMuZeroFamily, SampledMuZeroModelConfig
from zeropipe.algos.sampled_options import SampledConfig, SampledOptions
from zeropipe.config import PolicyConfig


class DensitySampledConfig(SampledConfig):
    """The sampled search with the `density` prior term: the reference's intent for
    sampled_efficientzero (its ctree's `.compare("density")` test is inverted, so it runs
    `uniform`; see mcts/sampled.py)."""

    prior: Literal["density", "uniform"] = Field(
        "density", description=SampledConfig.model_fields["prior"].description
    )


class SampledEfficientZeroConfig(SampledOptions, EfficientZeroFamilyConfig):
    """`policy.type: sampled_efficientzero`; keeps the entropy term (the reference does)."""

    # options added later with a default that changes what a run does, and what a run's
    # config.yaml written before each existed meant (config/versions.py reads them)
    OLDER_VALUES: ClassVar[dict[str, Any]] = {
        "loss_weighting": "appendix_g",
        "sampled.continuous_entropy": "tanh_sample_estimate",
        **PolicyConfig.OLDER_VALUES,
    }

    type: Literal["sampled_efficientzero"] = Field(
        "sampled_efficientzero",
        description="Policy type; see docs/policies/sampled_efficientzero.md.",
    )
    model: SampledMuZeroModelConfig = Field(
        default_factory=SampledMuZeroModelConfig, description="Network settings."
    )
    sampled: DensitySampledConfig = Field(
        default_factory=DensitySampledConfig, description="Sampled search settings."
    )


class SampledEfficientZeroFamily(SampledMuZeroFamily, EfficientZeroFamily):
    """`EfficientZeroNetwork` (its policy head Gaussian with `continuous_action_space`) and the
    value-prefix unroll loss, with sampled_muzero's K check, unroll inputs and policy terms."""


SAMPLED_EFFICIENTZERO = SampledEfficientZeroFamily()
