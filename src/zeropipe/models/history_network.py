"""MuZero with a GRU latent history (LightZero `MuZeroRNNFullobsModel`, lightzero_facts §1.2.3).

Runs in: any (collector / evaluator inside MCTS and for per-env root histories; the learner over
teacher-forced unrolls). The MuZero network's h, g, f and reward head are reused as they are; a
GRU cell carries a history vector along every transition, and the heads read the latent plus a
learned read-out of the history (`fused`). The search sees the MuZero interface: the "latent" of a
node is the packed (latent, history) pair (`HistoryLayout`), so the one batched search,
`NetworkSearch` and reanalysis work unchanged, and a node's history is its own path's.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from zeropipe.config import ModelConfig
from zeropipe.models.network import MuZeroNetwork, NetworkOutput


class HistoryLayout:
    """How a (latent, history) pair is packed into the one tensor a search node stores.

    Args:
        latent_shape: one latent without the batch axis, (E,) or (C, H, W).
        history_size: H, the GRU hidden size.
    """

    def __init__(self, latent_shape: tuple[int, ...], history_size: int) -> None:
        self.latent_shape = tuple(latent_shape)
        self.latent_size = math.prod(latent_shape)
        self.history_size = history_size

    def pack(self, latent: Tensor, history: Tensor) -> Tensor:
        """latent [B, *latent_shape], history [B, H] -> packed [B, E_flat + H]."""
        return torch.cat((latent.flatten(1), history), dim=1)

    def unpack(self, packed: Tensor) -> tuple[Tensor, Tensor]:
        """packed [B, E_flat + H] -> (latent [B, *latent_shape], history [B, H])."""
        latent, history = packed.split((self.latent_size, self.history_size), dim=1)
        return latent.reshape(-1, *self.latent_shape), history


class HistoryNetwork(nn.Module):
    """MuZero's h, g, f and reward head with a GRU history over the transitions.

    A transition is g's next latent and h' = GRU(ReLU(W·flatten(next latent)), h); the reward,
    value and policy heads read `fused(latent, h)` = latent + V·h (V bias-free and zero at
    initialisation, so a fresh network and a zero history behave exactly as plain MuZero).

    Attributes:
        core: the MuZero network whose parts are reused.
        layout: packing of (latent, history) into a node's latent.
        value_support: atoms of the value head (S_v).
        reward_support: atoms of the reward head (S_r).
    """

    def __init__(
        self, input_shape: tuple[int, ...], num_actions: int, cfg: ModelConfig, **core: bool
    ) -> None:
        """Build the network: arguments as `MuZeroNetwork`'s (`core` is its `with_projection`);
        `cfg.rnn_hidden_size` is H."""
        super().__init__()
        self.core = MuZeroNetwork(input_shape, num_actions, cfg, **core)
        self.value_support = self.core.value_support
        self.reward_support = self.core.reward_support
        self.layout = HistoryLayout(self.core.latent_shape, cfg.rnn_hidden_size)
        flat, hidden = self.layout.latent_size, cfg.rnn_hidden_size
        self.history_in = nn.Sequential(nn.Linear(flat, hidden), nn.ReLU(inplace=True))
        self.history_cell = nn.GRUCell(hidden, hidden)
        self.history_out = nn.Linear(hidden, flat, bias=False)
        nn.init.zeros_(self.history_out.weight)

    def zero_history(self, batch_size: int, like: Tensor) -> Tensor:
        """An empty history [B, H] on `like`'s device and dtype."""
        return like.new_zeros(batch_size, self.layout.history_size)

    def root(self, obs: Tensor, history: Tensor) -> NetworkOutput:
        """Root outputs of observations [B, *input] read with histories [B, H]; packed latents."""
        latent = self.core.encode(obs)
        value_logits, policy_logits = self.core.prediction(self.fused(latent, history))
        reward_logits = self.core.zero_reward_logits(latent.shape[0])
        return NetworkOutput(
            self.layout.pack(latent, history), value_logits, reward_logits, policy_logits
        )

    def initial_inference(self, obs: Tensor) -> NetworkOutput:
        """Roots with an empty history (training, targets and reanalysis start there)."""
        return self.root(obs, self.zero_history(obs.shape[0], obs.float()))

    def recurrent_inference(self, latent: Tensor, action: Tensor) -> NetworkOutput:
        """One search step from packed latents [B, E_flat + H] and int64 actions [B]."""
        state, history = self.layout.unpack(latent)
        next_state, next_history = self.transition(state, history, action)
        fused = self.fused(next_state, next_history)
        value_logits, policy_logits = self.core.prediction(fused)
        return NetworkOutput(
            self.layout.pack(next_state, next_history),
            value_logits,
            self.core.reward_head(fused),
            policy_logits,
        )

    def transition(self, latent: Tensor, history: Tensor, action: Tensor) -> tuple[Tensor, Tensor]:
        """(latent [B, *latent_shape], history [B, H], action [B]) -> (predicted next latent,
        next history)."""
        next_latent = self.core.next_latent(latent, action)
        next_history = self.history_cell(self.history_in(next_latent.flatten(1)), history)
        return next_latent, next_history

    def fused(self, latent: Tensor, history: Tensor) -> Tensor:
        """What the heads read: latent [B, *latent_shape] + read-out of history [B, H]."""
        return latent + self.history_out(history).view_as(latent)

    def encode(self, obs: Tensor) -> Tensor:
        """h alone: observations [B, *input] -> latents [B, *latent_shape]."""
        return self.core.encode(obs)

    def project(self, latent: Tensor, with_grad: bool) -> Tensor:
        """SSL embedding of (unpacked) latents [B, *latent_shape]; see `MuZeroNetwork.project`."""
        return self.core.project(latent, with_grad)

    def clear_caches(self) -> None:
        """Nothing is cached: histories travel with the latents."""

    def transition_reward(self, latent: Tensor, out: NetworkOutput) -> Tensor:
        """The reward head's scalar: a history adds nothing to a step's reward (see
        `MuZeroNetwork.transition_reward`)."""
        return self.core.transition_reward(latent, out)
