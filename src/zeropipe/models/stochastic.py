"""The Stochastic MuZero network (Antonoglou et al. 2022): afterstates, chance codes, chance prior.

Runs in: any (collector / evaluator inside the chance search; the learner over K unroll steps).
Built from the MuZero pieces: the representation h and prediction f of `MuZeroNetwork`, an
afterstate dynamics φ(state, action) → afterstate, an afterstate prediction ψ(afterstate) → (value
Q, prior σ over the C chance codes), the dynamics g(afterstate, chance code) → (state, reward), and
a chance encoder e(o_t, o_{t+1}) → code with a straight-through one-hot.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from zeropipe.config import ModelConfig
from zeropipe.models.dynamics import build_dynamics
from zeropipe.models.encoders import build_encoder
from zeropipe.models.heads import Prediction, build_head
from zeropipe.models.network import MuZeroNetwork, NetworkOutput

# Padding logit of the search's max(A, C)-wide prior rows: exp(-1e9) is exactly 0.
_PAD_LOGIT = -1e9


class ChanceEncoder(nn.Module):
    """e(o_t, o_{t+1}): the encoder family of the model over both stacked observations, then a
    head to C logits; the code is the one-hot of their argmax with the softmax's gradient."""

    def __init__(
        self, input_shape: tuple[int, ...], kind: str, chance_space_size: int, cfg: ModelConfig
    ) -> None:
        super().__init__()
        pair_shape = (2 * input_shape[0], *input_shape[1:])
        self.body = build_encoder(pair_shape, kind, cfg)
        self.head = build_head(self.body.latent_shape, chance_space_size, cfg)

    def forward(self, obs: Tensor, next_obs: Tensor) -> tuple[Tensor, Tensor]:
        """obs, next_obs [B, *input] -> (softmax encoding σ [B, C], straight-through code [B, C]).

        code = one_hot(argmax σ) + σ - stop_gradient(σ): its value is the one-hot, its gradient
        that of σ (the paper's straight-through estimator).
        """
        probs = F.softmax(self.head(self.body(torch.cat((obs, next_obs), dim=1))), dim=-1)
        one_hot = F.one_hot(probs.argmax(dim=-1), probs.shape[-1]).to(probs.dtype)
        return probs, one_hot + probs - probs.detach()


class StochasticMuZeroNetwork(MuZeroNetwork):
    """MuZero's h and f with φ, ψ, g over chance codes and the chance encoder e.

    `dynamics` takes a chance code (C planes) instead of an action; `recurrent_inference` is one
    full model step through the most likely chance outcome, `search_step` the chance search's
    two-kind step.
    """

    def __init__(
        self,
        input_shape: tuple[int, ...],
        action_space_size: int,
        chance_space_size: int,
        cfg: ModelConfig,
        *,
        with_projection: bool = True,
    ) -> None:
        super().__init__(input_shape, action_space_size, cfg, with_projection=with_projection)
        self.chance_space_size = chance_space_size
        self.dynamics = build_dynamics(self.latent_shape, chance_space_size, cfg)
        self.afterstate_dynamics = build_dynamics(self.latent_shape, action_space_size, cfg)
        self.afterstate_prediction = Prediction(
            self.latent_shape, chance_space_size, self.value_support.size, cfg
        )
        self.chance_encoder = ChanceEncoder(self.input_shape, self.kind, chance_space_size, cfg)

    def afterstate_inference(self, latent: Tensor, action: Tensor) -> NetworkOutput:
        """φ then ψ: afterstates [B, *latent], Q logits [B, S_v], chance logits [B, C] (in the
        policy slot) and zero-reward logits."""
        afterstate = self._normalised(self.afterstate_dynamics(latent, action))
        value_logits, chance_logits = self.afterstate_prediction(afterstate)
        reward_logits = self._initial_reward_logits.expand(latent.shape[0], -1)
        return NetworkOutput(afterstate, value_logits, reward_logits, chance_logits)

    def chance_inference(self, afterstate: Tensor, code: Tensor) -> NetworkOutput:
        """g then f from afterstates and chance codes (int64 [B] or one-hot float [B, C])."""
        return super().recurrent_inference(afterstate, code)

    def recurrent_inference(self, latent: Tensor, action: Tensor) -> NetworkOutput:
        """A full step through the most likely chance outcome (the search uses `search_step`)."""
        after = self.afterstate_inference(latent, action)
        return self.chance_inference(after.latent, after.policy_logits.argmax(dim=-1))

    def search_step(self, latent: Tensor, code: Tensor, from_chance: Tensor) -> NetworkOutput:
        """The chance search's step, each kind of row in one batched call.

        Args:
            latent: parent latents (states or afterstates).  # [B, *latent_shape]
            code: actions (rows from a state) or chance codes (rows from an afterstate).  # [B]
            from_chance: True where the parent is an afterstate.  # [B] bool

        Returns:
            Children: latents, values, rewards (0 for afterstates) and prior logits (policy or
            chance prior) padded to max(A, C) with a very low logit.  # [B, max(A, C)]
        """
        width = max(self.action_space_size, self.chance_space_size)
        value = latent.new_empty(latent.shape[0], self.value_support.size)
        reward = latent.new_empty(latent.shape[0], self.reward_support.size)
        logits = latent.new_full((latent.shape[0], width), _PAD_LOGIT)
        next_latent = torch.empty_like(latent)
        for rows, step in (
            (from_chance.nonzero().squeeze(1), self.chance_inference),
            ((~from_chance).nonzero().squeeze(1), self.afterstate_inference),
        ):
            if rows.numel() == 0:
                continue
            out = step(latent[rows], code[rows])
            next_latent[rows] = out.latent
            value[rows] = out.value_logits
            reward[rows] = out.reward_logits
            logits[rows, : out.policy_logits.shape[1]] = out.policy_logits
        return NetworkOutput(next_latent, value, reward, logits)

    def chance_code(self, obs: Tensor, next_obs: Tensor) -> tuple[Tensor, Tensor]:
        """The chance encoder on consecutive stacked observations (see `ChanceEncoder`)."""
        if obs.dtype == torch.uint8:
            obs, next_obs = obs.float().div_(255.0), next_obs.float().div_(255.0)
        elif not obs.is_floating_point():
            obs, next_obs = obs.float(), next_obs.float()
        return self.chance_encoder(obs, next_obs)
