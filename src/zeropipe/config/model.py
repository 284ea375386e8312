"""Network settings (`policy.model`): the sizes every type reads, and the parts only some read.

Runs in: any. `ModelConfig` holds what every network reads. The parts that only some networks
read are mechanism sections here, because `models/` reads them: the SSL projection
(`ProjectionModelConfig`), the GRU history (`HistoryModelConfig`), UniZero's transformer
(`WorldModelConfig`, `UniZeroModelConfig`), EfficientZero's value-prefix LSTM
(`ValuePrefixConfig`) and the continuous policy head (`ContinuousHead`). Which of them a policy
type's `model` is, is decided by its section in `algos/` (typed by `policy.type`), so a config
shows only what its type reads.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from zeropipe.config.section import CONV_ONLY, MLP_ONLY, Section


class WorldModelConfig(Section):
    """The transformer world model's sizes (UniZero's; the types with a world model read it)."""

    embed_dim: int = Field(64, ge=8, description="Token embedding size E.")
    num_layers: int = Field(2, ge=1, description="Transformer blocks.")
    num_heads: int = Field(2, ge=1, description="Attention heads (must divide embed_dim).")
    context_steps: int = Field(
        4,
        ge=1,
        description="Inference window in env steps (2 tokens each): the root context and the "
        "search path together keep at most this many (obs, action) pairs; older tokens are "
        "dropped and the window rebuilt exactly from its raw tokens.",
    )
    dropout: float = Field(0.1, ge=0.0, lt=1.0, description="Dropout in attention and MLP.")
    rotary_emb: bool = Field(
        False,
        description="Token positions: False, a learned position embedding added to each token; "
        "True, rotary position embeddings (RoPE, Su et al. 2021) of the queries and keys in "
        "every attention layer and no learned table, as the reference's world model with "
        "rotary_emb (its CartPole UniZero config sets it). Attention then depends only on how "
        "far apart two tokens are; positions count tokens within the window. Needs an even "
        "embed_dim / num_heads.",
    )
    rope_theta: float = Field(
        10000.0,
        gt=1.0,
        description="rotary_emb: the base θ of the rotation frequencies θ^(−2i/d) over a "
        "head's d dimensions (reference rope_theta: 10000).",
    )
    final_norm_option_in_encoder: Literal["LayerNorm", "SimNorm"] = Field(
        "LayerNorm",
        description="The last layer of the observation tokenizer: LayerNorm, or SimNorm "
        "(softmax over consecutive groups of simnorm_group_size features), as the reference's "
        "encoders with final_norm_option_in_encoder (model/common.py:647-665).",
    )
    final_norm_option_in_obs_head: Literal["LayerNorm", "SimNorm"] = Field(
        "LayerNorm",
        description="The last layer of the head that predicts the next observation token: "
        "LayerNorm or SimNorm, as the reference's final_norm_option_in_obs_head "
        "(model/unizero_world_models/world_model.py:115-120, :464-472). The reference pairs "
        "SimNorm with a group-KL latent loss; the latent loss here stays MSE.",
    )
    simnorm_group_size: int = Field(
        8,
        ge=1,
        description="SimNorm: features per simplex; must divide embed_dim (reference "
        "group_size: 8).",
    )
    latent_loss_weight: float = Field(
        10.0, ge=0.0, description="Weight of the next-latent MSE (reference: 10)."
    )
    value_loss_weight: float = Field(0.5, ge=0.0, description="Weight of the value loss (0.5).")
    reward_loss_weight: float = Field(1.0, ge=0.0, description="Weight of the reward loss (1).")
    policy_loss_weight: float = Field(1.0, ge=0.0, description="Weight of the policy loss (1).")
    label_smoothing_eps: float = Field(
        0.1,
        ge=0.0,
        lt=1.0,
        description="Label smoothing of value/reward two-hot targets (reference: 0.1). It pulls "
        "the decoded values toward the support's mean by this share, compounded by "
        "bootstrapping: with reward 1 per step, td 5 and γ 0.997 the value's fixed point is ~24.",
    )

    @model_validator(mode="after")
    def _simnorm_groups_fit(self):
        uses_simnorm = "SimNorm" in (
            self.final_norm_option_in_encoder,
            self.final_norm_option_in_obs_head,
        )
        if uses_simnorm and self.embed_dim % self.simnorm_group_size != 0:
            raise ValueError(
                f"world_model.simnorm_group_size={self.simnorm_group_size} does not divide "
                f"embed_dim={self.embed_dim}; pick a divisor of embed_dim for SimNorm"
            )
        return self


class ModelConfig(Section):
    """Network sizes. `kind: auto` picks mlp for vector observations and conv for images."""

    kind: Literal["auto", "mlp", "conv"] = Field("auto", description="Encoder family.")
    latent_dim: int = Field(
        128, ge=1, description="mlp: latent state size.", json_schema_extra=MLP_ONLY
    )
    hidden_dim: int = Field(
        128, ge=1, description="mlp: hidden layer width.", json_schema_extra=MLP_ONLY
    )
    num_layers: int = Field(
        2, ge=1, description="mlp: hidden layers per network.", json_schema_extra=MLP_ONLY
    )
    num_channels: int = Field(
        64, ge=1, description="conv: latent channels.", json_schema_extra=CONV_ONLY
    )
    num_res_blocks: int = Field(
        1, ge=1, description="conv: residual blocks per stage.", json_schema_extra=CONV_ONLY
    )
    downsample: bool = Field(
        True, description="conv: downsample 64/96 px frames to 8/6 px.", json_schema_extra=CONV_ONLY
    )
    head_channels: int = Field(
        16,
        ge=1,
        description="conv: channels of value/policy/reward heads.",
        json_schema_extra=CONV_ONLY,
    )
    head_hidden_dim: int = Field(32, ge=1, description="Hidden width of the output heads.")
    norm_type: Literal["BN", "LN"] = Field("BN", description="Normalisation layers.")
    value_support_range: tuple[int, int, int] = Field(
        (-300, 301, 1), description="Categorical value support as (start, stop, step)."
    )
    reward_support_range: tuple[int, int, int] = Field(
        (-300, 301, 1), description="Categorical reward support as (start, stop, step)."
    )
    state_norm: bool = Field(False, description="Min-max normalise latent states (MuZero app. G).")

    @property
    def continuous_actions(self) -> bool:
        """Whether the policy head and dynamics take Box actions (see `ContinuousHead`)."""
        return False


class ProjectionModelConfig(ModelConfig):
    """A network with the SSL consistency projection (the MuZero family)."""

    proj_hidden_dim: int = Field(256, ge=1, description="SSL projection hidden width.")
    proj_out_dim: int = Field(256, ge=1, description="SSL projection output width.")
    pred_hidden_dim: int = Field(128, ge=1, description="SSL predictor hidden width.")
    dynamics_residual: bool = Field(
        True,
        description="mlp: the dynamics adds its input latent before the final ReLU (LightZero "
        "res_connection_in_dynamics: True in the policy defaults of its types without chance "
        "nodes; the chance-node type's section defaults it to False, as LightZero's). The conv "
        "dynamics always adds it, as LightZero's. The parameters are the same either way.",
        json_schema_extra=MLP_ONLY,
    )


class HistoryModelConfig(ProjectionModelConfig):
    """A GRU latent history beside the latent (the full-observation RNN type's model)."""

    rnn_hidden_size: int = Field(
        512,
        ge=1,
        description="Size of the GRU latent history carried along an "
        "unroll, per node in the search and per env in acting.",
    )


class UniZeroModelConfig(ModelConfig):
    """UniZero: the observation encoder's sizes and the transformer world model."""

    world_model: WorldModelConfig = Field(
        default_factory=WorldModelConfig, description="UniZero transformer settings."
    )


class ContinuousHead(Section):
    """The sampled types' policy head: discrete logits, or a tanh-Gaussian for Box actions.

    A mixin of a model config (`class M(ContinuousHead, ProjectionModelConfig)`).
    """

    continuous_action_space: bool = Field(
        False,
        description="sampled types: the env has Box actions of D dimensions (the env's "
        "action_space_size is D); the policy head is a tanh-Gaussian [mu(D), sigma(D)] and the "
        "dynamics reads the action vector (LightZero `continuous_action_space`).",
    )
    sigma_type: Literal["conditioned", "fixed"] = Field(
        "conditioned",
        description="Continuous policy head: sigma learned per state (conditioned) or fixed.",
    )
    fixed_sigma_value: float = Field(
        0.3, gt=0.0, description="Continuous policy head: the sigma of sigma_type fixed."
    )

    @property
    def continuous_actions(self) -> bool:
        """`continuous_action_space`."""
        return self.continuous_action_space


class ValuePrefixConfig(Section):
    """The value-prefix LSTM (EfficientZero's, Ye et al. 2021 §4.2; the types with one read it)."""

    lstm_hidden_size: int = Field(
        512, ge=1, description="Hidden size of the value-prefix LSTM (reference: 512)."
    )
    lstm_horizon_len: int = Field(
        5,
        ge=1,
        description="The LSTM state and the value prefix restart every this many unroll / search "
        "steps from the root (reference: 5).",
    )
