"""The K-step unroll loss of the MuZero family, per sample.

Runs in: driver. MuZero (Schrittwieser et al. 2020, app. G): the network is unrolled K steps from
the root latent along the stored actions; each step predicts policy, value and the reward of the
action taken. Losses are kept per sample ([B]) so that PER importance weights weigh samples, not a
batch mean (a batch-mean loss times the mean weight makes PER a no-op). Unlike the reference
learner, masks are applied: states past the stored data contribute nothing, except the absorbing
states past a true terminal when the inputs carry them (`UnrollInputs.absorbing`, the option
`policy.absorbing_terminal`): their value target 0 and the reward target 0 of the step into them are
kept (MuZero app. G; the reference trains its zero padding unmasked).

How the steps are weighted is `LossWeights.weighting` (the option `policy.loss_weighting`):
`reference` (LightZero, e.g. `lzero/policy/muzero.py` L465-600 at 9f717c8) sums every step's terms
with weight 1 and scales the gradient of the total by 1/K; `appendix_g` (MuZero app. G) weights the
root's terms 1 and each unrolled step's 1/K and halves the latent's gradient at the entry of every
dynamics step. docs/parity.md S9 compares the two.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Literal

import torch
import torch.nn.functional as F

from zeropipe.models import MuZeroNetwork, logits_to_scalar, scalar_to_two_hot

LossWeighting = Literal["reference", "appendix_g"]


@dataclass(frozen=True)
class LossWeights:
    """Weights of the loss terms (reference names) and how the unroll's steps are weighted."""

    value: float
    reward: float
    policy: float
    entropy: float
    ssl: float
    weighting: LossWeighting = "reference"


@dataclass(frozen=True)
class UnrollInputs:
    """What one unroll needs, as tensors."""

    root_obs: torch.Tensor  # [B, *input] stacked root observation
    actions: torch.Tensor  # [B, K] int64, or [B, K, D] float32 continuous actions
    value_target: torch.Tensor  # [B, K+1]
    reward_target: torch.Tensor  # [B, K]
    policy_target: torch.Tensor  # [B, K+1, A]
    value_mask: torch.Tensor  # [B, K+1]
    reward_mask: torch.Tensor  # [B, K]
    policy_mask: torch.Tensor  # [B, K+1]
    obs_seq: torch.Tensor | None  # [B, K+1, *input] every step's stacked observation, when needed
    # sampled search over continuous actions: [B, K+1, Ks, D] the root sampled actions the
    # policy target [B, K+1, Ks] belongs to (policy_mask masks the states past the data)
    sampled_actions: torch.Tensor | None = None
    # [B, K+1] 1 at the absorbing states past a true terminal, trained to value 0 and reward 0
    # for the step into them; None: masked like any state past the data
    absorbing: torch.Tensor | None = None
    # [B, K+1] 1 where c lies in the root's own segment (c < its length), 0 at the successor's
    # steps padded on and past the data; None: not built
    own_segment_mask: torch.Tensor | None = None


# (policy output [B, ...], the unroll inputs, step k) -> (policy loss [B], entropy [B])
PolicyTerms = Callable[[torch.Tensor, "UnrollInputs", int], tuple[torch.Tensor, torch.Tensor]]


@dataclass(frozen=True, eq=False)
class WeightScale:
    """Parameters the learner multiplies by `factor` after the backward pass and before the
    optimizer step, so the gradient is the one of the weights that computed the loss (UniZero's
    encoder and head clips, `algos/output_clip.py`)."""

    params: tuple[torch.nn.Parameter, ...]
    factor: float  # in (0, 1)


@dataclass(frozen=True)
class UnrollLoss:
    """Per-sample loss and what the learner reports."""

    per_sample: torch.Tensor  # [B] weighted sum of all terms
    root_value: torch.Tensor  # [B] predicted scalar value of the root (for priorities)
    terms: dict[str, torch.Tensor]  # batch means of each term, detached
    # [B] detached |TD| a family defines for its PER priorities; None: the root's |v̂_0 − z_0|
    priority_td: torch.Tensor | None = None
    # weights to scale once the gradient is computed; () for every type without output clips
    weight_scales: tuple[WeightScale, ...] = ()


