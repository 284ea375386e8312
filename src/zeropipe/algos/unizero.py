"""The unizero family: the teacher-forced world-model loss (UniZero, Pu et al. 2024, §3.3).

Runs in: driver. One causal forward over o_0, a_0, …, o_{K-1}, a_{K-1} predicts at each observation
token the value and policy, and at each action token the reward and the next observation's latent,
whose target is the *target* network's encoding of o_{k+1} (no gradient). Which steps each term
trains and what it is divided by is `policy.loss_masks` (each term's own mask, or the reference's
one mask); either way the losses stay per sample and are weighted per sample by the PER importance
weights — never a batch mean times the mean weight (the reference's fix:
`apply_per_sample_is_weights`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, Literal

import torch
from pydantic import Field, model_validator

from zeropipe.algos.losses import (
    PolicyTerms,
    UnrollInputs,
    UnrollLoss,
    WeightScale,
    cross_entropy,
    entropy,
)
from zeropipe.algos.output_clip import OutputClipOptions, annealed_threshold
from zeropipe.algos.search_settings import search_config
from zeropipe.algos.unizero_masks import (
    StepLosses,
    per_sample_mean,
    per_term_means,
    reference_means,
)
from zeropipe.algos.unroll_inputs import unroll_inputs
from zeropipe.config import PolicyConfig, UniZeroModelConfig
from zeropipe.mcts import SearchConfig
from zeropipe.models import (
    KvCacheClock,
    RootContexts,
    SequenceOutput,
    UniZeroNetwork,
    logits_to_scalar,
    scalar_to_two_hot,
)

if TYPE_CHECKING:
    from zeropipe.algos.targets import Targets
    from zeropipe.buffer import ReplayBatch


class UniZeroFamilyConfig(PolicyConfig):
    """The options of the UniZero types: the world model (with its loss weights) and the
    acting side's KV-cache clock."""

    REFERENCE_ADAMW: ClassVar[str | None] = "by_dimension"  # docs/parity.md S14

    model: UniZeroModelConfig = Field(
        default_factory=UniZeroModelConfig, description="Network settings."
    )
    target_update_type: Literal["hard", "ema"] = Field(
        "ema",
        description="Target network update: EMA with target_update_theta every learner step "
        "(the reference's unizero and sampled_unizero: `update_type='momentum'`, θ = 0.05, "
        "policy/unizero.py:741, :1004-1010, :1674; policy/sampled_unizero.py:224, :360, :563) or "
        "a hard copy every target_update_freq steps.",
    )
    kv_cache_clear_interval: int = Field(
        2000,
        ge=0,
        description="The interval, in env steps, at which kv_cache_clock clears every env's root "
        "KV cache, in collect and eval alike; 0 disables the clock (a weight load still clears).",
    )
    kv_cache_clock: KvCacheClock = Field(
        "since_invalidation",
        description="When the root KV caches are cleared and what a clear drops. "
        "'since_invalidation': once kv_cache_clear_interval env steps have passed since the last "
        "clear or weight load, every env's keys/values are dropped and rebuilt exactly from its "
        "raw recent observations, so no root sees a shorter context than without the clock. "
        "'episode_step' (the reference's): when one env's steps since its episode start (or the "
        "last weight load) reach a multiple of kv_cache_clear_interval, and at every weight "
        "load, every env keeps only its newest observation, so its next root sees [o_prev, "
        "a_prev, o] and the context regrows from there; the reference's root cache is the "
        "context, cleared by `clear_caches` (policy/unizero.py:2307-2325, eval :2413-2425; after "
        "each train phase `recompute_pos_emb_diff_and_clear_cache`, :2728-2753).",
    )

    bootstrap_values: Literal["sequence", "per_observation"] = Field(
        "sequence",
        description="How the target world model gives the n-step bootstrap values: 'sequence' "
        "(the reference's default) reads them from one teacher-forced pass over each sample's "
        "K bootstrap observations and the actions taken between them, so the value at the j-th "
        "bootstrap state sees the j (observation, action) pairs before it "
        "(buffer/game_buffer_unizero.py:383-390, :942-968 at the pinned commit); "
        "'per_observation' encodes each bootstrap observation alone, with no context (the "
        "MuZero types' rule; what runs written before this option used).",
    )

    priority_td: Literal["unroll_mean", "root"] = Field(
        "unroll_mean",
        description="With use_priority, the |TD| a sample's new priority is made of: "
        "'unroll_mean' (the reference's) the mean of |v̂_k − z_k| over the unroll steps k < K "
        "whose action exists (model/unizero_world_models/world_model.py:2573-2596 at the "
        "pinned commit); 'root' |v̂_0 − z_0| only (the MuZero types' rule; what runs written "
        "before this option used).",
    )

    loss_masks: Literal["per_term", "reference"] = Field(
        "per_term",
        description="Which unroll steps each world-model loss term trains and what it is "
        "divided by. 'per_term': K next-latent terms (o_1..o_K), and the latent, reward and "
        "policy terms at every step whose action exists (the successor segment's steps padded "
        "on included); the value at every state that exists (an episode's final observation "
        "included); each term divided by its own mask's count per sample, continuous actions "
        "too. 'reference' (`WorldModel.compute_loss`, "
        "model/unizero_world_models/world_model.py:2711-2873 at the pinned commit): one mask "
        "for every term, the steps in the root's own segment (`mask_padding`, "
        "buffer/game_buffer_unizero.py:355-358); K−1 next-latent terms (o_1..o_{K−1}, each "
        "masked by the step it predicts); each term divided by the sample's count of the mask, "
        "with continuous actions by the batch's count. With use_priority and priority_td "
        "'unroll_mean', the priority's mean runs over the same mask as the reward term.",
    )

    @model_validator(mode="after")
    def _sequence_fits_the_window(self):
        if self.model.world_model.context_steps < self.num_unroll_steps:
            raise ValueError(
                "model.world_model.context_steps must be >= num_unroll_steps (the training "
                "sequence of 2K tokens must fit the window)"
            )
        return self

    def search_config(self, num_simulations: int) -> SearchConfig:
        """PUCT's settings."""
        return search_config(self, num_simulations)

    def policy_label_eps(self, train_iter: int) -> float:
        """The share ε of the uniform distribution mixed into the full-A policy target at
        learner step `train_iter`; 0 here (a type with policy label smoothing overrides it)."""
        return 0.0

    def output_clips(
        self, net, tokens: torch.Tensor, out: SequenceOutput, train_iter: int
    ) -> tuple[tuple[WeightScale, ...], dict[str, torch.Tensor]]:
        """The weights to scale after the backward pass and their metrics; none here (a type
        with output clips overrides it: `algos/output_clip.py`)."""
        return (), {}


