"""Building blocks shared by encoders, dynamics and heads: norms, residual blocks, MLP stacks.

Runs in: any. The residual blocks follow LightZero's `ResBlock` (`lzero/model/common.py`), which is
the pre-activation-free "basic" block of He et al. 2016: conv-norm-relu-conv-norm, add, relu.
"""

from __future__ import annotations

from typing import Literal

from torch import Tensor, nn

NormType = Literal["BN", "LN"]
TokenNorm = Literal["LayerNorm", "SimNorm"]


def has_batch_norm(module: nn.Module) -> bool:
    """Whether any layer of `module` keeps running statistics (BatchNorm1d/2d)."""
    return any(isinstance(m, nn.modules.batchnorm._BatchNorm) for m in module.modules())


def norm_1d(dim: int, norm_type: NormType) -> nn.Module:
    """BatchNorm1d or LayerNorm over a feature vector.

    Args:
        dim: feature size.
        norm_type: "BN" or "LN".

    Returns:
        The norm layer, acting on [B, dim].
    """
    return nn.BatchNorm1d(dim) if norm_type == "BN" else nn.LayerNorm(dim)


class SimNorm(nn.Module):
    """Simplicial normalisation (Lavoie et al. 2022, "Simplicial Embeddings", §3): the features
    split into consecutive groups of `group_size`, each replaced by its softmax, so every group
    is a point on a simplex. No parameters. The reference's `SimNorm` (model/common.py:146-177)."""

    def __init__(self, group_size: int) -> None:
        """Args: group_size: features per simplex; must divide the feature size."""
        super().__init__()
        self.group_size = group_size

    def forward(self, x: Tensor) -> Tensor:
        """[..., E] -> [..., E], each group of `group_size` features summing to 1."""
        return x.unflatten(-1, (-1, self.group_size)).softmax(-1).flatten(-2)


def token_norm(dim: int, norm: TokenNorm, group_size: int) -> nn.Module:
    """The last layer of a token producer: LayerNorm(dim), or SimNorm over groups of
    `group_size` (the reference's `final_norm_option_in_*`)."""
    return nn.LayerNorm(dim) if norm == "LayerNorm" else SimNorm(group_size)


def norm_2d(channels: int, norm_type: NormType) -> nn.Module:
    """BatchNorm2d, or for "LN" a GroupNorm with one group.

    GroupNorm(1, C) normalises over (C, H, W) per sample like LightZero's `LayerNorm([C, H, W])`
    but with per-channel affine parameters, so it needs no spatial size at construction.

    Args:
        channels: feature maps C.
        norm_type: "BN" or "LN".

    Returns:
        The norm layer, acting on [B, C, H, W].
    """
    return nn.BatchNorm2d(channels) if norm_type == "BN" else nn.GroupNorm(1, channels)


def conv3x3(in_channels: int, out_channels: int, stride: int = 1) -> nn.Conv2d:
    """3×3 convolution with padding 1 and no bias (a norm always follows)."""
    return nn.Conv2d(in_channels, out_channels, 3, stride=stride, padding=1, bias=False)


def halved(side: int) -> int:
    """Output side of a kernel-3, stride-2, padding-1 conv or pool."""
    return (side - 1) // 2 + 1


class ResBlock(nn.Module):
    """Residual block; with `stride=2` it halves H and W and projects the skip with a 3×3 conv."""

    def __init__(
        self, in_channels: int, out_channels: int, norm_type: NormType, stride: int = 1
    ) -> None:
        """Create the block.

        Args:
            in_channels: input channels.
            out_channels: output channels.
            norm_type: "BN" or "LN".
            stride: 1 (keeps H, W) or 2 (LightZero's `res_type='downsample'`).
        """
        super().__init__()
        self.conv1 = conv3x3(in_channels, out_channels, stride)
        self.norm1 = norm_2d(out_channels, norm_type)
        self.conv2 = conv3x3(out_channels, out_channels)
        self.norm2 = norm_2d(out_channels, norm_type)
        self.skip: nn.Module = nn.Identity()
        if stride != 1 or in_channels != out_channels:
            self.skip = conv3x3(in_channels, out_channels, stride)

    def forward(self, x: Tensor) -> Tensor:
        """[B, C_in, H, W] -> [B, C_out, H/stride, W/stride]."""
        out = self.norm1(self.conv1(x)).relu_()
        out = self.norm2(self.conv2(out))
        return (out + self.skip(x)).relu_()


def res_stack(channels: int, num_blocks: int, norm_type: NormType) -> nn.Sequential:
    """`num_blocks` resolution-keeping residual blocks of `channels` channels."""
    return nn.Sequential(*(ResBlock(channels, channels, norm_type) for _ in range(num_blocks)))


def mlp_stack(in_dim: int, hidden_dim: int, num_layers: int, norm_type: NormType) -> nn.Sequential:
    """`num_layers` × (Linear → norm → ReLU); the first maps in_dim to hidden_dim.

    Args:
        in_dim: input features.
        hidden_dim: width of every layer.
        num_layers: number of layers (0 gives an identity).
        norm_type: "BN" or "LN".

    Returns:
        A module mapping [B, in_dim] to [B, hidden_dim] (or [B, in_dim] when num_layers is 0).
    """
    layers: list[nn.Module] = []
    for i in range(num_layers):
        layers += [
            nn.Linear(in_dim if i == 0 else hidden_dim, hidden_dim),
            norm_1d(hidden_dim, norm_type),
            nn.ReLU(inplace=True),
        ]
    return nn.Sequential(*layers)
