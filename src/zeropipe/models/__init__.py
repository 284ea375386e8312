"""Neural networks of the MuZero family: encoders, dynamics, heads, supports, projection.

Runs in: any. Models know nothing of search, buffers or processes; the search and the learner see
only `MuZeroNetwork.initial_inference` / `recurrent_inference` and the support helpers.
"""

from zeropipe.models.network import MuZeroNetwork, NetworkOutput
from zeropipe.models.support import (
    DiscreteSupport,
    inverse_scalar_transform,
    logits_to_scalar,
    scalar_to_two_hot,
    scalar_transform,
)

__all__ = [
    "DiscreteSupport",
    "MuZeroNetwork",
    "NetworkOutput",
    "inverse_scalar_transform",
    "logits_to_scalar",
    "scalar_to_two_hot",
    "scalar_transform",
]
