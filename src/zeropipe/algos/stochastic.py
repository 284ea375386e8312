"""The stochastic_muzero family (Antonoglou et al. 2022): afterstates, chance codes, chance nodes.

Runs in: any (network building and acting state in every process; the loss in the driver). The
loss unrolls K steps as MuZero's, each step through an afterstate: φ(s_k, a_k) → as_k, ψ(as_k) →
(Q, σ), e(o_k, o_{k+1}) → c_k (straight-through one-hot), g(as_k, c_k) → (s_{k+1}, r_k), f(s_{k+1}).
Terms as the reference's learner (LightZero `lzero/policy/stochastic_muzero.py` L380-492 at
9f717c8): MuZero's policy, value and reward terms; afterstate policy CE(σ, c_k detached);
afterstate value CE(Q, value target k); commitment, the mean over the C codes of (c_k − e)²; and
with `ssl_loss_weight > 0` the SSL consistency of the predicted state s_{k+1} with the encoded
observation o_{k+1} (L415-431: `project(s_{k+1}, with_grad)` against the detached
`project(h(o_{k+1}))`, masked by the step's mask, summed over the steps). No entropy bonus: the
reference's stochastic learner has none, so `policy_entropy_weight` defaults to 0 here.

Deliberate differences from the reference:
- The chance encoder learns. The reference feeds g `argmax(e)` as an index (L402, L407), and its
  commitment term is MSE(e, ST(e)) where ST is the one-hot with an identity backward (L466;
  `lzero/model/stochastic_muzero_model.py` L795-831): the two gradients cancel, so without true
  labels its encoder gets no gradient from any term and its codes stay those of the random
  initial encoder (`tests/algos/test_stochastic.py` pins this). Here the code enters g with its
  straight-through gradient (the paper's estimator), and the commitment pulls σ = softmax(e)
  towards the detached one-hot; the reference's is over the raw logits.
- The commitment term is per sample (the reference's `MSELoss()`, L273, averages over the batch
  too, so its importance weights multiply a batch mean).
- The search discounts once per env step; the reference's chance tree applies γ at every node,
  afterstates included, i.e. γ² per env step (`mcts/`; the reference's `ctree_stochastic_muzero`).

The steps are weighted by `policy.loss_weighting` (the reference's by default: every step 1,
the gradient of the total scaled by 1/K, L494-495; `appendix_g` is zeropipe's earlier rule), and
the MLP dynamics have no residual by default (`policy.model.dynamics_residual`, the reference's
`StochasticMuZeroModelMLP` default).

With `policy.stochastic.use_true_chance_label` (the reference's
`use_ture_chance_label_in_chance_encoder`) the env's chance outcome of each transition, stored
with the segments, is the code c_k (a one-hot without gradient) in g and in the afterstate policy
target; the encoder still runs and its commitment term pulls it towards the true code (as the
reference's L453).

With `policy.absorbing_terminal` the states past a true terminal are trained to value 0 (their
afterstates' Q too) and the step into them to reward 0 (`losses.with_absorbing_masks`); the
chance terms and the SSL term stay on real transitions.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import numpy as np
import torch
import torch.nn.functional as F
from pydantic import Field

from zeropipe.algos.losses import (
    UnrollInputs,
    UnrollLoss,
    consistency,
    cross_entropy,
    entropy,
    scale_total_gradient,
    with_absorbing_masks,
)
from zeropipe.algos.muzero import MuZeroFamily, MuZeroFamilyConfig, loss_weights
from zeropipe.algos.observation import to_tensor
from zeropipe.algos.search_settings import search_config
from zeropipe.config import ConfigError, PolicyConfig, ProjectionModelConfig, Section
from zeropipe.mcts import SearchConfig
from zeropipe.models import Network, StochasticMuZeroNetwork, logits_to_scalar, scalar_to_two_hot

if TYPE_CHECKING:
    from zeropipe.algos.targets import Targets
    from zeropipe.buffer import ReplayBatch


class StochasticConfig(Section):
    """Stochastic MuZero (stochastic_muzero; Antonoglou et al. 2022): chance codes and the extra
    loss terms, with the reference's defaults."""

    chance_space_size: int = Field(
        2, ge=1, description="C, the codes of the chance encoder and outcomes of a chance node."
    )
    afterstate_policy_loss_weight: float = Field(
        1.0, ge=0.0, description="Weight of the chance prior's cross-entropy to the code."
    )
    afterstate_value_loss_weight: float = Field(
        0.25, ge=0.0, description="Weight of the afterstate value (Q) loss."
    )
    commitment_loss_weight: float = Field(
        1.0,
        ge=0.0,
        description="Weight of the encoder's commitment, the mean over the C codes of "
        "(one_hot - softmax(encoding))^2 (the reference's mean; a sum over codes is this "
        "weight times C).",
    )
    use_true_chance_label: bool = Field(
        False,
        description="Feed the env's true chance outcome (info['chance'], stored with the "
        "segments) to the dynamics as a one-hot code instead of the chance encoder's code "
        "(the reference's use_ture_chance_label_in_chance_encoder); needs an env that reports "
        "info['chance'] and chance_space_size above its largest code.",
    )


