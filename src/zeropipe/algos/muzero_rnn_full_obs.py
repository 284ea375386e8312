"""The muzero_rnn_full_obs family: MuZero with a GRU in the dynamics, trained with teacher forcing.

Runs in: any (network building and acting state in every process; the loss in the driver).
LightZero `MuZeroRNNFullObsPolicy` (opendilab/LightZero@9f717c8,
`lzero/policy/muzero_rnn_full_obs.py`): the unroll feeds the dynamics the
*encoded true* observation of every step (teacher forcing) while the GRU history runs along the
stored actions; value and policy are read from the true latent with the history, the reward from the
dynamics' GRU output, and an SSL consistency loss pulls the predicted next latent towards the
encoded one (`history_loss`; the network is `models/history_network.py`). Acting carries each env's
history along the actions actually taken (the chosen child's history, `carried_roots`) and restarts
it at an episode start and every `context_length_init` steps, as the reference's model does; the
root latent is always the encoded observation. Reanalysis searches without root noise
(`puct_quiet_reanalysis`).
"""

from __future__ import annotations

from dataclasses import replace
from typing import ClassVar, Literal

import numpy as np
import torch
from pydantic import Field

from zeropipe.algos.carried_roots import CarriedRootOptions, CarriedRoots
from zeropipe.algos.losses import (
    UnrollInputs,
    UnrollLoss,
    _prediction_terms,
    cross_entropy,
    negative_cosine,
    with_absorbing_masks,
)
from zeropipe.algos.muzero import MuZeroFamily, MuZeroFamilyConfig, loss_weights
from zeropipe.config import HistoryModelConfig
from zeropipe.mcts import (
    SEARCH_POLICIES,
    ActingParams,
    PolicyOutput,
    RecurrentFn,
    SearchConfig,
    SearchRoots,
)
from zeropipe.mcts.policies import puct_policy
from zeropipe.models import HistoryNetwork, NetworkOutput, logits_to_scalar, scalar_to_two_hot


class MuZeroRNNFullObsConfig(CarriedRootOptions, MuZeroFamilyConfig):
    """`policy.type: muzero_rnn_full_obs`."""

    LIGHTZERO_MODEL_TYPE: ClassVar[str | None] = "rnn_full_obs"

    type: Literal["muzero_rnn_full_obs"] = Field(
        "muzero_rnn_full_obs", description="Policy type; see docs/policies/muzero_rnn_full_obs.md."
    )
    model: HistoryModelConfig = Field(
        default_factory=HistoryModelConfig, description="Network settings."
    )
    loss_weighting: Literal["reference"] = Field(
        "reference",
        description="The teacher-forced loss (`history_loss`) sums every step with weight 1 and "
        "no gradient scaling, as the reference's (policy/muzero_rnn_full_obs.py:449-455, no "
        "1/K hook); appendix_g is not offered for this type.",
    )
    policy_entropy_weight: float = Field(
        0.0,
        ge=0.0,
        description="Entropy bonus weight (the reference's muzero_rnn_full_obs learner has none).",
    )


