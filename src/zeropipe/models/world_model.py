"""UniZero's network: a causal transformer world model over (observation, action) tokens.

Runs in: any (collector / evaluator inside MCTS and for per-env root contexts; the learner over
teacher-forced sequences). Pu et al. 2024, "UniZero": one observation = one token from an encoder,
one action = one embedded token; observation tokens predict value and policy, action tokens predict
the reward and the next observation token. The search sees the MuZero interface: the "latent" of
a node is its packed transformer window (`transformer.WindowLayout`), so the one batched search,
`NetworkSearch` and reanalysis work unchanged.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor, nn

from zeropipe.config import ModelConfig
from zeropipe.models.blocks import token_norm
from zeropipe.models.encoders import build_encoder, resolve_kind
from zeropipe.models.gaussian import GaussianPolicyHead
from zeropipe.models.heads import zero_linear
from zeropipe.models.network import NetworkOutput
from zeropipe.models.root_context import KvCacheClock, RootContexts
from zeropipe.models.support import DiscreteSupport, logits_to_scalar, scalar_to_two_hot
from zeropipe.models.transformer import CausalTransformer

# log(0) stand-in for the zero-reward logits of a root; see `network._LOG_ZERO`.
_LOG_ZERO = -1e4


@dataclass(frozen=True, eq=False)
class SequenceOutput:
    """Teacher-forced predictions over o_0, a_0, ..., o_{K-1}, a_{K-1}.

    Attributes:
        value_logits: at o_k.  # [B, K, S_v]
        policy_logits: at o_k.  # [B, K, A]
        reward_logits: at a_k, the reward of a_k.  # [B, K, S_r]
        next_latent: at a_k, the predicted token of o_{k+1}.  # [B, K, E]
    """

    value_logits: Tensor  # [B, K, S_v]
    policy_logits: Tensor  # [B, K, A]
    reward_logits: Tensor  # [B, K, S_r]
    next_latent: Tensor  # [B, K, E]


class ObservationTokenizer(nn.Module):
    """Encoder (models/encoders) → flatten → Linear to E → LayerNorm or SimNorm: one token per
    observation."""

    def __init__(self, input_shape: tuple[int, ...], embed_dim: int, cfg: ModelConfig) -> None:
        """Create the tokenizer.

        Args:
            input_shape: one stacked observation without the batch axis.
            embed_dim: E.
            cfg: encoder sizes and `kind`; `cfg.world_model` its final norm.
        """
        super().__init__()
        wm = cfg.world_model
        self.encoder = build_encoder(input_shape, resolve_kind(input_shape, cfg.kind), cfg)
        self.out = nn.Linear(math.prod(self.encoder.latent_shape), embed_dim)
        self.norm = token_norm(embed_dim, wm.final_norm_option_in_encoder, wm.simnorm_group_size)

    def forward(self, obs: Tensor) -> Tensor:
        """[N, *input_shape] (uint8 scaled by 1/255) -> tokens [N, E]."""
        if obs.dtype == torch.uint8:
            obs = obs.float().div_(255.0)
        elif not obs.is_floating_point():
            obs = obs.float()
        return self.norm(self.out(self.encoder(obs).flatten(1)))


def _token_head(embed_dim: int, out_dim: int) -> nn.Sequential:
    """Linear → GELU → zero-initialised Linear (a fresh head predicts uniform distributions)."""
    return nn.Sequential(
        nn.Linear(embed_dim, embed_dim), nn.GELU(), zero_linear(embed_dim, out_dim)
    )


class UniZeroNetwork(nn.Module):
    """Transformer world model with the MuZero search interface and per-env root contexts.

    Attributes:
        value_support: atoms of the value head (S_v).
        reward_support: atoms of the reward head (S_r).
        embed_dim: E.
        context_tokens: C = 2·context_steps, the window size in tokens.
        weights_version: bumped by `clear_caches`; `RootContexts` drop caches of older versions.
    """

    _initial_reward_logits: Tensor  # [S_r]

    def __init__(
        self, input_shape: tuple[int, ...], action_space_size: int, cfg: ModelConfig
    ) -> None:
        """Build the network.

        Args:
            input_shape: (S·O,) for vectors or (S·C, H, W) for images.
            action_space_size: A, or D with `cfg.continuous_action_space` (sampled_unizero: a
                tanh-Gaussian policy head and a linear action embedding).
            cfg: encoder sizes, supports and `cfg.world_model`.

        Raises:
            ConfigError: the encoder kind does not fit the input, or num_heads does not divide
                embed_dim.
        """
        super().__init__()
        wm = cfg.world_model
        self.input_shape = tuple(input_shape)
        self.action_space_size = action_space_size
        self.embed_dim = wm.embed_dim
        self.context_steps = wm.context_steps
        self.context_tokens = 2 * wm.context_steps
        self.weights_version = 0
        self.value_support = DiscreteSupport(*cfg.value_support_range)
        self.reward_support = DiscreteSupport(*cfg.reward_support_range)
        self.continuous = cfg.continuous_actions
        self.tokenizer = ObservationTokenizer(self.input_shape, wm.embed_dim, cfg)
        self.action_embedding: nn.Module = (
            # an action vector [D] is projected to a token (LightZero sampled_unizero)
            nn.Linear(action_space_size, wm.embed_dim, bias=False)
            if self.continuous
            else nn.Embedding(action_space_size, wm.embed_dim)
        )
        self.transformer = CausalTransformer(
            wm.embed_dim,
            wm.num_layers,
            wm.num_heads,
            self.context_tokens,
            wm.dropout,
            rope_theta=wm.rope_theta if wm.rotary_emb else None,
        )
        self.value_head = _token_head(wm.embed_dim, self.value_support.size)
        self.policy_head: nn.Module = (
            GaussianPolicyHead(
                wm.embed_dim, wm.embed_dim, action_space_size, cfg.sigma_type, cfg.fixed_sigma_value
            )
            if self.continuous
            else _token_head(wm.embed_dim, action_space_size)
        )
        self.reward_head = _token_head(wm.embed_dim, self.reward_support.size)
        # Not zero-initialised: a zero input to a final LayerNorm has gradient ~1/sqrt(eps).
        self.latent_head = nn.Sequential(
            nn.Linear(wm.embed_dim, wm.embed_dim),
            nn.GELU(),
            nn.Linear(wm.embed_dim, wm.embed_dim),
            token_norm(wm.embed_dim, wm.final_norm_option_in_obs_head, wm.simnorm_group_size),
        )
        zero_reward = scalar_to_two_hot(torch.zeros(()), self.reward_support)  # [S_r]
        self.register_buffer(
            "_initial_reward_logits", zero_reward.log().clamp_min(_LOG_ZERO), persistent=False
        )

    # --- tokens -------------------------------------------------------------------------------

    def encode(self, obs: Tensor) -> Tensor:
        """Observation tokens.

        Args:
            obs: stacked observations; uint8 is scaled by 1/255.  # [N, *input_shape]

        Returns:
            Tokens after the tokenizer's final norm (LayerNorm or SimNorm).  # [N, E]
        """
        return self.tokenizer(obs)

    def embed_actions(self, actions: Tensor) -> Tensor:
        """Action tokens: [...] int64 indices or [..., D] float vectors (continuous) -> [..., E]."""
        if self.continuous:
            return self.action_embedding(actions.to(self.action_embedding.weight.dtype))
        return self.action_embedding(actions)

    def action_tensor(self, actions: Sequence[Any], device: torch.device) -> Tensor:
        """Acting-side actions (ints, or D-float vectors when continuous) as the tensor
        `embed_actions` reads: [n] int64 or [n, D] float32."""
        if self.continuous:
            values = torch.tensor(actions, device=device, dtype=torch.float32)
            return values.view(-1, self.action_space_size)
        return torch.tensor(actions, device=device, dtype=torch.long)

    def observation_heads(self, outputs: Tensor) -> tuple[Tensor, Tensor]:
        """Outputs at observation tokens [..., E] -> (value [..., S_v], policy [..., A]; for
        continuous actions the Gaussian parameters [..., 2D], mu then sigma)."""
        return self.value_head(outputs), self.policy_head(outputs)

    def zero_reward_logits(self, batch: int) -> Tensor:
        """Log two-hot of reward 0 (log 0 as -1e4), a broadcast view.  # [B, S_r]"""
        return self._initial_reward_logits.expand(batch, -1)

    # --- search interface ---------------------------------------------------------------------

    def initial_inference(self, obs: Tensor) -> NetworkOutput:
        """Context-free roots: the window is [o].

        Args:
            obs: stacked observations.  # [B, *input_shape]

        Returns:
            latent = packed window [B, D], value/policy at o, zero-reward logits.
        """
        tokens = self.encode(obs).unsqueeze(1)  # [B, 1, E]
        out, state = self.transformer.extend(self.transformer.empty_state(len(obs), tokens), tokens)
        value_logits, policy_logits = self.observation_heads(out[:, 0])
        return NetworkOutput(state, value_logits, self.zero_reward_logits(len(obs)), policy_logits)

    def recurrent_inference(self, latent: Tensor, action: Tensor) -> NetworkOutput:
        """Extend windows by [a] (reward, next token ẑ), then by [ẑ] (value, policy).

        Args:
            latent: packed windows.  # [B, D]
            action: action indices, int64 [B]; continuous: action vectors [B, D].

        Returns:
            The new packed windows as `latent`, reward, value and policy logits.
        """
        out_action, state = self.transformer.extend(latent, self.embed_actions(action)[:, None])
        reward_logits = self.reward_head(out_action[:, 0])  # [B, S_r]
        predicted = self.latent_head(out_action[:, 0])  # [B, E]
        out_obs, state = self.transformer.extend(state, predicted.unsqueeze(1))
        value_logits, policy_logits = self.observation_heads(out_obs[:, 0])
        return NetworkOutput(state, value_logits, reward_logits, policy_logits)

    def transition_reward(self, latent: Tensor, out: NetworkOutput) -> Tensor:
        """Scalar reward [B] of the steps from windows `latent` [B, D] that produced `out`."""
        return logits_to_scalar(out.reward_logits.float(), self.reward_support)

    # --- training -----------------------------------------------------------------------------

    def sequence(self, obs_tokens: Tensor, actions: Tensor) -> SequenceOutput:
        """One teacher-forced causal pass over o_0, a_0, ..., o_{K-1}, a_{K-1}.

        Args:
            obs_tokens: observation tokens from `encode`.  # [B, K, E]
            actions: actions taken after each observation, int64 [B, K]; continuous:
                [B, K, D] float.

        Returns:
            Value/policy at o_k; reward and the predicted o_{k+1} token at a_k.

        Raises:
            ValueError: 2K exceeds the window (2·context_steps tokens).
        """
        batch, steps, embed = obs_tokens.shape
        action_tokens = self.embed_actions(actions)  # [B, K, E]
        tokens = torch.stack([obs_tokens, action_tokens], dim=2).view(batch, 2 * steps, embed)
        out = self.transformer(tokens).view(batch, steps, 2, embed)  # [B, K, 2, E]
        value_logits, policy_logits = self.observation_heads(out[:, :, 0])
        return SequenceOutput(
            value_logits=value_logits,
            policy_logits=policy_logits,
            reward_logits=self.reward_head(out[:, :, 1]),
            next_latent=self.latent_head(out[:, :, 1]),
        )

    def sequence_value_logits(self, obs: Tensor, actions: Tensor) -> Tensor:
        """Value logits at every observation of one teacher-forced pass over o_0, a_0, ...,
        o_{J-1}: the value at o_j sees o_0..o_j and a_0..a_{j-1}, as in `sequence` (whose
        causal mask hides a_j and later tokens); only the value head runs.

        Args:
            obs: stacked observations; uint8 is scaled by 1/255.  # [B, J, *input_shape]
            actions: actions taken after each observation, int64 [B, J]; continuous:
                [B, J, D] float (the last one precedes no observation and is not read).

        Returns:
            Value logits at o_j.  # [B, J, S_v]

        Raises:
            ValueError: 2J - 1 exceeds the window (2·context_steps tokens).
        """
        batch, steps = obs.shape[:2]
        obs_tokens = self.encode(obs.flatten(0, 1)).view(batch, steps, -1)  # [B, J, E]
        tokens = torch.stack([obs_tokens, self.embed_actions(actions)], dim=2).flatten(1, 2)
        out = self.transformer(tokens[:, :-1])  # [B, 2J-1, E]: o_0, a_0, ..., o_{J-1}
        return self.value_head(out[:, 0::2])

    # --- root contexts ------------------------------------------------------------------------

    def new_root_contexts(
        self,
        num_envs: int,
        clear_interval_steps: int = 0,
        clock: KvCacheClock = "since_invalidation",
    ) -> RootContexts:
        """Per-env root KV caches for a collector or evaluator with `num_envs` envs (the clock's
        rules: `RootContexts`)."""
        return RootContexts(self, num_envs, clear_interval_steps, clock)

    def clear_caches(self) -> None:
        """The weights changed: every `RootContexts` of this network re-encodes on next use."""
        self.weights_version += 1

    def load_state_dict(
        self, state_dict: Mapping[str, Any], strict: bool = True, assign: bool = False
    ) -> Any:
        """`nn.Module.load_state_dict`, then `clear_caches` (cached K/V depend on the weights)."""
        result = super().load_state_dict(state_dict, strict=strict, assign=assign)
        self.clear_caches()
        return result
