"""The sampled types' options (sampled_muzero, sampled_efficientzero, sampled_unizero): the
sampled search's settings and its checks, as a mixin of a type's section.

Runs in: any.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field, model_validator

from zeropipe.algos.search_settings import search_config
from zeropipe.config import Section
from zeropipe.mcts import SearchConfig


class SampledConfig(Section):
    """Sampled search (the sampled types; Hubert et al. 2021, "Learning and planning in complex
    action spaces")."""

    num_of_sampled_actions: int = Field(
        6, ge=1, description="K: actions sampled at every expanded node (discrete: K <= actions)."
    )
    prior: Literal["density", "uniform"] = Field(
        "uniform",
        description="PUCT prior term of a sampled child: uniform (1 / #children; the "
        "reference's sampled_muzero and sampled_unizero) or density (prior / sum of the sampled "
        "children's priors; the reference's intent for sampled_efficientzero, its default "
        "here).",
    )
    policy_loss_type: Literal["cross_entropy", "kl"] = Field(
        "cross_entropy",
        description="Continuous actions: the policy loss over the root sampled actions, "
        "cross-entropy (the reference's default) or KL (same gradient).",
    )
    continuous_entropy: Literal["gaussian", "tanh_sample_estimate"] = Field(
        "gaussian",
        description="Continuous actions: the policy entropy of the entropy bonus. gaussian: the "
        "closed form of the pre-tanh Gaussian, Σ_d [½·log(2πe) + log σ_d] (the reference's, "
        "policy/sampled_efficientzero.py:615-638, world_model.py:3070-3075); "
        "tanh_sample_estimate: −mean_k log π(a_k) of the tanh-squashed policy over the root "
        "sampled actions (ours before; the entropy of the policy that acts, which has no closed "
        "form; not measured against gaussian). Discrete actions: the exact entropy either way.",
    )


class SampledOptions(Section):
    """A mixin of a sampled type's section, before its family's section in the bases."""

    REFERENCE_ADAMW: ClassVar[str | None] = "by_dimension"  # docs/parity.md S14

    sampled: SampledConfig = Field(
        default_factory=SampledConfig, description="Sampled search settings."
    )

    @model_validator(mode="after")
    def _discrete_held_actions(self):
        if self.eps.hold_steps > 1 and self.model.continuous_actions:  # type: ignore[attr-defined]
            raise ValueError(
                "eps.hold_steps > 1 holds discrete random actions; set it to 1 for a "
                "continuous action space"
            )
        return self

    def search_config(self, num_simulations: int) -> SearchConfig:
        """PUCT's common settings and the sampled search's."""
        s = self.sampled
        return search_config(
            self,  # type: ignore[arg-type]
            num_simulations,
            num_sampled_actions=s.num_of_sampled_actions,
            sampled_prior=s.prior,
            continuous_actions=self.model.continuous_actions,  # type: ignore[attr-defined]
        )