def cross_entropy(logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """−Σ target·log softmax(logits) over the last axis → [...]."""
    return -(target * F.log_softmax(logits, dim=-1)).sum(dim=-1)


def entropy(logits: torch.Tensor) -> torch.Tensor:
    """Entropy of softmax(logits) over the last axis → [...]."""
    logp = F.log_softmax(logits, dim=-1)
    return -(logp.exp() * logp).sum(dim=-1)


def negative_cosine(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """SimSiam consistency (EfficientZero, Ye et al. 2021 §4.1): −cos(a, b) → [B]."""
    return -(F.normalize(a, dim=-1) * F.normalize(b, dim=-1)).sum(dim=-1)


def unroll_loss(
    net: MuZeroNetwork,
    inp: UnrollInputs,
    w: LossWeights,
    policy_terms: PolicyTerms | None = None,
) -> UnrollLoss:
    """Unroll the network K steps and sum the weighted, masked per-sample losses.

    `w.weighting` `reference`: every step k = 0..K weighs 1 (policy, value, entropy; reward and
    SSL k = 1..K), nothing is scaled inside the unroll, and a hook scales the gradient of
    `per_sample` by 1/K (the reference's hook on its total loss). `per_sample` and the reported
    terms are the unscaled sums over the steps, as the reference logs them; only the gradient
    carries the 1/K. `appendix_g`: the steps after the root weigh 1/K and the latent's gradient is
    halved at the entry of each dynamics step (MuZero app. G); SSL is summed over the steps in both.
    `policy_terms(policy_logits, inp, k)` gives the unmasked policy loss and entropy of step k
    ([B] each); the default is the cross-entropy against the full-A target.
    """
    policy_terms = policy_terms or full_policy_terms
    k_steps = inp.actions.shape[1]
    appendix_g = w.weighting == "appendix_g"
    step_div = k_steps if appendix_g else 1  # p / 1 is p exactly
    inp, reward_mask = with_absorbing_masks(inp)  # SSL keeps inp.reward_mask: real steps only
    value_cat = scalar_to_two_hot(inp.value_target, net.value_support)  # [B, K+1, S]
    reward_cat = scalar_to_two_hot(inp.reward_target, net.reward_support)  # [B, K, S]
    out = net.initial_inference(inp.root_obs)
    root_value = logits_to_scalar(out.value_logits.detach(), net.value_support)
    pol, val, ent = _prediction_terms(out, inp, value_cat, 0, policy_terms)
    rew = torch.zeros_like(pol)
    ssl = torch.zeros_like(pol)
    latent = out.latent
    for k in range(k_steps):
        if appendix_g:
            latent = _scale_gradient(latent, 0.5)
        out = net.recurrent_inference(latent, inp.actions[:, k])
        latent = out.latent
        p, v, e = _prediction_terms(out, inp, value_cat, k + 1, policy_terms)
        r = cross_entropy(out.reward_logits, reward_cat[:, k]) * reward_mask[:, k]
        pol, val, ent = pol + p / step_div, val + v / step_div, ent + e / step_div
        rew = rew + r / step_div
        if w.ssl > 0 and inp.obs_seq is not None:
            ssl = ssl + consistency(net, latent, inp.obs_seq[:, k + 1]) * inp.reward_mask[:, k]
    per_sample = w.policy * pol + w.value * val + w.reward * rew - w.entropy * ent + w.ssl * ssl
    if not appendix_g:
        per_sample = scale_total_gradient(per_sample, 1.0 / k_steps)
    terms = {"policy_loss": pol, "value_loss": val, "reward_loss": rew, "entropy": ent}
    if w.ssl > 0:
        terms["ssl_loss"] = ssl
    means = {name: t.detach().mean() for name, t in terms.items()}
    return UnrollLoss(per_sample=per_sample, root_value=root_value, terms=means)


def scale_total_gradient(total: torch.Tensor, scale: float) -> torch.Tensor:
    """`total` itself, whose gradient is multiplied by `scale` on the way back (LightZero's
    `weighted_total_loss.register_hook(lambda grad: grad * gradient_scale)`): the value stays
    the unscaled loss, the gradient is that of `scale * total`."""
    if total.requires_grad:
        total.register_hook(lambda grad: grad * scale)
    return total


def with_absorbing_masks(inp: UnrollInputs) -> tuple[UnrollInputs, torch.Tensor]:
    """(the inputs with the absorbing states' value terms unmasked, the reward-term mask [B, K]
    that also keeps the step into an absorbing state). Their targets are 0: the buffer's value
    and reward targets are 0 past the data. Without absorbing states: (inp, inp.reward_mask)."""
    if inp.absorbing is None:
        return inp, inp.reward_mask
    value_mask = torch.maximum(inp.value_mask, inp.absorbing)  # [B, K+1]
    reward_mask = torch.maximum(inp.reward_mask, inp.absorbing[:, 1:])  # [B, K] step k: c+1
    return replace(inp, value_mask=value_mask, absorbing=None), reward_mask


def full_policy_terms(
    logits: torch.Tensor, inp: UnrollInputs, k: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Cross-entropy against the [B, A] target of step k and the policy's entropy ([B] each)."""
    return cross_entropy(logits, inp.policy_target[:, k]), entropy(logits)


def _prediction_terms(
    out, inp: UnrollInputs, value_cat, k: int, policy_terms: PolicyTerms | None = None
):
    pol, ent = (policy_terms or full_policy_terms)(out.policy_logits, inp, k)
    val = cross_entropy(out.value_logits, value_cat[:, k]) * inp.value_mask[:, k]
    return pol * inp.policy_mask[:, k], val, ent * inp.policy_mask[:, k]


def consistency(net: MuZeroNetwork, latent: torch.Tensor, obs: torch.Tensor) -> torch.Tensor:
    """SSL consistency of predicted latents [B, *latent] with the encoded observations
    [B, *input]: −cos(project(latent, with grad), project(h(obs)) without grad) → [B]."""
    with torch.no_grad():
        target = net.project(net.root_latent(obs), with_grad=False)
    return negative_cosine(net.project(latent, with_grad=True), target)


def _scale_gradient(x: torch.Tensor, scale: float) -> torch.Tensor:
    return x * scale + x.detach() * (1.0 - scale)
