"""The MuZero network: representation h, dynamics g + reward head, prediction f, SSL projection.

Runs in: any (collector / evaluator inside MCTS, one batched call per simulation; the learner over
K unroll steps). One class serves vector and image observations: the encoder family is
`ModelConfig.kind`, and dynamics, heads and projection follow the latent's shape.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn

from zeropipe.config import ModelConfig
from zeropipe.models.blocks import has_batch_norm
from zeropipe.models.dynamics import build_dynamics
from zeropipe.models.encoders import build_encoder, resolve_kind
from zeropipe.models.heads import Prediction, build_head
from zeropipe.models.projection import Projection
from zeropipe.models.support import (
    DiscreteSupport,
    logits_to_scalar,
    logits_to_scalars,
    scalar_to_two_hot,
)

# Stands in for log(0) in the initial reward logits: exp(-1e4) is exactly 0 in float32 (so softmax
# gives the exact two-hot of 0), while the logits stay finite, so 0·logit terms in a cross-entropy
# are 0, not NaN.
_LOG_ZERO = -1e4
# Keeps min-max normalisation finite for a constant latent (e.g. all units dead after the ReLU).
_MIN_MAX_EPS = 1e-8


@dataclass(frozen=True, eq=False)
class NetworkOutput:
    """What one inference call returns.

    Attributes:
        latent: latent states (min-max normalised when `state_norm`).  # [B, *latent_shape]
        value_logits: categorical value over the value support.  # [B, S_v]
        reward_logits: categorical reward over the reward support; after `initial_inference` the
            log of the two-hot of 0 (with log 0 taken as -1e4), a broadcast view.  # [B, S_r]
        policy_logits: unnormalised action log-probabilities.  # [B, A]
    """

    latent: Tensor  # [B, *latent_shape]
    value_logits: Tensor  # [B, S_v]
    reward_logits: Tensor  # [B, S_r]
    policy_logits: Tensor  # [B, A]


def min_max_normalise(latent: Tensor) -> Tensor:
    """Scale each sample's latent to [0, 1] (MuZero app. G: the same range as the action input).

    Args:
        latent: latent states.  # [B, ...]

    Returns:
        The normalised latents, same shape.
    """
    flat = latent.flatten(1)  # [B, E]
    low, high = torch.aminmax(flat, dim=1, keepdim=True)  # [B, 1] each
    return ((flat - low) / (high - low + _MIN_MAX_EPS)).view_as(latent)


class MuZeroNetwork(nn.Module):
    """MuZero's h, g, f (Schrittwieser et al. 2020) with categorical value and reward heads.

    Attributes:
        kind: the resolved encoder family, "mlp" or "conv".
        latent_shape: one latent state without the batch axis: (E,) or (C, H, W).
        value_support: atoms of the value head (S_v).
        reward_support: atoms of the reward head (S_r).
    """

    _initial_reward_logits: Tensor  # [S_r]
    # recurrent_inference and transition_reward are pure functions of their inputs (no caches):
    # the search may trace them into one graph (algos/traced_step.py)
    TRACEABLE_STEP = True

    def __init__(
        self,
        input_shape: tuple[int, ...],
        action_space_size: int,
        cfg: ModelConfig,
        *,
        with_projection: bool = True,
    ) -> None:
        """Build the network.

        Args:
            input_shape: the stacked model input without the batch axis: (S·O,) for vectors or
                (S·C, H, W) for images.
            action_space_size: A, the number of discrete actions.
            cfg: model sizes; `cfg.kind` "auto" picks mlp for 1-d and conv for 3-d inputs.
            with_projection: build the SSL projection (about 1M parameters for a 64×8×8 latent);
                pass False when the consistency loss is off to keep snapshots small.

        Raises:
            ConfigError: `cfg.kind` cannot encode `input_shape`.
        """
        super().__init__()
        self.input_shape = tuple(input_shape)
        self.action_space_size = action_space_size
        self.state_norm = cfg.state_norm
        self.kind = resolve_kind(self.input_shape, cfg.kind)
        self.value_support = DiscreteSupport(*cfg.value_support_range)
        self.reward_support = DiscreteSupport(*cfg.reward_support_range)
        self.representation = build_encoder(self.input_shape, self.kind, cfg)
        self.latent_shape: tuple[int, ...] = self.representation.latent_shape
        self.dynamics = build_dynamics(self.latent_shape, action_space_size, cfg)
        self.reward_head = self._build_reward_head(cfg)
        self.prediction = Prediction(
            self.latent_shape, action_space_size, self.value_support.size, cfg
        )
        self.projection = Projection(self.latent_shape, cfg) if with_projection else None
        self._heads_batch_norm = has_batch_norm(self.prediction)
        zero_reward = scalar_to_two_hot(torch.zeros(()), self.reward_support)  # [S_r]
        self.register_buffer(
            "_initial_reward_logits", zero_reward.log().clamp_min(_LOG_ZERO), persistent=False
        )

    def initial_inference(self, obs: Tensor) -> NetworkOutput:
        """Encode observations and predict: h then f.

        Args:
            obs: stacked observations; uint8 is scaled by 1/255, other integer types are cast to
                float, float inputs are used as they are.  # [B, *input_shape]

        Returns:
            Root latents, value and policy logits, and the zero-reward logits.
        """
        latent = self.encode(obs)
        value_logits, policy_logits = self.prediction(latent)
        reward_logits = self.zero_reward_logits(obs.shape[0])
        return NetworkOutput(self._root_state(latent), value_logits, reward_logits, policy_logits)

    def root_latent(self, obs: Tensor) -> Tensor:
        """`initial_inference(obs).latent`, for a caller that reads nothing else (the SSL
        target branch): h alone, unless the prediction heads hold a train-mode BatchNorm, whose
        running statistics the full call updates with these frames, as the reference's does.
        On Pong MuZero (LN) the heads were ~15% of the five target encodes of a learner step."""
        if self.training and self._heads_batch_norm:
            return self.initial_inference(obs).latent
        return self._root_state(self.encode(obs))

    def _root_state(self, latent: Tensor) -> Tensor:
        """The search state of a root from its encoded latent (a family may pack more in)."""
        return latent

    def recurrent_inference(self, latent: Tensor, action: Tensor) -> NetworkOutput:
        """Step the latent with an action and predict: g (next latent, reward) then f.

        Args:
            latent: latent states.  # [B, *latent_shape]
            action: action indices, int64.  # [B]

        Returns:
            Next latents (the reward and prediction heads read the normalised latent), reward,
            value and policy logits.
        """
        next_latent = self.next_latent(latent, action)
        reward_logits = self.reward_head(next_latent)
        value_logits, policy_logits = self.prediction(next_latent)
        return NetworkOutput(next_latent, value_logits, reward_logits, policy_logits)

    def encode(self, obs: Tensor) -> Tensor:
        """h alone: observations [B, *input_shape] (any dtype, see `initial_inference`) ->
        (normalised) latents [B, *latent_shape]."""
        if obs.dtype == torch.uint8:
            obs = obs.float().div_(255.0)
        elif not obs.is_floating_point():
            obs = obs.float()
        return self._normalised(self.representation(obs))

    def next_latent(self, latent: Tensor, action: Tensor) -> Tensor:
        """g's latent alone: latents [B, *latent_shape], int64 actions [B] -> next latents."""
        return self._normalised(self.dynamics(latent, action))

    def zero_reward_logits(self, batch_size: int) -> Tensor:
        """The reward logits of a root (the two-hot of 0), a broadcast view.  # [B, S_r]"""
        return self._initial_reward_logits.expand(batch_size, -1)

    def transition_reward(self, latent: Tensor, out: NetworkOutput) -> Tensor:
        """Scalar reward of the steps from `latent` that `recurrent_inference` turned into `out`.

        Args:
            latent: the parent latents the step started from.  # [B, *latent_shape]
            out: the step's output.

        Returns:
            Rewards, float32.  # [B]
        """
        return logits_to_scalar(out.reward_logits.float(), self.reward_support)

    def search_scalars(self, latent: Tensor, out: NetworkOutput) -> tuple[Tensor, Tensor]:
        """`transition_reward` and the value head's scalar of a search step, float32. Where the
        reward is this class's (the reward head's scalar) the two are decoded together
        (`logits_to_scalars`: the same scalars, with half the decoding's ops; the traced search
        step calls this, algos/traced_step.py); a subclass's own reward (EfficientZero's value
        prefixes) is decoded its way.

        Returns:
            Rewards and values.  # [B], [B]
        """
        if type(self).transition_reward is not MuZeroNetwork.transition_reward:
            value = logits_to_scalar(_float(out.value_logits), self.value_support)
            return _float(self.transition_reward(latent, out)), value
        reward_logits, value_logits = _float(out.reward_logits), _float(out.value_logits)
        return logits_to_scalars(
            reward_logits, self.reward_support, value_logits, self.value_support
        )

    def project(self, latent: Tensor, with_grad: bool) -> Tensor:
        """SSL embedding of latents (EfficientZero consistency loss).

        Args:
            latent: latent states.  # [B, *latent_shape]
            with_grad: True: projection + predictor (online branch); False: projection only,
                detached (target branch).

        Returns:
            Embeddings.  # [B, proj_out_dim]

        Raises:
            RuntimeError: the network was built with `with_projection=False`.
        """
        if self.projection is None:
            raise RuntimeError(
                "MuZeroNetwork.project called on a network built with with_projection=False; "
                "build it with with_projection=True when ssl_loss_weight > 0"
            )
        return self.projection(latent, with_grad)

    def clear_caches(self) -> None:
        """Nothing is cached: every inference is computed from its inputs."""

    def _build_reward_head(self, cfg: ModelConfig) -> nn.Module:
        """g's reward head on the next latent (a subclass may predict something else)."""
        return build_head(self.latent_shape, self.reward_support.size, cfg)

    def _normalised(self, latent: Tensor) -> Tensor:
        return min_max_normalise(latent) if self.state_norm else latent


def _float(x: Tensor) -> Tensor:
    """`x` as float32, recording no op in a trace where it is float32 already."""
    return x if x.dtype == torch.float32 else x.float()
