"""MuZero with a GRU world-model history inside the dynamics (LightZero `MuZeroRNNFullObsModel`).

Runs in: any (collector / evaluator inside MCTS and for per-env root histories; the learner over
teacher-forced unrolls). The reference (opendilab/LightZero@9f717c8,
`lzero/model/muzero_rnn_full_obs_model.py`):
- `recurrent_inference` (lines 303-338) steps `_dynamics(latent, history, action)` (lines
  358-430), which returns the next latent, the next history and the reward, all from one GRU
  step (`DynamicsNetwork.forward`, lines 614-651; see `history_dynamics.GRUDynamics`); value and
  policy come from `_prediction(latent, history)` (line 356), which reads the latent and the
  history together (`history_dynamics.HistoryPrediction`).
- `initial_inference` in training (lines 241-255) encodes the observation and predicts with a
  zero history; in acting (lines 256-297) it carries each env's history by stepping the dynamics
  from the encoded previous observation along the action taken, and clears it at an episode start
  and every `context_length_init` steps. Here that is `algos/carried_roots.py`: the carried history
  is the chosen child's, which is that same step (the child of the previous root's encoded latent).
- The search carries the history per node (LightZero's `muzero_rnn_full_obs`). Here a node's latent
  is the packed (latent, history) pair (`HistoryLayout`), so the one batched search, `NetworkSearch`
  and reanalysis see the MuZero interface unchanged and a node's history is its own path's.

Kept from ours: the encoder is `encoders.build_encoder` (vector or image), the state-action trunk
before the GRU is our MuZero dynamics g, and `state_norm` min-max normalises latents.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from zeropipe.config import HistoryModelConfig
from zeropipe.models.encoders import build_encoder, resolve_kind
from zeropipe.models.history_dynamics import GRUDynamics, HistoryPrediction
from zeropipe.models.network import NetworkOutput, min_max_normalise
from zeropipe.models.projection import Projection
from zeropipe.models.support import DiscreteSupport, logits_to_scalar, scalar_to_two_hot

# log(0) of the root's zero-reward two-hot, kept finite (as `network._LOG_ZERO`).
_LOG_ZERO = -1e4


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
    """Representation h, GRU dynamics (next latent, history, reward) and f(latent, history).

    Attributes:
        kind: the resolved encoder family, "mlp" or "conv".
        latent_shape: one latent without the batch axis.
        layout: packing of (latent, history) into a node's latent.
        value_support: atoms of the value head (S_v).
        reward_support: atoms of the reward head (S_r).
    """

    _initial_reward_logits: Tensor  # [S_r]

    def __init__(
        self,
        input_shape: tuple[int, ...],
        num_actions: int,
        cfg: HistoryModelConfig,
        *,
        with_projection: bool = True,
    ) -> None:
        """Build the network.

        Args:
            input_shape: the stacked model input without the batch axis.
            num_actions: A.
            cfg: model sizes; `cfg.rnn_hidden_size` is the GRU's H.
            with_projection: build the SSL projection (only when its loss is on).
        """
        super().__init__()
        self.state_norm = cfg.state_norm
        self.kind = resolve_kind(tuple(input_shape), cfg.kind)
        self.value_support = DiscreteSupport(*cfg.value_support_range)
        self.reward_support = DiscreteSupport(*cfg.reward_support_range)
        self.representation = build_encoder(tuple(input_shape), self.kind, cfg)
        self.latent_shape: tuple[int, ...] = self.representation.latent_shape
        self.layout = HistoryLayout(self.latent_shape, cfg.rnn_hidden_size)
        self.dynamics = GRUDynamics(self.latent_shape, num_actions, self.reward_support.size, cfg)
        self.prediction = HistoryPrediction(
            self.latent_shape, num_actions, self.value_support.size, cfg
        )
        self.projection = Projection(self.latent_shape, cfg) if with_projection else None
        zero_reward = scalar_to_two_hot(torch.zeros(()), self.reward_support)  # [S_r]
        self.register_buffer(
            "_initial_reward_logits", zero_reward.log().clamp_min(_LOG_ZERO), persistent=False
        )

    def zero_history(self, batch_size: int, like: Tensor) -> Tensor:
        """An empty history [B, H] on `like`'s device and dtype."""
        return like.new_zeros(batch_size, self.layout.history_size)

    def root(self, obs: Tensor, history: Tensor) -> NetworkOutput:
        """Root outputs of observations [B, *input] read with histories [B, H]; packed latents."""
        latent = self.encode(obs)
        value_logits, policy_logits = self.prediction(latent, history)
        reward_logits = self.zero_reward_logits(latent.shape[0])
        return NetworkOutput(
            self.layout.pack(latent, history), value_logits, reward_logits, policy_logits
        )

    def initial_inference(self, obs: Tensor) -> NetworkOutput:
        """Roots with an empty history (training, targets and reanalysis start there, as the
        reference's training-mode `initial_inference`)."""
        return self.root(obs, self.zero_history(obs.shape[0], obs.float()))

    def recurrent_inference(self, latent: Tensor, action: Tensor) -> NetworkOutput:
        """One search step from packed latents [B, E_flat + H] and int64 actions [B]: the
        predicted next latent and history, the reward of the step, f of both."""
        state, history = self.layout.unpack(latent)
        next_state, next_history, reward_logits = self.transition(state, history, action)
        value_logits, policy_logits = self.prediction(next_state, next_history)
        packed = self.layout.pack(next_state, next_history)
        return NetworkOutput(packed, value_logits, reward_logits, policy_logits)

    def transition(
        self, latent: Tensor, history: Tensor, action: Tensor
    ) -> tuple[Tensor, Tensor, Tensor]:
        """(latent [B, *latent_shape], history [B, H], action [B]) -> (predicted next latent,
        next history [B, H], reward logits [B, S_r])."""
        next_latent, next_history, reward_logits = self.dynamics(latent, history, action)
        return self._normalised(next_latent), next_history, reward_logits

    def encode(self, obs: Tensor) -> Tensor:
        """h alone: observations [B, *input] (uint8 scaled by 1/255, other integers cast) ->
        latents [B, *latent_shape]."""
        if obs.dtype == torch.uint8:
            obs = obs.float().div_(255.0)
        elif not obs.is_floating_point():
            obs = obs.float()
        return self._normalised(self.representation(obs))

    def zero_reward_logits(self, batch_size: int) -> Tensor:
        """The reward logits of a root (the two-hot of 0), a broadcast view.  # [B, S_r]"""
        return self._initial_reward_logits.expand(batch_size, -1)

    def project(self, latent: Tensor, with_grad: bool) -> Tensor:
        """SSL embedding of (unpacked) latents [B, *latent_shape]; see `MuZeroNetwork.project`.

        Raises:
            RuntimeError: the network was built with `with_projection=False`.
        """
        if self.projection is None:
            raise RuntimeError(
                "HistoryNetwork.project called on a network built with with_projection=False; "
                "build it with with_projection=True when ssl_loss_weight > 0"
            )
        return self.projection(latent, with_grad)

    def clear_caches(self) -> None:
        """Nothing is cached: histories travel with the latents."""

    def transition_reward(self, latent: Tensor, out: NetworkOutput) -> Tensor:
        """The reward head's scalar [B] of the step that gave `out` (the GRU output's)."""
        return logits_to_scalar(out.reward_logits.float(), self.reward_support)

    def _normalised(self, latent: Tensor) -> Tensor:
        return min_max_normalise(latent) if self.state_norm else latent