class UniZeroConfig(OutputClipOptions, UniZeroFamilyConfig):
    """`policy.type: unizero` (Pu et al. 2024)."""

    # options added later with a default that changes what a run does, and what a run's
    # config.yaml written before each existed meant (config/versions.py reads them)
    OLDER_VALUES: ClassVar[dict[str, Any]] = {
        **PolicyConfig.OLDER_VALUES,
        "bootstrap_values": "per_observation",
        "priority_td": "root",
    }

    type: Literal["unizero"] = Field(
        "unizero", description="Policy type; see docs/policies/unizero.md."
    )
    eval_tie_break: Literal["random", "first"] = Field(
        "first",
        description="PUCT ties in eval searches: 'first' as LightZero's unizero eval search "
        "(`mcts_eval_cfg.deterministic = True`, policy/unizero.py:2122), or 'random'.",
    )
    policy_ls_eps_start: float = Field(
        0.0,
        ge=0.0,
        le=1.0,
        description="Policy label smoothing: the policy target becomes (1 − ε)·π + ε/A, with ε "
        "going linearly from policy_ls_eps_start at learner step 0 to policy_ls_eps_end at "
        "policy_ls_eps_decay_steps, then staying there; 0 (the default) turns it off whatever "
        "the end value, as the reference's rule (policy/unizero.py:1174-1187, :1241-1249; "
        "defaults 0 and 0, :635-639; its Atari segment config's switch sets 0.05 to 0.01).",
    )
    policy_ls_eps_end: float = Field(
        0.0, ge=0.0, le=1.0, description="Policy label smoothing: ε from decay_steps on."
    )
    policy_ls_eps_decay_steps: int = Field(
        50000,
        ge=1,
        description="Policy label smoothing: learner steps from the start ε to the end ε "
        "(reference: 50,000).",
    )

    def policy_label_eps(self, train_iter: int) -> float:
        """ε at learner step `train_iter` (counted from 0): start·(1 − p) + end·p with
        p = min(1, train_iter / decay_steps), or 0 when the start is 0."""
        if self.policy_ls_eps_start <= 0.0:
            return 0.0
        start, end = self.policy_ls_eps_start, self.policy_ls_eps_end
        return annealed_threshold("linear", start, end, self.policy_ls_eps_decay_steps, train_iter)


