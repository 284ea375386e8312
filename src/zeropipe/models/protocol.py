"""The network protocol that search, acting, targets and the learner program against.

Runs in: any. Every family's network (MuZeroNetwork, UniZeroNetwork, and the later variants)
satisfies it, so callers are annotated with `Network` rather than one concrete class. A family's
extra entry points (UniZero's `sequence`, the SSL `project`) are reached only through that
family's own loss in `algos/`.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from torch import Tensor

from zeropipe.models.network import NetworkOutput
from zeropipe.models.support import DiscreteSupport


@runtime_checkable
class Network(Protocol):
    """What the one batched search and its callers need from a model.

    Attributes:
        value_support: atoms of the categorical value head (S_v).
        reward_support: atoms of the categorical reward head (S_r).
    """

    value_support: DiscreteSupport
    reward_support: DiscreteSupport

    def initial_inference(self, obs: Tensor) -> NetworkOutput:
        """Root outputs from stacked observations [B, *input] (a family may keep context)."""
        ...

    def recurrent_inference(self, latent: Tensor, action: Tensor) -> NetworkOutput:
        """One model step from latents [B, ...] and int64 actions [B]."""
        ...

    def transition_reward(self, latent: Tensor, out: NetworkOutput) -> Tensor:
        """Scalar reward [B] the search backs up for the step from `latent` that gave `out`.

        MuZero reads the reward head; EfficientZero differences the value prefixes of parent and
        child (the search state carries both), so the search never knows which it is.
        """
        ...

    def clear_caches(self) -> None:
        """Forget anything computed with the current weights (called after a weight change)."""
        ...
