"""The muzero_context family: MuZero whose acting roots come from a context of recent steps.

Runs in: any (training is exactly muzero's; the roots are built in collectors and evaluators).
LightZero's `MuZeroContextModel.initial_inference`: at an episode start, and every
`context_length_init` env steps, the root latent is the encoded observation; in between it is the
dynamics' prediction from the previous root along the action actually taken (the chosen child of
the previous search — see `carried_roots` for the reference's last-leaf bug fixed here). Works for
any latent shape: the reference's hard-coded [8, C, 64, 64] observation buffer is not needed
because the carried state is the root latent itself.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

import torch
from pydantic import Field

from zeropipe.algos.carried_roots import CarriedRootOptions, CarriedRoots
from zeropipe.algos.muzero import MuZeroFamily, MuZeroFamilyConfig
from zeropipe.config import PolicyConfig
from zeropipe.models import Network, NetworkOutput


class MuZeroContextConfig(CarriedRootOptions, MuZeroFamilyConfig):
    """`policy.type: muzero_context`."""

    LIGHTZERO_MODEL_TYPE: ClassVar[str | None] = "conv_context"

    # options added later with a default that changes what a run does, and what a run's
    # config.yaml written before each existed meant (config/versions.py reads them)
    OLDER_VALUES: ClassVar[dict[str, Any]] = {
        "loss_weighting": "appendix_g",
        **PolicyConfig.OLDER_VALUES,
    }

    type: Literal["muzero_context"] = Field(
        "muzero_context", description="Policy type; see docs/policies/muzero_context.md."
    )


def context_roots(
    network: Network, obs: torch.Tensor, rows: torch.Tensor, child: NetworkOutput | None
) -> NetworkOutput:
    """A `RootCombiner`: the encoded observations, with the carried rows replaced by their
    carried child (latent, value and policy; the root reward stays the encoded roots' zero)."""
    out = network.initial_inference(obs)
    if child is None:
        return out
    return NetworkOutput(
        latent=out.latent.index_copy(0, rows, child.latent),
        value_logits=out.value_logits.index_copy(0, rows, child.value_logits),
        reward_logits=out.reward_logits,
        policy_logits=out.policy_logits.index_copy(0, rows, child.policy_logits),
    )


class MuZeroContextFamily(MuZeroFamily):
    """MuZero's network and loss; roots carried along the chosen actions."""

    def root_source(
        self, network: Network, num_envs: int, cfg: MuZeroContextConfig
    ) -> CarriedRoots:
        """Per-env context, restarted every `cfg.context_length_init` steps."""
        return CarriedRoots(network, num_envs, cfg.context_length_init, context_roots)


MUZERO_CONTEXT = MuZeroContextFamily()
