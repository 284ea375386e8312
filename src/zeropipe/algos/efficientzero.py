"""The efficientzero family: MuZero's unroll loss on value-prefix targets, with SSL consistency.

Runs in: any (network building and acting state in every process; the loss in the driver).
EfficientZero (Ye et al. 2021): the network predicts value prefixes through an LSTM that restarts
every `lstm_horizon_len` steps (`models/efficientzero.py`), so the reward term of `unroll_loss`
becomes a value-prefix cross-entropy against `value_prefix_targets`; the consistency term and the
policy and value terms are MuZero's. The reference has no entropy term (its default weight is 0
for this type, `EfficientZeroConfig`). The steps are weighted by `policy.loss_weighting`: the
reference's by default (no gradient scaling inside its unroll, policy/efficientzero.py:389-457;
the 1/K hook on the total loss, :478-479); `appendix_g` halves the gradient of the whole packed
state (the latent and the LSTM state) at each step's entry (MuZero app. G). See docs/parity.md S9.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, ClassVar, Literal

import torch
import torch.nn.functional as F
from pydantic import Field

from zeropipe.algos.losses import UnrollInputs, unroll_loss
from zeropipe.algos.muzero import MuZeroFamily, MuZeroFamilyConfig, loss_weights
from zeropipe.config import PolicyConfig, ValuePrefixConfig
from zeropipe.models import EfficientZeroNetwork


class EfficientZeroFamilyConfig(MuZeroFamilyConfig):
    """The options of the value-prefix types: the LSTM, and the reference's SSL weight 2 and no
    entropy term (LightZero's `efficientzero` defaults)."""

    value_prefix: ValuePrefixConfig = Field(
        default_factory=ValuePrefixConfig, description="Value-prefix LSTM settings."
    )
    ssl_loss_weight: float = Field(
        2.0, ge=0.0, description="Self-supervised consistency loss weight (0 disables)."
    )


class EfficientZeroConfig(EfficientZeroFamilyConfig):
    """`policy.type: efficientzero` (Ye et al. 2021)."""

    # options added later with a default that changes what a run does, and what a run's
    # config.yaml written before each existed meant (config/versions.py reads them)
    OLDER_VALUES: ClassVar[dict[str, Any]] = {
        "loss_weighting": "appendix_g",
        **PolicyConfig.OLDER_VALUES,
    }

    type: Literal["efficientzero"] = Field(
        "efficientzero", description="Policy type; see docs/policies/efficientzero.md."
    )
    policy_entropy_weight: float = Field(
        0.0, ge=0.0, description="Entropy bonus weight (the reference's efficientzero: none)."
    )


def value_prefix_targets(rewards: torch.Tensor, horizon: int) -> torch.Tensor:
    """Undiscounted value prefixes that restart every `horizon` unroll steps, for every sample.

    vp[:, k] = Σ_{j=H·⌊k/H⌋}^{k} r[:, j]: unroll step k (the action a_k) predicts the rewards since
    the last restart, and the network's LSTM starts step k from a zero state exactly when
    k % H == 0, i.e. after step k−1 with (k−1+1) % H == 0 (LightZero learner). The reference buffer
    (`EfficientZeroGameBuffer`) keeps one `horizon_id` counter across the samples of a batch, so
    for every sample after the first its restarts drift away from the learner's; here the restart
    positions are the same for every sample by construction (docs/parity.md, efficientzero).

    Args:
        rewards: per-step reward targets (0 past the data, masked by the caller).  # [B, K]
        horizon: lstm_horizon_len H.

    Returns:
        Value-prefix targets.  # [B, K]
    """
    b, k = rewards.shape
    padded = F.pad(rewards, (0, (-k) % horizon))  # [B, ceil(K/H)·H]
    return padded.view(b, -1, horizon).cumsum(dim=2).view(b, -1)[:, :k]


class EfficientZeroFamily(MuZeroFamily):
    """MuZero's family with the value-prefix network and targets."""

    def build_network(
        self, input_shape: tuple[int, ...], num_actions: int, cfg: EfficientZeroFamilyConfig
    ) -> EfficientZeroNetwork:
        """EfficientZeroNetwork; the SSL projection only when its loss is on."""
        return EfficientZeroNetwork(
            input_shape,
            num_actions,
            cfg.model,
            cfg.value_prefix,
            with_projection=cfg.ssl_loss_weight > 0,
        )

    def loss(
        self, net, target_net, inputs: UnrollInputs, cfg: EfficientZeroFamilyConfig, train_iter: int
    ):
        """`unroll_loss` with value-prefix targets in place of the per-step rewards.

        Returns:
            UnrollLoss whose reward term is reported as `value_prefix_loss`.
        """
        prefix = value_prefix_targets(inputs.reward_target, cfg.value_prefix.lstm_horizon_len)
        inputs = replace(inputs, reward_target=prefix)
        loss = unroll_loss(net, inputs, loss_weights(cfg), self.policy_terms(cfg))
        terms = dict(loss.terms)
        terms["value_prefix_loss"] = terms.pop("reward_loss")
        return replace(loss, terms=terms)


EFFICIENTZERO = EfficientZeroFamily()
