"""Rotary position embeddings (RoPE) of the world model's queries and keys.

Runs in: any (inside `transformer.CausalSelfAttention`). Su et al. 2021, "RoFormer", §3.4: each
head's dimensions are taken in adjacent pairs (2i, 2i+1), and the pair of the token at position p
is rotated by the angle p·θ^(−2i/d) (d the head size, θ the base). The dot product of a query
rotated at p and a key rotated at p' then depends on p − p' only, so an attention score sees
how far apart two tokens are, never where the window starts.

The keys are cached rotated (the window's keys/values are those a cache-free pass writes), and
the positions are the window positions the transformer already counts: a rebuilt window is
re-positioned from 0 and its keys recomputed, which with RoPE changes no score.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn

from zeropipe.config import ConfigError


class RotaryEmbedding(nn.Module):
    """The rotation table of one window's positions.

    Heads split E head-major (head h owns columns h·d ... (h+1)·d − 1, d = E/H), as
    `CausalSelfAttention._heads` does; every head uses the same table.
    """

    cos: Tensor  # [C, d/2]
    sin: Tensor  # [C, d/2]

    def __init__(self, head_dim: int, capacity: int, theta: float) -> None:
        """Precompute cos and sin of every window position's angles.

        Args:
            head_dim: d = E/H; must be even (the rotation acts on pairs).
            capacity: C, the window positions 0..C−1 that can be rotated.
            theta: the base θ of the frequencies θ^(−2i/d) (RoFormer and the reference: 10000).

        Raises:
            ConfigError: d is odd.
        """
        super().__init__()
        if head_dim % 2 != 0:
            raise ConfigError(
                f"world_model.rotary_emb needs an even head size, got embed_dim/num_heads = "
                f"{head_dim}; pick embed_dim and num_heads so that their quotient is even"
            )
        self.head_dim = head_dim
        pair = torch.arange(0, head_dim, 2, dtype=torch.float64)  # [d/2]: 2i
        frequencies = theta ** (-pair / head_dim)  # [d/2]
        angles = torch.outer(torch.arange(capacity, dtype=torch.float64), frequencies)  # [C, d/2]
        # Derived from the sizes, not learned: kept out of checkpoints.
        self.register_buffer("cos", angles.cos().float(), persistent=False)
        self.register_buffer("sin", angles.sin().float(), persistent=False)

    def forward(self, positions: Tensor) -> Rotation:
        """The rotation of tokens at `positions` [B, m] (int64 in 0..C−1), for every layer."""
        return Rotation(self.cos[positions].unsqueeze(2), self.sin[positions].unsqueeze(2))


@dataclass(frozen=True, eq=False)
class Rotation:
    """The angles of m tokens per row, computed once per pass and applied in every layer.

    Attributes:
        cos: cos of each pair's angle, one head broadcast to all.  # [B, m, 1, d/2]
        sin: sin of each pair's angle.  # [B, m, 1, d/2]
    """

    cos: Tensor  # [B, m, 1, d/2]
    sin: Tensor  # [B, m, 1, d/2]

    def apply(self, x: Tensor) -> Tensor:
        """Rotate each head's pairs (2i, 2i+1) of queries or keys `x` [B, m, E].

        Returns:
            The rotated tensor in x's dtype (the rotation itself runs in float32).  # [B, m, E]
        """
        batch, m, embed = x.shape
        half = self.cos.shape[-1]
        pairs = x.float().view(batch, m, embed // (2 * half), half, 2)
        even, odd = pairs.unbind(-1)  # [B, m, H, d/2] each
        cos, sin = self.cos, self.sin
        rotated = torch.stack([even * cos - odd * sin, even * sin + odd * cos], dim=-1)
        return rotated.view(batch, m, embed).to(x.dtype)