def unizero_loss(
    net,
    target_net,
    inp: UnrollInputs,
    cfg: UniZeroFamilyConfig,
    train_iter: int,
    policy_terms: PolicyTerms | None = None,
) -> UnrollLoss:
    """Per-sample UniZero loss.

    Args:
        net: the UniZeroNetwork being trained.
        target_net: its EMA copy; encodes the next-latent targets.
        inp: targets and masks; `inp.obs_seq` holds the K+1 stacked observations [B, K+1, ...].
        cfg: policy settings (world-model loss weights, label smoothing of the value, reward
            and policy targets, entropy weight, which steps each term trains and how it is
            normalised: `loss_masks`).
        train_iter: the learner's iteration, which drives train_iter-dependent schedules.
        policy_terms: `policy_terms(policy output at o_k, inp, k)` -> (policy loss [B],
            entropy [B]), unmasked; None: the cross-entropy against the full-A target.

    Returns:
        UnrollLoss with `per_sample` [B], the root value prediction [B] and, with
        `priority_td: unroll_mean`, the mean |v̂_k − z_k| over the steps the latent, reward
        and policy terms train [B] (0 for a sample with none); with the unizero type's output
        clips, the weights to scale before the optimizer step (`weight_scales`) and what the
        clips saw among the terms.
    """
    wm = cfg.model.world_model
    policy_eps = cfg.policy_label_eps(train_iter)
    b, k = inp.actions.shape[:2]  # actions [B, K] indices or [B, K, D] vectors
    tokens = net.encode(inp.obs_seq[:, :k].flatten(0, 1)).view(b, k, -1)  # [B, K, E]
    out = net.sequence(tokens, inp.actions)
    steps = _step_losses(net, target_net, inp, cfg, tokens, out, policy_terms, policy_eps)
    if cfg.loss_masks == "reference":
        terms, step_mask = reference_means(steps, inp, cfg.model.continuous_actions)
    else:
        terms, step_mask = per_term_means(steps, inp)
    per_sample = (
        wm.latent_loss_weight * terms["latent_loss"]
        + wm.reward_loss_weight * terms["reward_loss"]
        + wm.value_loss_weight * terms["value_loss"]
        + wm.policy_loss_weight * terms["policy_loss"]
    )
    k = step_mask.shape[1]
    priority_td = None
    if cfg.priority_td == "unroll_mean":
        td = (steps.values - inp.value_target[:, :k].float()).abs() * step_mask
        priority_td = per_sample_mean(td, step_mask)
    means = {name: t.detach().mean() for name, t in terms.items()}
    means["loss_train_iter"] = torch.tensor(float(train_iter))
    scales, clip_metrics = cfg.output_clips(net, tokens, out, train_iter)
    return UnrollLoss(
        per_sample=per_sample,
        root_value=steps.values[:, 0],
        terms={**means, **clip_metrics},
        priority_td=priority_td,
        weight_scales=scales,
    )