class StochasticModelConfig(ProjectionModelConfig):
    """Stochastic MuZero's network settings: the reference's MLP dynamics have no residual."""

    dynamics_residual: bool = Field(
        False,
        description="mlp: the dynamics (both, afterstate and chance) add their input latent "
        "before the final ReLU. False is the reference's: its stochastic_muzero policy sets no "
        "res_connection_in_dynamics, so StochasticMuZeroModelMLP's default False applies "
        "(model/stochastic_muzero_model_mlp.py:38). The conv dynamics always adds it, as the "
        "reference's. The parameters are the same either way.",
    )


class StochasticMuZeroConfig(MuZeroFamilyConfig):
    """`policy.type: stochastic_muzero`."""

    # options added later with a default that changes what a run does, and what a run's
    # config.yaml written before each existed meant (config/versions.py reads them)
    OLDER_VALUES: ClassVar[dict[str, Any]] = {
        "loss_weighting": "appendix_g",
        "model.dynamics_residual": True,
        **PolicyConfig.OLDER_VALUES,
    }

    REFERENCE_ADAMW: ClassVar[str | None] = None  # the reference offers SGD and Adam only

    type: Literal["stochastic_muzero"] = Field(
        "stochastic_muzero", description="Policy type; see docs/policies/stochastic_muzero.md."
    )
    model: StochasticModelConfig = Field(
        default_factory=StochasticModelConfig, description="Network settings."
    )
    stochastic: StochasticConfig = Field(
        default_factory=StochasticConfig, description="Chance codes and loss weights."
    )
    policy_entropy_weight: float = Field(
        0.0,
        ge=0.0,
        description="Entropy bonus weight (the reference's stochastic_muzero learner has none).",
    )

    def search_config(self, num_simulations: int) -> SearchConfig:
        """PUCT's common settings and the chance nodes' outcome count."""
        return search_config(
            self, num_simulations, chance_space_size=self.stochastic.chance_space_size
        )


@dataclass(frozen=True)
class ChanceUnrollInputs(UnrollInputs):
    """`UnrollInputs` plus the env's true chance outcomes of the K unroll transitions."""

    chance_labels: torch.Tensor | None = None  # [B, K] int64 codes in [0, C)


class StochasticFamily(MuZeroFamily):
    """Stochastic MuZero's network, its K-step loss with the chance terms, context-free roots."""

    def build_network(
        self, input_shape: tuple[int, ...], num_actions: int, cfg: StochasticMuZeroConfig
    ) -> StochasticMuZeroNetwork:
        """StochasticMuZeroNetwork with `policy.stochastic.chance_space_size` codes."""
        return StochasticMuZeroNetwork(
            input_shape,
            num_actions,
            cfg.stochastic.chance_space_size,
            cfg.model,
            with_projection=cfg.ssl_loss_weight > 0,
        )

    def keeps_chance_labels(self, cfg: StochasticMuZeroConfig) -> bool:
        """With `use_true_chance_label` the loss reads the env's chance outcomes."""
        return cfg.stochastic.use_true_chance_label

    def needs_obs_seq(self, cfg: StochasticMuZeroConfig) -> bool:
        """The chance encoder reads every pair of consecutive observations."""
        return True

    def loss(
        self,
        net: Network,
        target_net: Network,
        inputs: UnrollInputs,
        cfg: StochasticMuZeroConfig,
        train_iter: int,
    ) -> UnrollLoss:
        """`stochastic_unroll_loss` with the config's weights."""
        return stochastic_unroll_loss(net, inputs, cfg)

    def unroll_inputs(
        self, batch: ReplayBatch, targets: Targets, frame_ndim: int, cfg: StochasticMuZeroConfig
    ) -> UnrollInputs:
        """MuZero's inputs; with `use_true_chance_label` also the batch's chance labels."""
        inputs = super().unroll_inputs(batch, targets, frame_ndim, cfg)
        if not cfg.stochastic.use_true_chance_label:
            return inputs
        labels = true_chance_labels(batch, cfg.stochastic.chance_space_size)
        base = {f.name: getattr(inputs, f.name) for f in fields(inputs)}
        return ChanceUnrollInputs(**base, chance_labels=to_tensor(labels, cfg.device))


def true_chance_labels(batch: ReplayBatch, chance_space_size: int) -> np.ndarray:
    """The batch's stored chance labels, checked against C.

    Returns:
        int64 chance codes.  # [B, K]

    Raises:
        ConfigError: the env stored no labels, or a label does not fit `chance_space_size`.
    """
    labels = batch.chance_labels
    if labels is None:
        raise ConfigError(
            "policy.stochastic.use_true_chance_label is set but the replay data has no chance "
            "labels: the env does not report info['chance'] (zeropipe/2048-v0 does); set "
            "use_true_chance_label: false to learn the chance codes with the encoder"
        )
    if labels.size and (labels.min() < 0 or labels.max() >= chance_space_size):
        raise ConfigError(
            f"the env reported chance label {int(labels.max())} (min {int(labels.min())}) but "
            f"policy.stochastic.chance_space_size is {chance_space_size}; with "
            "use_true_chance_label the codes must lie in [0, chance_space_size): raise it"
        )
    return labels


