"""Output heads: categorical value and reward heads, the policy head, and the prediction function f.

Runs in: any. Every head ends in a zero-initialised Linear (LightZero
`last_linear_layer_init_zero=True`): a fresh network predicts uniform policies and a uniform
distribution over the support, i.e. value and reward 0 for a symmetric support, so early search is
not steered by random head weights.
"""

from __future__ import annotations

from torch import Tensor, nn

from zeropipe.config import ModelConfig
from zeropipe.models.blocks import NormType, norm_1d, norm_2d, res_stack
from zeropipe.models.gaussian import GaussianPolicyHead


def zero_linear(in_dim: int, out_dim: int) -> nn.Linear:
    """A Linear layer with zero weight and bias."""
    layer = nn.Linear(in_dim, out_dim)
    nn.init.zeros_(layer.weight)
    nn.init.zeros_(layer.bias)
    return layer


class VectorHead(nn.Module):
    """Linear → norm → ReLU → zero-initialised Linear (LightZero `MLP` with one hidden layer)."""

    def __init__(self, in_dim: int, hidden_dim: int, out_dim: int, norm_type: NormType) -> None:
        """Create the head.

        Args:
            in_dim: input features.
            hidden_dim: hidden width (`ModelConfig.head_hidden_dim`).
            out_dim: outputs (S for value/reward, A for the policy).
            norm_type: "BN" or "LN".
        """
        super().__init__()
        self.layers = nn.Sequential(
            nn.Linear(in_dim, hidden_dim),
            norm_1d(hidden_dim, norm_type),
            nn.ReLU(inplace=True),
            zero_linear(hidden_dim, out_dim),
        )

    def forward(self, x: Tensor) -> Tensor:
        """[B, in_dim] -> [B, out_dim]."""
        return self.layers(x)


def head_features(latent_shape: tuple[int, ...], cfg: ModelConfig) -> tuple[nn.Module, int]:
    """The features a head reads from a latent, and their width.

    Image latents (C, H, W): 1×1 conv to head_channels → norm → ReLU → flatten. Vector latents
    (E,): the latent itself.

    Args:
        latent_shape: one latent without the batch axis.
        cfg: head_channels and norm_type are read.

    Returns:
        A module mapping [B, *latent_shape] to [B, F], and F.
    """
    if len(latent_shape) != 3:
        return nn.Identity(), latent_shape[0]
    channels, height, width = latent_shape
    reduce = nn.Sequential(
        nn.Conv2d(channels, cfg.head_channels, 1),
        norm_2d(cfg.head_channels, cfg.norm_type),
        nn.ReLU(inplace=True),
        nn.Flatten(),
    )
    return reduce, cfg.head_channels * height * width


class ConvHead(nn.Module):
    """1×1 conv to head_channels → norm → ReLU → flatten → `VectorHead` (LightZero conv heads)."""

    def __init__(self, latent_shape: tuple[int, ...], out_dim: int, cfg: ModelConfig) -> None:
        """Create the head.

        Args:
            latent_shape: (C, H, W).
            out_dim: outputs (S or A).
            cfg: head_channels, head_hidden_dim and norm_type are read.
        """
        super().__init__()
        self.reduce, flat_dim = head_features(latent_shape, cfg)
        self.mlp = VectorHead(flat_dim, cfg.head_hidden_dim, out_dim, cfg.norm_type)

    def forward(self, latent: Tensor) -> Tensor:
        """[B, C, H, W] -> [B, out_dim]."""
        return self.mlp(self.reduce(latent))


def build_head(latent_shape: tuple[int, ...], out_dim: int, cfg: ModelConfig) -> nn.Module:
    """A `ConvHead` for (C, H, W) latents, a `VectorHead` for (E,) latents.

    Args:
        latent_shape: one latent without the batch axis.
        out_dim: outputs.
        cfg: model sizes.

    Returns:
        A module mapping [B, *latent_shape] to [B, out_dim].
    """
    if len(latent_shape) == 3:
        return ConvHead(latent_shape, out_dim, cfg)
    return VectorHead(latent_shape[0], cfg.head_hidden_dim, out_dim, cfg.norm_type)


def build_policy_head(
    latent_shape: tuple[int, ...], action_space_size: int, cfg: ModelConfig
) -> nn.Module:
    """The policy head: `build_head` to A logits, or with `cfg.continuous_action_space` a
    `GaussianPolicyHead` to [mu(D), sigma(D)] on vector latents (D = action_space_size)."""
    if not cfg.continuous_actions:
        return build_head(latent_shape, action_space_size, cfg)
    return GaussianPolicyHead(
        latent_shape[0],
        cfg.head_hidden_dim,
        action_space_size,
        cfg.sigma_type,
        cfg.fixed_sigma_value,
    )


class Prediction(nn.Module):
    """MuZero's prediction function f: latent → (value logits, policy logits).

    Image latents first pass num_res_blocks shared residual blocks (LightZero
    `PredictionNetwork`); vector latents go straight to the heads.
    """

    def __init__(
        self,
        latent_shape: tuple[int, ...],
        action_space_size: int,
        value_support_size: int,
        cfg: ModelConfig,
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
        self.value = build_head(latent_shape, value_support_size, cfg)
        self.policy = build_policy_head(latent_shape, action_space_size, cfg)

    def forward(self, latent: Tensor) -> tuple[Tensor, Tensor]:
        """latent [B, *latent_shape] -> (value logits [B, S_v], policy logits [B, A]; for
        continuous actions the Gaussian parameters [B, 2D], mu then sigma)."""
        features = self.trunk(latent)
        return self.value(features), self.policy(features)
