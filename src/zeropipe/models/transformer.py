"""A causal transformer over a bounded token window whose KV cache is one packed float row.

Runs in: any (collector / evaluator inside MCTS, once per simulation; the learner cache-free over
teacher-forced sequences). UniZero's search carries a window per tree node; packing the raw tokens,
every layer's keys and values and the window length into one float row lets the batched search
store and gather it like any other latent (`mcts/search.py` keeps a [N, B, ...] store).

Positions are absolute *within the window* (0 = oldest kept token): a learned embedding added to
the tokens, or with `rotary_emb` rotary embeddings of the queries and keys (`rotary.py`; then no
learned table, as the reference's world model). When a window would overflow, it is rebuilt
exactly: the newest tokens are kept, re-positioned from 0 and their keys/values recomputed from
the raw tokens — no approximate re-basing of cached keys (LightZero's legacy `pos_emb_diff` path).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from zeropipe.config import ConfigError
from zeropipe.models.rotary import RotaryEmbedding, Rotation


@dataclass(frozen=True, eq=False)
class Window:
    """An unpacked batch of windows (views into the packed state when unpacked).

    Attributes:
        tokens: raw token embeddings, before any positional embedding; rows hold junk at
            positions >= length.  # [B, C, E]
        keys_values: layer l's keys at index 2l and values at 2l+1; heads split E head-major
            (head h owns columns h·E/H ... (h+1)·E/H − 1).  # [B, 2L, C, E]
        length: valid tokens n <= C per row, int64.  # [B]
    """

    tokens: Tensor  # [B, C, E]
    keys_values: Tensor  # [B, 2L, C, E]
    length: Tensor  # [B]


class WindowLayout:
    """Packing of a `Window` into one float tensor [B, D].

    Row layout, D = (1 + 2L)·C·E + 1: raw tokens [C, E], then K_0, V_0, ..., K_{L-1}, V_{L-1}
    each [C, E], then the length n as one float column (exact for n < 2^24).

    Attributes:
        capacity: C, tokens per window.
        embed_dim: E.
        num_layers: L.
        size: D, floats per packed row.
    """

    def __init__(self, capacity: int, embed_dim: int, num_layers: int) -> None:
        """Describe the layout.

        Args:
            capacity: C.
            embed_dim: E.
            num_layers: L.
        """
        self.capacity, self.embed_dim, self.num_layers = capacity, embed_dim, num_layers
        self.size = (1 + 2 * num_layers) * capacity * embed_dim + 1

    def empty(self, batch: int, device: torch.device, dtype: torch.dtype) -> Tensor:
        """Zero-length windows. Zeros, not garbage: masked keys must stay finite (0·NaN = NaN)."""
        return torch.zeros(batch, self.size, device=device, dtype=dtype)

    def unpack(self, packed: Tensor) -> Window:
        """Views of a packed state [B, D] as a `Window`."""
        slab = packed[:, :-1].view(-1, 1 + 2 * self.num_layers, self.capacity, self.embed_dim)
        return Window(slab[:, 0], slab[:, 1:], packed[:, -1].long())

    def pack(self, window: Window) -> Tensor:
        """A new packed state [B, D] holding a copy of `window`."""
        length = window.length.to(window.tokens.dtype).unsqueeze(1)  # [B, 1]
        return torch.cat([window.tokens.flatten(1), window.keys_values.flatten(1), length], 1)

    def with_length(self, packed: Tensor, length: Tensor) -> Tensor:
        """A copy of `packed` whose windows are cut to `length` [B] tokens (length <= n)."""
        out = packed.clone()
        out[:, -1] = length.to(packed.dtype)
        return out


class CausalSelfAttention(nn.Module):
    """Multi-head self-attention that attends to a window's cached keys/values."""

    def __init__(self, embed_dim: int, num_heads: int, dropout: float) -> None:
        """Create the projections (q, k, v fused; output projection; residual dropout)."""
        super().__init__()
        self.num_heads, self.dropout = num_heads, dropout
        self.qkv = nn.Linear(embed_dim, 3 * embed_dim)
        self.proj = nn.Linear(embed_dim, embed_dim)
        self.resid_dropout = nn.Dropout(dropout)

    def forward(
        self,
        x: Tensor,
        positions: Tensor,
        cache: tuple[Tensor, Tensor] | None,
        rotation: Rotation | None,
    ) -> tuple[Tensor, Tensor, Tensor]:
        """Attend from new tokens to the window's valid keys.

        Args:
            x: normalised new tokens.  # [B, m, E]
            positions: window position of each new token.  # [B, m] int64
            cache: the layer's cached (keys, values) [B, C, E] each, or None for a cache-free
                pass whose positions are 0..m−1.
            rotation: the new tokens' rotary angles, or None (learned positions): the queries
                and the keys are rotated before the keys are cached.

        Returns:
            (output [B, m, E], keys [B, C', E], values [B, C', E]) with the new keys/values
            written at `positions`; C' = C, or m when cache-free.
        """
        batch, m, embed = x.shape
        q, k, v = self.qkv(x).split(embed, dim=-1)  # [B, m, E] each
        if rotation is not None:
            q, k = rotation.apply(q), rotation.apply(k)
        if cache is None:
            keys, values, mask = k, v, None
        else:
            rows = torch.arange(batch, device=x.device).unsqueeze(1).expand(-1, m)  # [B, m]
            keys = cache[0].index_put((rows, positions), k)  # [B, C, E]
            values = cache[1].index_put((rows, positions), v)  # [B, C, E]
            slots = torch.arange(keys.shape[1], device=x.device)  # [C]
            # Key j is visible to the query at position p iff j <= p: that masks the future and
            # every stale slot past the window's end, per row.
            mask = (slots <= positions.unsqueeze(-1)).unsqueeze(1)  # [B, 1, m, C]
        out = F.scaled_dot_product_attention(
            self._heads(q),
            self._heads(keys),
            self._heads(values),
            attn_mask=mask,
            dropout_p=self.dropout if self.training else 0.0,
            is_causal=mask is None,
        )  # [B, H, m, E/H]
        out = out.transpose(1, 2).reshape(batch, m, embed)
        return self.resid_dropout(self.proj(out)), keys, values

    def keys_values(self, x: Tensor, rotation: Rotation | None) -> list[Tensor]:
        """Key and value projections only: normalised tokens -> [keys, values], [B, T, E] each;
        the keys rotated by `rotation` when given, as `forward` caches them."""
        embed = x.shape[-1]
        kv = F.linear(x, self.qkv.weight[embed:], self.qkv.bias[embed:])  # [B, T, 2E]
        keys, values = kv.split(embed, dim=-1)
        return [keys if rotation is None else rotation.apply(keys), values]

    def _heads(self, x: Tensor) -> Tensor:
        """[B, T, E] -> [B, H, T, E/H]."""
        batch, length, embed = x.shape
        return x.view(batch, length, self.num_heads, embed // self.num_heads).transpose(1, 2)


class TransformerBlock(nn.Module):
    """Pre-LN block: x + attn(LN(x)), then x + MLP(LN(x)) with a 4E GELU MLP."""

    def __init__(self, embed_dim: int, num_heads: int, dropout: float) -> None:
        """Create the block."""
        super().__init__()
        self.ln_attn = nn.LayerNorm(embed_dim)
        self.attn = CausalSelfAttention(embed_dim, num_heads, dropout)
        self.ln_mlp = nn.LayerNorm(embed_dim)
        self.mlp = nn.Sequential(
            nn.Linear(embed_dim, 4 * embed_dim),
            nn.GELU(),
            nn.Linear(4 * embed_dim, embed_dim),
            nn.Dropout(dropout),
        )

    def forward(
        self,
        x: Tensor,
        positions: Tensor,
        cache: tuple[Tensor, Tensor] | None,
        rotation: Rotation | None,
    ) -> tuple[Tensor, Tensor, Tensor]:
        """[B, m, E] -> ([B, m, E], keys, values); see `CausalSelfAttention.forward`."""
        attended, keys, values = self.attn(self.ln_attn(x), positions, cache, rotation)
        x = x + attended
        return x + self.mlp(self.ln_mlp(x)), keys, values


class CausalTransformer(nn.Module):
    """GPT-style transformer over window positions and a packed, fixed-size KV cache.

    Attributes:
        capacity: C, the window size in tokens.
        block_tokens: tokens per env step (2: observation, action); a rebuilt window starts at
            a multiple of it, i.e. at an observation token.
        layout: how windows are packed into [B, D] tensors.
    """

    def __init__(
        self,
        embed_dim: int,
        num_layers: int,
        num_heads: int,
        capacity: int,
        dropout: float,
        block_tokens: int = 2,
        rope_theta: float | None = None,
    ) -> None:
        """Create the transformer.

        Args:
            embed_dim: E.
            num_layers: L blocks.
            num_heads: H, must divide E.
            capacity: C tokens per window (the size of the position table, learned or rotary).
            dropout: attention, residual and MLP dropout.
            block_tokens: tokens per step; rebuilt windows start at a multiple of it.
            rope_theta: None: a learned position embedding added to the tokens; else rotary
                embeddings of the queries and keys with this base θ, and no learned table.

        Raises:
            ConfigError: H does not divide E, or E/H is odd with rotary embeddings.
        """
        super().__init__()
        if embed_dim % num_heads != 0:
            raise ConfigError(
                f"world_model.num_heads={num_heads} does not divide embed_dim={embed_dim}; "
                "pick a divisor of embed_dim"
            )
        self.capacity, self.block_tokens = capacity, block_tokens
        self.layout = WindowLayout(capacity, embed_dim, num_layers)
        self.position_embedding: nn.Embedding | None = None
        self.rotary: RotaryEmbedding | None = None
        if rope_theta is None:
            self.position_embedding = nn.Embedding(capacity, embed_dim)
        else:
            self.rotary = RotaryEmbedding(embed_dim // num_heads, capacity, rope_theta)
        self.blocks = nn.ModuleList(
            TransformerBlock(embed_dim, num_heads, dropout) for _ in range(num_layers)
        )
        self.ln_final = nn.LayerNorm(embed_dim)

    def empty_state(self, batch: int, like: Tensor) -> Tensor:
        """Packed zero-length windows on `like`'s device and dtype.  # [B, D]"""
        return self.layout.empty(batch, like.device, like.dtype)

    def forward(self, tokens: Tensor) -> Tensor:
        """Cache-free causal pass over whole windows (training).

        Args:
            tokens: raw tokens at positions 0..T−1, T <= C.  # [B, T, E]

        Returns:
            Outputs after the final LayerNorm.  # [B, T, E]

        Raises:
            ValueError: T > C.
        """
        length = tokens.shape[1]
        self._check_fits(length)
        positions = torch.arange(length, device=tokens.device).expand(tokens.shape[0], -1)
        out, _ = self._run(tokens, positions, None)
        return out

    def extend(self, state: Tensor, tokens: Tensor) -> tuple[Tensor, Tensor]:
        """Append m tokens to each window and return their outputs.

        Rows whose n + m > C are first rebuilt exactly (see `_rebuild`). Outputs equal a
        cache-free pass over the resulting window contents. `extend(empty_state, tokens)` is that
        cache-free pass.

        Args:
            state: packed windows; not modified.  # [B, D]
            tokens: raw new tokens.  # [B, m, E]

        Returns:
            (outputs [B, m, E], new packed state [B, D]).

        Raises:
            ValueError: m > C.
        """
        m = tokens.shape[1]
        self._check_fits(m)
        window = self.layout.unpack(state)
        overflow = window.length + m > self.capacity  # [B]
        if bool(overflow.any()):  # one host sync; skipped work dominates on CPU
            window = self._rebuild(window, overflow, m)
        offsets = torch.arange(m, device=tokens.device)
        positions = window.length.unsqueeze(1) + offsets  # [B, m]
        out, keys_values = self._run(tokens, positions, window.keys_values)
        rows = torch.arange(tokens.shape[0], device=tokens.device).unsqueeze(1).expand(-1, m)
        raw = window.tokens.index_put((rows, positions), tokens)  # [B, C, E]
        return out, self.layout.pack(Window(raw, keys_values, window.length + m))

    def _run(
        self, tokens: Tensor, positions: Tensor, keys_values: Tensor | None
    ) -> tuple[Tensor, Tensor]:
        """Blocks over new tokens: (outputs [B, m, E], keys/values [B, 2L, C', E])."""
        x, rotation = self._positioned(tokens, positions)  # [B, m, E]
        written: list[Tensor] = []
        for layer, block in enumerate(self.blocks):
            cache = None
            if keys_values is not None:
                cache = (keys_values[:, 2 * layer], keys_values[:, 2 * layer + 1])
            x, keys, values = block(x, positions, cache, rotation)
            written += [keys, values]
        return self.ln_final(x), torch.stack(written, 1)

    def _rebuild(self, window: Window, overflow: Tensor, m: int) -> Window:
        """Make room for m tokens in the overflowing rows, exactly.

        Each such row keeps its newest C − m raw tokens, rounded down to a whole number of
        `block_tokens` dropped from the front so the window still starts at an observation,
        re-positions them from 0 and recomputes their keys/values with one cache-free pass.
        Slots past the kept tokens hold finite junk that the position mask never reads.
        """
        every_row = bool(overflow.all())
        index = None if every_row else overflow.nonzero().squeeze(1)  # [R]
        tokens = window.tokens if index is None else window.tokens[index]  # [R, C, E]
        length = window.length if index is None else window.length[index]  # [R]
        block = self.block_tokens
        drop = (length + m - self.capacity + block - 1) // block * block
        drop = torch.minimum(drop, length)  # [R]
        slots = torch.arange(self.capacity, device=tokens.device)  # [C]
        source = (slots + drop.unsqueeze(1)).clamp(max=self.capacity - 1)  # [R, C]
        shifted = tokens.gather(1, source.unsqueeze(-1).expand(-1, -1, tokens.shape[-1]))
        keys_values = self._keys_values(shifted[:, : self.capacity - m])  # [R, 2L, C - m, E]
        # The m free slots get zeros (finite); they are written before they are ever read.
        keys_values = F.pad(keys_values, (0, 0, 0, m))  # [R, 2L, C, E]
        if index is None:
            return Window(shifted, keys_values, length - drop)
        return Window(
            window.tokens.index_copy(0, index, shifted),
            window.keys_values.index_copy(0, index, keys_values),
            window.length.index_copy(0, index, length - drop),
        )

    def _keys_values(self, tokens: Tensor) -> Tensor:
        """Keys/values of a cache-free pass over tokens [R, T, E] at positions 0..T−1.

        Only what the keys and values need is computed: the last block stops at its K/V
        projection (no attention, MLP or final norm).
        """
        positions = torch.arange(tokens.shape[1], device=tokens.device).expand(len(tokens), -1)
        x, rotation = self._positioned(tokens, positions)  # [R, T, E]
        written: list[Tensor] = []
        last = len(self.blocks) - 1
        for layer, block in enumerate(self.blocks):
            if layer == last:
                written += block.attn.keys_values(block.ln_attn(x), rotation)
            else:
                x, keys, values = block(x, positions, None, rotation)
                written += [keys, values]
        return torch.stack(written, 1)

    def _positioned(self, tokens: Tensor, positions: Tensor) -> tuple[Tensor, Rotation | None]:
        """The blocks' input [B, m, E] and rotation: the learned embedding of `positions` [B, m]
        added to the tokens, or the tokens unchanged and the rotary angles of `positions`."""
        if self.rotary is not None:
            return tokens, self.rotary(positions)
        return tokens + self.position_embedding(positions), None

    def _check_fits(self, num_tokens: int) -> None:
        if num_tokens > self.capacity:
            raise ValueError(
                f"{num_tokens} tokens do not fit a window of {self.capacity} tokens; raise "
                "world_model.context_steps (window = 2·context_steps tokens) or shorten the input"
            )