def stochastic_unroll_loss(
    net: StochasticMuZeroNetwork, inp: UnrollInputs, cfg: StochasticMuZeroConfig
) -> UnrollLoss:
    """Per-sample loss of K steps through afterstates (see the module docstring).

    Steps are weighted as `losses.unroll_loss` under `policy.loss_weighting`: `reference` sums
    every step's terms with weight 1 (the chance terms of steps 1..K too) and scales the gradient
    of `per_sample` by 1/K (the reference's hook, L494-495), reporting the unscaled sums;
    `appendix_g` scales the step terms by 1/K and halves the latent's gradient at the entry of
    each step. The SSL term is summed over the steps in both. Masks drop steps past the stored
    data (absorbing states excepted). `ChanceUnrollInputs` with labels replace the encoder's code
    by the true one.
    """
    w, sw = loss_weights(cfg), cfg.stochastic
    labels = inp.chance_labels if isinstance(inp, ChanceUnrollInputs) else None  # [B, K]
    k_steps = inp.actions.shape[1]
    appendix_g = w.weighting == "appendix_g"
    step_div = k_steps if appendix_g else 1  # term / 1 is the term exactly
    real = inp.reward_mask  # [B, K] the stored transitions: chance and SSL terms
    inp, reward_mask = with_absorbing_masks(inp)
    value_cat = scalar_to_two_hot(inp.value_target, net.value_support)  # [B, K+1, S_v]
    reward_cat = scalar_to_two_hot(inp.reward_target, net.reward_support)  # [B, K, S_r]
    out = net.initial_inference(inp.root_obs)
    root_value = logits_to_scalar(out.value_logits.detach(), net.value_support)
    terms = _prediction(out, inp, value_cat, 0)
    for name in ("reward_loss", "afterstate_policy_loss", "afterstate_value_loss"):
        terms[name] = torch.zeros_like(root_value)
    terms["commitment_loss"] = torch.zeros_like(root_value)
    ssl = torch.zeros_like(root_value)
    latent = out.latent
    for k in range(k_steps):
        if appendix_g:
            latent = latent * 0.5 + latent.detach() * 0.5
        after = net.afterstate_inference(latent, inp.actions[:, k])
        encoding, code = net.chance_code(inp.obs_seq[:, k], inp.obs_seq[:, k + 1])  # [B, C]
        if labels is not None:
            code = F.one_hot(labels[:, k], encoding.shape[-1]).to(encoding.dtype)
        out = net.chance_inference(after.latent, code)
        latent = out.latent
        step = _prediction(out, inp, value_cat, k + 1)
        step["reward_loss"] = cross_entropy(out.reward_logits, reward_cat[:, k]) * reward_mask[:, k]
        step["afterstate_policy_loss"] = (
            cross_entropy(after.policy_logits, code.detach()) * real[:, k]
        )
        step["afterstate_value_loss"] = (
            cross_entropy(after.value_logits, value_cat[:, k]) * inp.value_mask[:, k]
        )
        step["commitment_loss"] = ((code.detach() - encoding) ** 2).mean(dim=-1) * real[:, k]
        for name, term in step.items():
            terms[name] = terms[name] + term / step_div
        if w.ssl > 0:
            ssl = ssl + consistency(net, latent, inp.obs_seq[:, k + 1]) * real[:, k]
    per_sample = (
        w.policy * terms["policy_loss"]
        + w.value * terms["value_loss"]
        + w.reward * terms["reward_loss"]
        - w.entropy * terms["entropy"]
        + sw.afterstate_policy_loss_weight * terms["afterstate_policy_loss"]
        + sw.afterstate_value_loss_weight * terms["afterstate_value_loss"]
        + sw.commitment_loss_weight * terms["commitment_loss"]
        + w.ssl * ssl
    )
    if not appendix_g:
        per_sample = scale_total_gradient(per_sample, 1.0 / k_steps)
    if w.ssl > 0:
        terms["ssl_loss"] = ssl
    means = {name: t.detach().mean() for name, t in terms.items()}
    return UnrollLoss(per_sample=per_sample, root_value=root_value, terms=means)


def _prediction(out, inp: UnrollInputs, value_cat: torch.Tensor, k: int) -> dict[str, torch.Tensor]:
    """Policy, value and entropy terms of unroll step k ([B] each, masked)."""
    policy_mask = inp.policy_mask[:, k]
    return {
        "policy_loss": cross_entropy(out.policy_logits, inp.policy_target[:, k]) * policy_mask,
        "value_loss": cross_entropy(out.value_logits, value_cat[:, k]) * inp.value_mask[:, k],
        "entropy": entropy(out.policy_logits) * policy_mask,
    }


STOCHASTIC = StochasticFamily()
