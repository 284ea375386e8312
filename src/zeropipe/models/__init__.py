"""Neural networks of the MuZero family: encoders, dynamics, heads, supports, projection, MuZero
with a GRU latent history, EfficientZero's value-prefix network, and UniZero's transformer world
model with its packed KV-cache windows and per-env root contexts.

Runs in: any. Models know nothing of search, buffers or processes; the search and the learner see
only `initial_inference` / `recurrent_inference` (MuZeroNetwork, UniZeroNetwork), UniZero's
`sequence`, and the support helpers.
"""

from zeropipe.models.efficientzero import EfficientZeroNetwork
from zeropipe.models.history_network import HistoryLayout, HistoryNetwork
from zeropipe.models.network import MuZeroNetwork, NetworkOutput
from zeropipe.models.protocol import Network
from zeropipe.models.root_context import KvCacheClock, RootContexts, RootContextStats
from zeropipe.models.stochastic import StochasticMuZeroNetwork
from zeropipe.models.support import (
    DiscreteSupport,
    inverse_scalar_transform,
    logits_to_scalar,
    scalar_to_two_hot,
    scalar_transform,
)
from zeropipe.models.transformer import CausalTransformer, Window, WindowLayout
from zeropipe.models.world_model import SequenceOutput, UniZeroNetwork

__all__ = [
    "CausalTransformer",
    "DiscreteSupport",
    "EfficientZeroNetwork",
    "HistoryLayout",
    "HistoryNetwork",
    "KvCacheClock",
    "MuZeroNetwork",
    "Network",
    "NetworkOutput",
    "RootContextStats",
    "RootContexts",
    "SequenceOutput",
    "StochasticMuZeroNetwork",
    "UniZeroNetwork",
    "Window",
    "WindowLayout",
    "inverse_scalar_transform",
    "logits_to_scalar",
    "scalar_to_two_hot",
    "scalar_transform",
]