def _step_losses(
    net,
    target_net,
    inp: UnrollInputs,
    cfg: UniZeroFamilyConfig,
    tokens: torch.Tensor,
    out: SequenceOutput,
    policy_terms: PolicyTerms | None,
    policy_eps: float = 0.0,
) -> StepLosses:
    """Every step's loss terms of the forward pass `out` over the observation `tokens`
    [B, K, E], before any mask; the full-A policy target smoothed by `policy_eps`."""
    b, k = tokens.shape[:2]
    obs = inp.obs_seq
    with torch.no_grad():
        target_latent = target_net.encode(obs[:, 1 : k + 1].flatten(0, 1)).view(b, k, -1)
    eps = cfg.model.world_model.label_smoothing_eps
    value_cat = scalar_to_two_hot(inp.value_target[:, :k], net.value_support, eps)
    reward_cat = scalar_to_two_hot(inp.reward_target, net.reward_support, eps)
    policy, ent = _policy_terms(out.policy_logits, inp, policy_terms, policy_eps)
    return StepLosses(
        latent=((out.next_latent - target_latent) ** 2).mean(dim=-1),
        reward=cross_entropy(out.reward_logits, reward_cat),
        value=cross_entropy(out.value_logits, value_cat),
        policy=policy - cfg.policy_entropy_weight * ent,
        entropy=ent,
        values=logits_to_scalar(out.value_logits.detach().float(), net.value_support),
    )


def _policy_terms(
    policy_out: torch.Tensor,
    inp: UnrollInputs,
    policy_terms: PolicyTerms | None,
    label_eps: float = 0.0,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Unmasked policy loss and entropy at every o_k ([B, K] each) from the policy outputs
    [B, K, ...]: full-A cross-entropy against the target smoothed by `label_eps` (ε: the
    target is (1 − ε)·π + ε/A) and entropy, or `policy_terms` step by step."""
    k = policy_out.shape[1]
    if policy_terms is None:
        target = inp.policy_target[:, :k]  # [B, K, A]
        if label_eps > 0.0:
            target = (1.0 - label_eps) * target + label_eps / target.shape[-1]
        return cross_entropy(policy_out, target), entropy(policy_out)
    steps = [policy_terms(policy_out[:, j], inp, j) for j in range(k)]
    return torch.stack([p for p, _ in steps], 1), torch.stack([e for _, e in steps], 1)


class UniZeroFamily:
    """UniZero's transformer world model, its teacher-forced loss and per-env KV root contexts."""

    def build_network(
        self, input_shape: tuple[int, ...], num_actions: int, cfg: UniZeroFamilyConfig
    ) -> UniZeroNetwork:
        """A UniZeroNetwork of the configured size."""
        return UniZeroNetwork(input_shape, num_actions, cfg.model)

    def keeps_chance_labels(self, cfg: UniZeroFamilyConfig) -> bool:
        """The loss reads no chance outcomes of the env."""
        return False

    def needs_obs_seq(self, cfg: UniZeroFamilyConfig) -> bool:
        """The token sequence is built from every unroll step's observation."""
        return True

    def sequence_bootstrap(self, cfg: UniZeroFamilyConfig) -> bool:
        """Bootstrap values with their window's context, unless `bootstrap_values` says
        per_observation."""
        return cfg.bootstrap_values == "sequence"

    def loss(
        self, net, target_net, inputs: UnrollInputs, cfg: UniZeroFamilyConfig, train_iter: int
    ):
        """`unizero_loss` with this family's `policy_terms`."""
        return unizero_loss(net, target_net, inputs, cfg, train_iter, self.policy_terms(cfg))

    def policy_terms(self, cfg: UniZeroFamilyConfig) -> PolicyTerms | None:
        """None: the cross-entropy against the full-A target (a variant may replace it)."""
        return None

    def unroll_inputs(
        self, batch: ReplayBatch, targets: Targets, frame_ndim: int, cfg: UniZeroFamilyConfig
    ) -> UnrollInputs:
        """The MuZero default: int64 action indices (`algos/unroll_inputs.py`)."""
        return unroll_inputs(batch, targets, frame_ndim, self.needs_obs_seq(cfg), cfg.device)

    def root_source(
        self, network: UniZeroNetwork, num_envs: int, cfg: UniZeroFamilyConfig
    ) -> RootContexts:
        """KV-cached root contexts, one per env, cleared by `kv_cache_clock` every
        `kv_cache_clear_interval` env steps."""
        return network.new_root_contexts(num_envs, cfg.kv_cache_clear_interval, cfg.kv_cache_clock)


UNIZERO = UniZeroFamily()
