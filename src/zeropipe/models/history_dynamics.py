"""muzero_rnn_full_obs's dynamics with a GRU inside, and its history-reading prediction function.

Runs in: any. The reference (LightZero, opendilab/LightZero@9f717c8,
`lzero/model/muzero_rnn_full_obs_model.py`) puts the GRU *inside* the dynamics (its
`DynamicsNetwork.forward`, lines 614-651): the state-action trunk's features are read by the GRU
along the world-model history, and both the reward (`fc_reward_head`, line 636) and the next
latent (`fc_dynamics_head` plus the input latent, lines 639-645) come from the GRU's output, so a
predicted latent depends on the whole history. Its prediction function
(`PredictionHiddenNetwork`, `lzero/model/common.py` lines 1298-1438 at 8ec0169, removed from
common.py at HEAD though the model still imports it) concatenates each head's flattened latent
features with the history before the value and policy MLPs (lines 1433-1437 there).

The state-action trunk is our MuZero dynamics g (`dynamics.py`: latent ⊕ one-hot action,
transform, norm, plus the latent, ReLU; for images the reference uses a 1×1 conv where g uses a
3×3 one). Vector latents have no reward-head channels, so the GRU reads a Linear of the latent's
width where the reference reads `reward_head_channels·H·W` features (line 550).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from zeropipe.config import HistoryModelConfig
from zeropipe.models.blocks import norm_1d, res_stack
from zeropipe.models.dynamics import build_dynamics
from zeropipe.models.heads import VectorHead, head_features


class GRUDynamics(nn.Module):
    """(latent, history, action) -> (next latent, next history, reward logits).

    trunk = g(latent, action); x = ReLU(Linear(flatten(trunk))); h' = GRU(x, h);
    reward = MLP(h') (zero-initialised last layer); next latent = latent + MLP(h') where the
    latent MLP is Linear → norm → ReLU → Linear → norm → ReLU (the reference's
    `fc_dynamics_head` with `output_norm` and `output_activation`, lines 574-584, not zero
    initialised) and the residual is the reference's `res_connection_in_dynamics=True`.
    """

    def __init__(
        self,
        latent_shape: tuple[int, ...],
        action_space_size: int,
        reward_support_size: int,
        cfg: HistoryModelConfig,
    ) -> None:
        """Create the dynamics.

        Args:
            latent_shape: one latent without the batch axis, (E,) or (C, H, W).
            action_space_size: A.
            reward_support_size: S_r.
            cfg: model sizes; `rnn_hidden_size` is the GRU's H.
        """
        super().__init__()
        flat = math.prod(latent_shape)
        hidden = cfg.rnn_hidden_size
        gru_in = cfg.head_channels * math.prod(latent_shape[1:]) if len(latent_shape) == 3 else flat
        self.trunk = build_dynamics(latent_shape, action_space_size, cfg)
        self.to_gru = nn.Sequential(nn.Linear(flat, gru_in, bias=False), nn.ReLU(inplace=True))
        self.gru = nn.GRUCell(gru_in, hidden)
        self.reward = VectorHead(hidden, cfg.head_hidden_dim, reward_support_size, cfg.norm_type)
        self.latent_out = nn.Sequential(
            nn.Linear(hidden, hidden),
            norm_1d(hidden, cfg.norm_type),
            nn.ReLU(inplace=True),
            nn.Linear(hidden, flat),
            norm_1d(flat, cfg.norm_type),
            nn.ReLU(inplace=True),
        )

    def forward(self, latent: Tensor, history: Tensor, action: Tensor) -> tuple[Tensor, ...]:
        """latent [B, *latent_shape], history [B, H], action [B] int64 ->
        (next latent [B, *latent_shape], next history [B, H], reward logits [B, S_r])."""
        x = self.to_gru(self.trunk(latent, action).flatten(1))  # [B, gru_in]
        next_history = self.gru(x, history)  # [B, H]: one GRU step's output is its new state
        next_latent = self.latent_out(next_history).view_as(latent) + latent
        return next_latent, next_history, self.reward(next_history)


class HistoryPrediction(nn.Module):
    """f(latent, history) -> (value logits, policy logits): each head reads its own features of
    the latent concatenated with the history (the reference's `PredictionHiddenNetwork`)."""

    def __init__(
        self,
        latent_shape: tuple[int, ...],
        action_space_size: int,
        value_support_size: int,
        cfg: HistoryModelConfig,
    ) -> None:
        """Create f.

        Args:
            latent_shape: one latent without the batch axis.
            action_space_size: A.
            value_support_size: S_v.
            cfg: model sizes.
        """
        super().__init__()
        self.trunk: nn.Module = nn.Identity()
        if len(latent_shape) == 3:
            self.trunk = res_stack(latent_shape[0], cfg.num_res_blocks, cfg.norm_type)
        self.value_features, width = head_features(latent_shape, cfg)
        self.policy_features, _ = head_features(latent_shape, cfg)
        read = width + cfg.rnn_hidden_size
        self.value = VectorHead(read, cfg.head_hidden_dim, value_support_size, cfg.norm_type)
        self.policy = VectorHead(read, cfg.head_hidden_dim, action_space_size, cfg.norm_type)

    def forward(self, latent: Tensor, history: Tensor) -> tuple[Tensor, Tensor]:
        """latent [B, *latent_shape], history [B, H] -> (value logits [B, S_v], policy logits
        [B, A])."""
        features = self.trunk(latent)
        value_in = torch.cat((self.value_features(features), history), dim=1)
        policy_in = torch.cat((self.policy_features(features), history), dim=1)
        return self.value(value_in), self.policy(policy_in)
