"""The EfficientZero network: MuZero's h, g, f with a value-prefix LSTM in place of the reward head.

Runs in: any (collector / evaluator inside the search; the driver for targets and the loss).
EfficientZero (Ye et al. 2021 §4.2; LightZero `EfficientZeroModel`): the dynamics' reward head
becomes an LSTM whose output predicts the value prefix, the sum of rewards since its state was last
reset. Its `latent` is the packed search state (`PrefixStateLayout`): the root has zero LSTM state,
zero prefix and depth 0, and a step that reaches a depth divisible by `lstm_horizon_len` zeroes
the state its children start from (LightZero `reset_idx = search_len % lstm_horizon_len == 0`;
its learner's `(k+1) % lstm_horizon_len == 0`) — the same rule in the search and in the unroll.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from zeropipe.config import ModelConfig, ValuePrefixConfig
from zeropipe.models.network import MuZeroNetwork, NetworkOutput
from zeropipe.models.support import logits_to_scalar
from zeropipe.models.value_prefix import PrefixState, PrefixStateLayout, ValuePrefixHead


class EfficientZeroNetwork(MuZeroNetwork):
    """MuZeroNetwork whose `reward_head` is a `ValuePrefixHead` and whose latent is packed.

    `recurrent_inference` returns the *value prefix* logits as `reward_logits`; the transition
    reward the search backs up is `transition_reward` (child prefix − parent prefix, or the child
    prefix when the parent was reset).

    Attributes:
        horizon: lstm_horizon_len.
        layout: packing of (latent, h, c, prefix, depth) into one row.
    """

    def __init__(
        self,
        input_shape: tuple[int, ...],
        action_space_size: int,
        cfg: ModelConfig,
        prefix_cfg: ValuePrefixConfig,
        *,
        with_projection: bool = True,
    ) -> None:
        """Build the network.

        Args:
            input_shape: the stacked model input without the batch axis.
            action_space_size: A.
            cfg: model sizes (as MuZeroNetwork).
            prefix_cfg: LSTM hidden size and reset horizon.
            with_projection: build the SSL projection.
        """
        self.lstm_hidden_size = prefix_cfg.lstm_hidden_size
        self.horizon = prefix_cfg.lstm_horizon_len
        super().__init__(input_shape, action_space_size, cfg, with_projection=with_projection)
        self.layout = PrefixStateLayout(self.latent_shape, self.lstm_hidden_size)

    def _build_reward_head(self, cfg: ModelConfig) -> nn.Module:
        return ValuePrefixHead(
            self.latent_shape, self.reward_support.size, self.lstm_hidden_size, cfg
        )

    def _root_state(self, latent: Tensor) -> Tensor:
        """The packed root state [B, E + 2H + 2] (zero LSTM, prefix 0): `initial_inference`'s
        latent."""
        return self.layout.root(latent)

    def recurrent_inference(self, latent: Tensor, action: Tensor) -> NetworkOutput:
        """One step of g and f from packed states.

        Args:
            latent: packed parent states.  # [B, E + 2H + 2]
            action: action indices, int64.  # [B]

        Returns:
            Packed child states (LSTM state zeroed where the child's depth is a multiple of the
            horizon), value-prefix logits as `reward_logits`, value and policy logits.
        """
        parent = self.layout.unpack(latent)
        next_latent = self._normalised(self.dynamics(parent.latent, action))
        prefix_logits, h, c = self.reward_head(next_latent, parent.h, parent.c)
        value_logits, policy_logits = self.prediction(next_latent)
        depth = parent.depth + 1.0
        keep = (torch.remainder(depth, self.horizon) != 0).to(h.dtype)[:, None]  # [B, 1]
        prefix = logits_to_scalar(prefix_logits.detach().float(), self.reward_support)
        child = PrefixState(next_latent, h * keep, c * keep, prefix, depth)
        return NetworkOutput(self.layout.pack(child), value_logits, prefix_logits, policy_logits)

    def transition_reward(self, latent: Tensor, out: NetworkOutput) -> Tensor:
        """Reward of the steps parent `latent` → `out.latent` from their value prefixes.

        child prefix − parent prefix, unless the parent was reset (the root, or a depth that is a
        multiple of the horizon): then the child's prefix (LightZero `is_reset`).

        Returns:
            Rewards.  # [B]
        """
        parent, child = self.layout.unpack(latent), self.layout.unpack(out.latent)
        reset = torch.remainder(parent.depth, self.horizon) == 0
        return child.prefix - torch.where(reset, torch.zeros_like(parent.prefix), parent.prefix)

    def project(self, latent: Tensor, with_grad: bool) -> Tensor:
        """SSL embedding of the latent part of packed states [B, E + 2H + 2] → [B, proj_out]."""
        return super().project(self.layout.unpack(latent).latent, with_grad)
