"""Observation encoders (the representation function h of MuZero): a vector MLP or an image ResNet.

Runs in: any. The encoder family is a parameter (`ModelConfig.kind`), never a file name: `auto`
picks the MLP for 1-d inputs and the ResNet for 3-d ones. Each encoder exposes `latent_shape`, the
shape of one latent state without the batch axis.
"""

from __future__ import annotations

import math
from typing import Literal

from torch import Tensor, nn

from zeropipe.config import ConfigError, ModelConfig
from zeropipe.models.blocks import (
    ResBlock,
    conv3x3,
    halved,
    mlp_stack,
    norm_1d,
    norm_2d,
    res_stack,
)

EncoderKind = Literal["mlp", "conv"]

# The downsampling stem ends at this side or below (64 px -> 8, 84/96 px -> 6; MuZero app. F).
_MAX_DOWNSAMPLED_SIDE = 8


def resolve_kind(input_shape: tuple[int, ...], kind: str) -> EncoderKind:
    """The encoder family for an input shape.

    Args:
        input_shape: one stacked observation without the batch axis: (S·O,) or (S·C, H, W).
        kind: `ModelConfig.kind`: "auto", "mlp" or "conv".

    Returns:
        "mlp" or "conv".

    Raises:
        ConfigError: "conv" for a non-image input, or "auto" for an input that is neither 1-d
            nor 3-d.
    """
    if kind == "auto":
        if len(input_shape) == 1:
            return "mlp"
        if len(input_shape) == 3:
            return "conv"
        raise ConfigError(
            f"policy.model.kind=auto cannot choose an encoder for input shape {input_shape}: "
            "expected (features,) or (channels, height, width); set kind to mlp to flatten it"
        )
    if kind == "conv" and len(input_shape) != 3:
        raise ConfigError(
            f"policy.model.kind=conv needs (channels, height, width) inputs, got {input_shape}; "
            "use kind mlp or auto"
        )
    if kind not in ("mlp", "conv"):
        raise ConfigError(f"policy.model.kind={kind!r} is not one of auto, mlp, conv")
    return kind  # type: ignore[return-value]


class VectorEncoder(nn.Module):
    """MLP: num_layers × (Linear-norm-ReLU, hidden_dim) → Linear → norm → ReLU to latent_dim.

    The output norm and activation follow LightZero's `RepresentationNetworkMLP`
    (`output_norm=True, output_activation=True`). Inputs with more than one axis are flattened.
    """

    def __init__(self, input_shape: tuple[int, ...], cfg: ModelConfig) -> None:
        """Create the encoder.

        Args:
            input_shape: one observation without the batch axis.
            cfg: hidden_dim, num_layers, latent_dim and norm_type are read.
        """
        super().__init__()
        in_dim = math.prod(input_shape)
        self.body = mlp_stack(in_dim, cfg.hidden_dim, cfg.num_layers, cfg.norm_type)
        self.out = nn.Linear(cfg.hidden_dim, cfg.latent_dim)
        self.out_norm = norm_1d(cfg.latent_dim, cfg.norm_type)
        self.latent_shape: tuple[int, ...] = (cfg.latent_dim,)

    def forward(self, obs: Tensor) -> Tensor:
        """[B, *input_shape] -> latent [B, E]."""
        return self.out_norm(self.out(self.body(obs.flatten(1)))).relu_()


class DownsampleStem(nn.Module):
    """LightZero `DownSample`: 64×64 → 8×8 and 84/96 px → 6×6 with num_channels outputs.

    conv3×3 s2 (C/2) → res blocks → res block s2 (C) → res blocks → avgpool s2 → res blocks
    (→ one more avgpool s2 when the side is still above 8, i.e. for 84 and 96 px).
    """

    def __init__(self, in_channels: int, side: int, cfg: ModelConfig) -> None:
        """Create the stem.

        Args:
            in_channels: stacked input channels S·C.
            side: input height; it decides the extra pooling (as in LightZero).
            cfg: num_channels, num_res_blocks and norm_type are read.
        """
        super().__init__()
        full, n, norm = cfg.num_channels, cfg.num_res_blocks, cfg.norm_type
        half = max(full // 2, 1)
        layers: list[nn.Module] = [
            conv3x3(in_channels, half, stride=2),
            norm_2d(half, norm),
            nn.ReLU(inplace=True),
            res_stack(half, n, norm),
            ResBlock(half, full, norm, stride=2),
            res_stack(full, n, norm),
            nn.AvgPool2d(3, stride=2, padding=1),
            res_stack(full, n, norm),
        ]
        self.extra_pool = halved(halved(halved(side))) > _MAX_DOWNSAMPLED_SIDE
        if self.extra_pool:
            layers.append(nn.AvgPool2d(3, stride=2, padding=1))
        self.layers = nn.Sequential(*layers)

    def output_side(self, side: int) -> int:
        """Output height or width for an input height or width."""
        out = halved(halved(halved(side)))
        return halved(out) if self.extra_pool else out

    def forward(self, obs: Tensor) -> Tensor:
        """[B, S·C, H, W] -> [B, num_channels, h, w]."""
        return self.layers(obs)


class ImageEncoder(nn.Module):
    """LightZero `RepresentationNetwork`: a stem, then num_res_blocks residual blocks.

    The stem is `DownsampleStem` when `cfg.downsample`, else a resolution-keeping conv3×3.
    """

    def __init__(self, input_shape: tuple[int, ...], cfg: ModelConfig) -> None:
        """Create the encoder.

        Args:
            input_shape: (S·C, H, W).
            cfg: downsample, num_channels, num_res_blocks and norm_type are read.
        """
        super().__init__()
        channels, height, width = input_shape
        if cfg.downsample:
            down = DownsampleStem(channels, height, cfg)
            out_h, out_w = down.output_side(height), down.output_side(width)
            stem: nn.Module = down
        else:
            stem = nn.Sequential(
                conv3x3(channels, cfg.num_channels),
                norm_2d(cfg.num_channels, cfg.norm_type),
                nn.ReLU(inplace=True),
            )
            out_h, out_w = height, width
        self.stem = stem
        self.blocks = res_stack(cfg.num_channels, cfg.num_res_blocks, cfg.norm_type)
        self.latent_shape: tuple[int, ...] = (cfg.num_channels, out_h, out_w)

    def forward(self, obs: Tensor) -> Tensor:
        """[B, S·C, H, W] -> latent [B, num_channels, h, w]."""
        return self.blocks(self.stem(obs))


def build_encoder(input_shape: tuple[int, ...], kind: EncoderKind, cfg: ModelConfig) -> nn.Module:
    """The encoder of a resolved kind; it has a `latent_shape` attribute.

    Args:
        input_shape: one stacked observation without the batch axis.
        kind: "mlp" or "conv" (see `resolve_kind`).
        cfg: model sizes.

    Returns:
        A `VectorEncoder` or an `ImageEncoder`.
    """
    if kind == "conv":
        return ImageEncoder(input_shape, cfg)
    return VectorEncoder(input_shape, cfg)
