"""EfficientZero's value-prefix LSTM head and the packed per-node search state that carries it.

Runs in: any (inside the search, one batched call per simulation; the learner over K unroll
steps). EfficientZero (Ye et al. 2021 §4.2) predicts, instead of each step's reward, the *value
prefix*: the sum of rewards since the last LSTM reset, read from an LSTM over the unrolled
latents. The search stores one latent tensor per node and never looks inside it, so a node's whole
state — latent, LSTM (h, c), its predicted prefix and its depth below the root — is packed into
one flat row (`PrefixStateLayout`), the way UniZero packs its KV window.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from zeropipe.config import ModelConfig
from zeropipe.models.blocks import norm_1d
from zeropipe.models.heads import VectorHead, head_features


@dataclass(frozen=True, eq=False)
class PrefixState:
    """One batch of unpacked search states.

    Attributes:
        latent: latent states.  # [B, *latent_shape]
        h: LSTM hidden state the node's children start from (zero after a reset).  # [B, H]
        c: LSTM cell state, likewise.  # [B, H]
        prefix: the node's predicted value prefix (0 at the root).  # [B]
        depth: steps below the root, as float (0 at the root).  # [B]
    """

    latent: Tensor
    h: Tensor
    c: Tensor
    prefix: Tensor
    depth: Tensor


class PrefixStateLayout:
    """Packs a `PrefixState` into one row [B, E + 2H + 2]: latent | h | c | prefix | depth.

    Args:
        latent_shape: one latent without the batch axis; E is its number of elements.
        hidden_size: H, the LSTM's hidden size.
    """

    def __init__(self, latent_shape: tuple[int, ...], hidden_size: int) -> None:
        self.latent_shape = tuple(latent_shape)
        self.hidden_size = hidden_size
        self.latent_dim = math.prod(self.latent_shape)
        self.width = self.latent_dim + 2 * hidden_size + 2

    def pack(self, state: PrefixState) -> Tensor:
        """The packed rows.  # [B, E + 2H + 2]"""
        parts = (
            state.latent.flatten(1),
            state.h,
            state.c,
            state.prefix[:, None].to(state.h.dtype),
            state.depth[:, None].to(state.h.dtype),
        )
        return torch.cat(parts, dim=1)

    def unpack(self, packed: Tensor) -> PrefixState:
        """The state of packed rows [B, E + 2H + 2] (views, no copies)."""
        e, h = self.latent_dim, self.hidden_size
        return PrefixState(
            latent=packed[:, :e].view(packed.shape[0], *self.latent_shape),
            h=packed[:, e : e + h],
            c=packed[:, e + h : e + 2 * h],
            prefix=packed[:, e + 2 * h],
            depth=packed[:, e + 2 * h + 1],
        )

    def root(self, latent: Tensor) -> Tensor:
        """Root rows: the latent [B, *latent_shape] with zero LSTM state, prefix and depth."""
        batch = latent.shape[0]
        zeros = latent.new_zeros(batch, 2 * self.hidden_size + 2)
        return torch.cat((latent.flatten(1), zeros), dim=1)


class ValuePrefixHead(nn.Module):
    """Head features → LSTM cell → norm → ReLU → `VectorHead` (LightZero EfficientZero dynamics).

    Image latents are reduced by the reward head's 1×1 conv before the LSTM; vector latents enter
    it directly (LightZero `DynamicsNetworkMLP` of EfficientZero).
    """

    def __init__(
        self, latent_shape: tuple[int, ...], out_dim: int, hidden_size: int, cfg: ModelConfig
    ) -> None:
        """Create the head.

        Args:
            latent_shape: one latent without the batch axis.
            out_dim: S_r, atoms of the value-prefix support.
            hidden_size: H, the LSTM's hidden size.
            cfg: head_channels, head_hidden_dim and norm_type are read.
        """
        super().__init__()
        self.features, feature_dim = head_features(latent_shape, cfg)
        self.lstm = nn.LSTMCell(feature_dim, hidden_size)
        self.out = nn.Sequential(
            norm_1d(hidden_size, cfg.norm_type),
            nn.ReLU(inplace=True),
            VectorHead(hidden_size, cfg.head_hidden_dim, out_dim, cfg.norm_type),
        )

    def forward(self, latent: Tensor, h: Tensor, c: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """latent [B, *latent_shape], state h, c [B, H] → (prefix logits [B, S_r], h, c)."""
        h, c = self.lstm(self.features(latent), (h, c))
        return self.out(h), h, c
