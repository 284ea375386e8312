"""Latent dynamics (MuZero's g without the reward head): next latent from latent and action.

Runs in: any. Both variants encode a discrete action as one-hot (planes for images, LightZero
`discrete_action_encoding_type='one_hot'`); with `continuous=True` the vector variant reads a
continuous action [B, D] as it is (the vector concatenated in place of the one-hot). The conv
variant always adds the input latent back before the final ReLU (as LightZero's conv dynamics,
`lzero/model/muzero_model.py` L522-524), so at initialisation g is close to a copy of the state and
the unrolled latents do not drift away from the encoder's distribution; the vector variant does so
with `policy.model.dynamics_residual` (LightZero `res_connection_in_dynamics`, True in its MuZero,
EfficientZero, Gumbel and sampled policies' defaults, False for stochastic_muzero). Without it the
vector variant is LightZero's non-residual MLP dynamics: Linear layers, the output normalised and
ReLU'd; the parameters are the same with and without it, only the addition differs.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from zeropipe.config import ConfigError, ModelConfig, ProjectionModelConfig
from zeropipe.models.blocks import conv3x3, mlp_stack, norm_1d, norm_2d, res_stack


def one_hot_actions(action: Tensor, action_space_size: int, dtype: torch.dtype) -> Tensor:
    """One-hot action codes built with scatter (no host sync on accelerators, unlike F.one_hot).

    Args:
        action: action indices, int64.  # [B]
        action_space_size: A.
        dtype: dtype of the result (the latent's).

    Returns:
        One-hot rows.  # [B, A]
    """
    index = action.reshape(-1, 1).long()  # [B, 1]
    codes = torch.zeros(index.shape[0], action_space_size, dtype=dtype, device=action.device)
    return codes.scatter_(1, index, 1.0)


def action_codes(action: Tensor, size: int, dtype: torch.dtype) -> Tensor:
    """The dynamics' action input: one-hot rows [B, A] of int64 indices [B], or float codes used
    as given, reshaped to [B, size] (continuous actions [B, D]; Stochastic MuZero's
    straight-through chance code [B, C], which carries gradients to its encoder)."""
    if action.is_floating_point():
        return action.reshape(action.shape[0], size).to(dtype)
    return one_hot_actions(action, size, dtype)


class VectorDynamics(nn.Module):
    """MLP on concat(latent, action code) → Linear → norm, plus the latent (with `residual`), then
    ReLU."""

    def __init__(
        self,
        latent_dim: int,
        action_space_size: int,
        cfg: ModelConfig,
        continuous: bool = False,
        residual: bool = True,
    ) -> None:
        """Create the dynamics.

        Args:
            latent_dim: E.
            action_space_size: A (one-hot width), or D for continuous actions.
            cfg: hidden_dim, num_layers and norm_type are read.
            continuous: actions are float vectors [B, D] instead of indices [B].
            residual: add the input latent before the final ReLU.
        """
        super().__init__()
        self.action_space_size = action_space_size
        self.continuous = continuous
        self.residual = residual
        self.body = mlp_stack(
            latent_dim + action_space_size, cfg.hidden_dim, cfg.num_layers, cfg.norm_type
        )
        self.out = nn.Linear(cfg.hidden_dim, latent_dim)
        self.out_norm = norm_1d(latent_dim, cfg.norm_type)

    def forward(self, latent: Tensor, action: Tensor) -> Tensor:
        """latent [B, E], action [B] int64 (or float [B, D] / codes [B, A]) -> latent [B, E]."""
        codes = action_codes(action, self.action_space_size, latent.dtype)  # [B, A]
        x = self.out_norm(self.out(self.body(torch.cat((latent, codes), dim=1))))
        return (x + latent).relu_() if self.residual else x.relu_()


class ConvDynamics(nn.Module):
    """LightZero `DynamicsNetwork` without its reward head.

    conv3×3 on latent ⊕ A one-hot action planes → norm, plus the latent, ReLU, then num_res_blocks
    residual blocks.
    """

    def __init__(self, channels: int, action_space_size: int, cfg: ModelConfig) -> None:
        """Create the dynamics.

        Args:
            channels: latent channels C.
            action_space_size: A, the number of action planes.
            cfg: num_res_blocks and norm_type are read.
        """
        super().__init__()
        self.action_space_size = action_space_size
        self.conv = conv3x3(channels + action_space_size, channels)
        self.norm = norm_2d(channels, cfg.norm_type)
        self.blocks = res_stack(channels, cfg.num_res_blocks, cfg.norm_type)

    def forward(self, latent: Tensor, action: Tensor) -> Tensor:
        """latent [B, C, H, W], action [B] (or float codes [B, A]) -> next latent [B, C, H, W]."""
        batch, _, height, width = latent.shape
        codes = action_codes(action, self.action_space_size, latent.dtype)  # [B, A]
        planes = codes[:, :, None, None].expand(batch, self.action_space_size, height, width)
        x = self.norm(self.conv(torch.cat((latent, planes), dim=1)))  # [B, C, H, W]
        return self.blocks((x + latent).relu_())


def build_dynamics(
    latent_shape: tuple[int, ...], action_space_size: int, cfg: ProjectionModelConfig
) -> nn.Module:
    """The dynamics matching a latent shape: `ConvDynamics` for (C, H, W), else `VectorDynamics`.

    Args:
        latent_shape: one latent without the batch axis.
        action_space_size: A, or D with `cfg.continuous_action_space`.
        cfg: model sizes (`continuous_action_space` selects the continuous action input,
            `dynamics_residual` the vector variant's residual).

    Returns:
        A module called as `dynamics(latent, action) -> next_latent`.

    Raises:
        ConfigError: continuous actions with an image latent (not supported).
    """
    if len(latent_shape) == 3:
        if cfg.continuous_actions:
            raise ConfigError(
                "policy.model.continuous_action_space needs vector observations (the conv "
                "dynamics reads one-hot action planes only)"
            )
        return ConvDynamics(latent_shape[0], action_space_size, cfg)
    return VectorDynamics(
        latent_shape[0], action_space_size, cfg, cfg.continuous_actions, cfg.dynamics_residual
    )