def history_loss(net: HistoryNetwork, inp: UnrollInputs, cfg: MuZeroRNNFullObsConfig) -> UnrollLoss:
    """Per-sample teacher-forced unroll loss (the reference's `_forward_learn`, policy file lines
    287-453).

    Step k feeds the dynamics the encoded true latent of step k and the history so far; value
    and policy of step k+1 read the encoded true latent of step k+1 with the new history, the
    reward comes from the dynamics' GRU output, and SSL compares the predicted next latent with
    the encoded one. As in the reference, every step's terms are summed with weight 1: no
    1/num_unroll_steps scaling (lines 449-455 have no gradient hook; `lzero/policy/muzero.py`
    line 600 has one) and no halving of the gradient into the dynamics (line 391 passes the
    latent on as it is). This differs from `losses.unroll_loss`, which weights the unrolled terms
    1/K and halves the dynamics' input gradient.

    Args:
        net: the HistoryNetwork being trained.
        inp: targets and masks; `inp.obs_seq` holds the K+1 stacked observations [B, K+1, ...].
        cfg: loss weights.

    Returns:
        UnrollLoss with `per_sample` [B] and the root value prediction [B].
    """
    w = loss_weights(cfg)
    b, k_steps = inp.actions.shape
    ssl_mask = inp.reward_mask  # SSL only between real transitions
    inp, reward_mask = with_absorbing_masks(inp)  # `absorbing_terminal`: value and reward 0 past
    true = net.encode(inp.obs_seq.flatten(0, 1)).unflatten(0, (b, k_steps + 1))  # [B, K+1, ...]
    value_cat = scalar_to_two_hot(inp.value_target, net.value_support)  # [B, K+1, S_v]
    reward_cat = scalar_to_two_hot(inp.reward_target, net.reward_support)  # [B, K, S_r]
    history = net.zero_history(b, true)  # [B, H] training starts every unroll with no history
    out = _read(net, true[:, 0], history, net.zero_reward_logits(b))
    root_value = logits_to_scalar(out.value_logits.detach(), net.value_support)
    pol, val, ent = _prediction_terms(out, inp, value_cat, 0)
    rew, ssl = torch.zeros_like(pol), torch.zeros_like(pol)
    for k in range(k_steps):
        predicted, history, reward_logits = net.transition(true[:, k], history, inp.actions[:, k])
        out = _read(net, true[:, k + 1], history, reward_logits)
        p, v, e = _prediction_terms(out, inp, value_cat, k + 1)
        pol, val, ent = pol + p, val + v, ent + e
        rew = rew + cross_entropy(reward_logits, reward_cat[:, k]) * reward_mask[:, k]
        if w.ssl > 0:
            target = net.project(true[:, k + 1].detach(), with_grad=False)
            s = negative_cosine(net.project(predicted, with_grad=True), target)
            ssl = ssl + s * ssl_mask[:, k]
    per_sample = w.policy * pol + w.value * val + w.reward * rew - w.entropy * ent + w.ssl * ssl
    terms = {
        "policy_loss": pol,
        "value_loss": val,
        "reward_loss": rew,
        "entropy": ent,
        "ssl_loss": ssl,
    }
    means = {name: t.detach().mean() for name, t in terms.items()}
    return UnrollLoss(per_sample=per_sample, root_value=root_value, terms=means)


def _read(net: HistoryNetwork, latent, history, reward_logits) -> NetworkOutput:
    """f of a true latent [B, ...] with the history [B, H], beside the step's reward logits."""
    value_logits, policy_logits = net.prediction(latent, history)
    return NetworkOutput(latent, value_logits, reward_logits, policy_logits)


def history_roots(
    network: HistoryNetwork, obs: torch.Tensor, rows: torch.Tensor, child: NetworkOutput | None
) -> NetworkOutput:
    """A `RootCombiner`: the encoded observations read with the carried children's histories
    (packed in their latents), empty histories elsewhere."""
    history = network.zero_history(obs.shape[0], obs.float())  # [B, H]
    if child is not None:
        history = history.index_copy(0, rows, network.layout.unpack(child.latent)[1])
    return network.root(obs, history)


def puct_quiet_reanalysis(
    roots: SearchRoots,
    recurrent_fn: RecurrentFn,
    cfg: SearchConfig,
    rng: np.random.Generator,
    acting: ActingParams,
) -> PolicyOutput:
    """`puct_policy`, with no root noise when reanalysing.

    The reference's muzero_rnn_full_obs sets `reanalyze_noise=False` (policy file line 179), so
    its buffer prepares reanalysis roots with `prepare_no_noise`
    (`lzero/mcts/buffer/game_buffer_muzero.py` lines 649-652 and 663-666); collect keeps the noise.
    A weight of 0 leaves the prior exactly as it is: (1 - 0)·prior + 0·noise.
    """
    if acting.mode == "reanalyze":
        cfg = replace(cfg, root_noise_weight=0.0)
    return puct_policy(roots, recurrent_fn, cfg, rng, acting)


# The search policy of muzero_rnn_full_obs, by the name its `Algorithm` gives (`registry.py`).
PUCT_QUIET_REANALYSIS = "puct_quiet_reanalysis"
SEARCH_POLICIES[PUCT_QUIET_REANALYSIS] = puct_quiet_reanalysis


class MuZeroRNNFullObsFamily(MuZeroFamily):
    """HistoryNetwork, the teacher-forced loss and per-env histories."""

    network_class = HistoryNetwork

    def needs_obs_seq(self, cfg: MuZeroRNNFullObsConfig) -> bool:
        """Teacher forcing encodes every unroll step's observation."""
        return True

    def loss(
        self, net, target_net, inputs: UnrollInputs, cfg: MuZeroRNNFullObsConfig, train_iter: int
    ):
        """`history_loss`."""
        return history_loss(net, inputs, cfg)

    def root_source(self, network: HistoryNetwork, num_envs: int, cfg: MuZeroRNNFullObsConfig):
        """Per-env histories, restarted every `cfg.context_length_init` steps."""
        return CarriedRoots(network, num_envs, cfg.context_length_init, history_roots)


MUZERO_RNN_FULL_OBS = MuZeroRNNFullObsFamily()
