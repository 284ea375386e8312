"""The experiment configuration: pydantic v2 models, the one source of field names and defaults.

Runs in: any. Field names follow LightZero's where a user would look for them. Every model forbids
unknown keys, so a typo is an error that names its YAML path, never a silently ignored setting.
"""

from __future__ import annotations

from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, model_validator

PolicyType = Literal[
    "muzero",
    "muzero_context",
    "muzero_rnn_full_obs",
    "efficientzero",
    "sampled_efficientzero",
    "sampled_muzero",
    "gumbel_muzero",
    "stochastic_muzero",
    "unizero",
    "sampled_unizero",
]
POLICY_TYPES: tuple[str, ...] = get_args(PolicyType)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True, frozen=False)


class EnvConfig(_Strict):
    """Which environment to play and how to preprocess it."""

    env_id: str = Field(
        description="gymnasium env id (Discrete actions, Box observations), e.g. CartPole-v1, "
        "ALE/Pong-v5, or zeropipe/Chain-v0 (the tiny deterministic test env); a third-party id as "
        "'module:EnvId' (e.g. minatar.gym:MinAtar/Breakout-v1) imports the module first."
    )
    collector_env_num: int = Field(8, ge=1, description="Envs stepped together by one collector.")
    evaluator_env_num: int = Field(3, ge=1, description="Envs stepped together by one evaluator.")
    n_evaluator_episode: int = Field(3, ge=1, description="Episodes per evaluation.")
    stop_value: float = Field(
        1e9, description="Stop the run once an eval reward_mean reaches this value."
    )
    max_episode_steps: int | None = Field(
        None, ge=1, description="Time limit for training episodes (None: the env's own limit)."
    )
    eval_max_episode_steps: int | None = Field(
        None, ge=1, description="Time limit for eval episodes (None: the env's own limit)."
    )
    frame_stack: int = Field(
        1, ge=1, description="Observations stacked as the model input (Atari: 4 gray frames)."
    )
    # Atari preprocessing. ALE v5 ids are created with frameskip=1 and no sticky actions, and the
    # skip/stickiness below is applied once, by our wrappers (LightZero PR #494: double skipping).
    frame_skip: int = Field(4, ge=1, description="Atari: repeat each action this many frames.")
    sticky_action_prob: float = Field(
        0.0, ge=0.0, le=1.0, description="Atari: probability of repeating the previous action."
    )
    noop_max: int = Field(30, ge=0, description="Atari: up to this many no-ops after a reset.")
    gray_scale: bool = Field(True, description="Atari: grayscale (1 channel) instead of RGB (3).")
    obs_size: int = Field(64, ge=16, description="Atari: frames resized to obs_size×obs_size.")
    clip_rewards: bool = Field(True, description="Atari: clip training rewards to {-1,0,1}.")
    episode_life: bool = Field(
        True, description="Atari: a lost life ends a training episode (eval plays full games)."
    )


class WorldModelConfig(_Strict):
    """UniZero's transformer world model (used by the unizero family only)."""

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


class ModelConfig(_Strict):
    """Network sizes. `kind: auto` picks mlp for vector observations and conv for images."""

    kind: Literal["auto", "mlp", "conv"] = Field("auto", description="Encoder family.")
    latent_dim: int = Field(128, ge=1, description="mlp: latent state size.")
    hidden_dim: int = Field(128, ge=1, description="mlp: hidden layer width.")
    num_layers: int = Field(2, ge=1, description="mlp: hidden layers per network.")
    num_channels: int = Field(64, ge=1, description="conv: latent channels.")
    num_res_blocks: int = Field(1, ge=1, description="conv: residual blocks per stage.")
    downsample: bool = Field(True, description="conv: downsample 64/96 px frames to 8/6 px.")
    head_channels: int = Field(16, ge=1, description="conv: channels of value/policy/reward heads.")
    head_hidden_dim: int = Field(32, ge=1, description="Hidden width of the output heads.")
    norm_type: Literal["BN", "LN"] = Field("BN", description="Normalisation layers.")
    value_support_range: tuple[int, int, int] = Field(
        (-300, 301, 1), description="Categorical value support as (start, stop, step)."
    )
    reward_support_range: tuple[int, int, int] = Field(
        (-300, 301, 1), description="Categorical reward support as (start, stop, step)."
    )
    state_norm: bool = Field(False, description="Min-max normalise latent states (MuZero app. G).")
    proj_hidden_dim: int = Field(256, ge=1, description="SSL projection hidden width.")
    proj_out_dim: int = Field(256, ge=1, description="SSL projection output width.")
    pred_hidden_dim: int = Field(128, ge=1, description="SSL predictor hidden width.")
    world_model: WorldModelConfig = Field(
        default_factory=WorldModelConfig, description="UniZero transformer settings."
    )
    rnn_hidden_size: int = Field(
        512,
        ge=1,
        description="muzero_rnn_full_obs: size of the GRU latent history carried along an "
        "unroll, per node in the search and per env in acting.",
    )
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


class EpsilonGreedyConfig(_Strict):
    """Epsilon-greedy exploration on top of the search's visit distribution (collect only)."""

    eps_greedy_exploration_in_collect: bool = Field(False, description="Enable epsilon-greedy.")
    type: Literal["linear", "exp"] = Field("linear", description="Decay shape over env steps.")
    start: float = Field(1.0, ge=0.0, le=1.0, description="Epsilon at env step 0.")
    end: float = Field(0.05, ge=0.0, le=1.0, description="Final epsilon.")
    decay: int = Field(100_000, ge=1, description="Env steps over which epsilon decays.")
    hold_steps: int = Field(
        1,
        ge=1,
        description="Env steps each random action is held (temporally-extended ε-greedy, "
        "discrete actions only); epsilon stays the fraction of random steps. 1 is plain "
        "ε-greedy.",
    )


class GumbelConfig(_Strict):
    """Gumbel search (gumbel_muzero; Danihelka et al. 2022, "Policy improvement by planning with
    Gumbel")."""

    max_num_considered_actions: int = Field(
        4, ge=2, description="Root actions kept by Gumbel top-k for sequential halving (m)."
    )
    gumbel_scale: float = Field(
        1.0,
        ge=0.0,
        description="Scale of the root Gumbel noise (the paper's and mctx's 1; LightZero uses 10 "
        "but with one fixed noise vector for every search).",
    )
    maxvisit_init: float = Field(
        50.0, ge=0.0, description="c_visit of the σ transform of completed Q (paper: 50)."
    )
    value_scale: float = Field(
        0.1, gt=0.0, description="c_scale of the σ transform of completed Q (paper: 0.1)."
    )


class SampledConfig(_Strict):
    """Sampled search (the sampled types; Hubert et al. 2021, "Learning and planning in complex
    action spaces")."""

    num_of_sampled_actions: int = Field(
        6, ge=1, description="K: actions sampled at every expanded node (discrete: K <= actions)."
    )
    prior: Literal["density", "uniform"] = Field(
        "uniform",
        description="PUCT prior term of a sampled child: uniform (1 / #children; the "
        "reference's sampled_muzero and sampled_unizero) or density (prior / sum of the sampled "
        "children's priors; the reference's intent for sampled_efficientzero, its default "
        "here).",
    )
    policy_loss_type: Literal["cross_entropy", "kl"] = Field(
        "cross_entropy",
        description="Continuous actions: the policy loss over the root sampled actions, "
        "cross-entropy (the reference's default) or KL (same gradient).",
    )


class ValuePrefixConfig(_Strict):
    """EfficientZero's value-prefix LSTM (efficientzero only; Ye et al. 2021 §4.2)."""

    lstm_hidden_size: int = Field(
        512, ge=1, description="Hidden size of the value-prefix LSTM (reference: 512)."
    )
    lstm_horizon_len: int = Field(
        5,
        ge=1,
        description="The LSTM state and the value prefix restart every this many unroll / search "
        "steps from the root (reference: 5).",
    )


# Per-type defaults that differ from the common ones (lightzero_facts §1.1): filled in before
# validation for keys the input does not give.
# A nested section's defaults merge with the section the input gives.
_TYPE_DEFAULTS: dict[str, dict[str, object]] = {
    "efficientzero": {"ssl_loss_weight": 2.0, "policy_entropy_weight": 0.0},
    # the reference's sampled_efficientzero keeps the entropy term and means the `density` PUCT
    # prior (its ctree's `.compare("density")` test is inverted, so it runs `uniform`; see
    # mcts/sampled.py)
    "sampled_efficientzero": {"ssl_loss_weight": 2.0, "sampled": {"prior": "density"}},
}


class StochasticConfig(_Strict):
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
        1.0, ge=0.0, description="Weight of ||one_hot - encoding||^2 (the encoder's commitment)."
    )
    use_true_chance_label: bool = Field(
        False,
        description="Feed the env's true chance outcome (info['chance'], stored with the "
        "segments) to the dynamics as a one-hot code instead of the chance encoder's code "
        "(the reference's use_ture_chance_label_in_chance_encoder); needs an env that reports "
        "info['chance'] and chance_space_size above its largest code.",
    )


class AsyncPipelineConfig(_Strict):
    """The async segment pipeline (DESIGN §5, §6). Names and defaults are the contract."""

    enabled: bool = Field(False, description="Run the async pipeline (CLI: --async-pipeline).")
    num_collector_actors: int = Field(1, ge=1, description="Collector worker processes.")
    num_evaluator_actors: int = Field(1, ge=1, description="Evaluator worker processes.")
    max_collect_inflight: int | None = Field(
        None, ge=1, description="Collect requests running at once (None: num_collector_actors)."
    )
    max_eval_inflight: int = Field(1, ge=1, description="Eval requests running at once.")
    max_train_chunk_steps: int = Field(
        4, ge=1, description="Learner steps before the driver yields to messages."
    )
    weight_sync_interval: int = Field(
        1, ge=1, description="Minimum train_iter gap between published snapshots."
    )
    max_policy_lag: int = Field(
        0,
        description="Max collector version lag; exceeding it forces a publish; < 0 never forces.",
    )
    max_train_budget_queue_size: int | None = Field(
        None,
        ge=1,
        description="Train-budget queue cap for backpressure, inactive until the buffer is "
        "trainable (None: 2 × num_collector_actors).",
    )
    eval_at_start: bool = Field(False, description="Evaluate once before training.")
    collector_num_cpus: int = Field(1, ge=1, description="Torch threads per collector worker.")
    worker_niceness: int = Field(
        0,
        ge=0,
        le=19,
        description="Process backend: niceness each collector and evaluator worker adds to its "
        "own (os.nice) at start, so that on a machine with fewer cores than processes the "
        "learner, which backpressure waits on, wins the cores and the workers use what it "
        "leaves. 0 keeps the driver's. (Ray starts its workers at its own worker_niceness, 15.)",
    )
    evaluator_num_cpus: int = Field(1, ge=1, description="Torch threads per evaluator worker.")
    collector_num_gpus: float = Field(0.0, ge=0.0, description="GPU share per collector worker.")
    evaluator_num_gpus: float = Field(0.0, ge=0.0, description="GPU share per evaluator worker.")
    collector_resources: dict[str, float] = Field(
        default_factory=dict,
        description="Ray backend: custom Ray resources each collector actor needs, e.g. "
        "{collector_node: 1}; the actors are placed on the nodes that offer them (`ray start "
        "--resources`).",
    )
    evaluator_resources: dict[str, float] = Field(
        default_factory=dict,
        description="Ray backend: custom Ray resources each evaluator actor needs (see "
        "collector_resources).",
    )
    buffer_stats_interval: int = Field(
        100, ge=1, description="Buffer statistics logging interval in train_iter."
    )
    poll_interval_s: float = Field(0.1, gt=0.0, description="Driver idle poll interval.")
    shutdown_timeout_s: float = Field(
        30.0, gt=0.0, description="Time allowed for workers to exit before they are killed."
    )
    backend: Literal["process", "ray"] = Field(
        "process",
        description="Where the workers run: 'process' (worker processes on this machine, pipes, "
        "shared-memory snapshots) or 'ray' (Ray actors anywhere in a Ray cluster, weights in "
        'Ray\'s object store; needs the ray extra: pip install -e ".[ray]").',
    )
    ray_address: str | None = Field(
        None,
        description="Ray backend: the cluster to join ('auto': the one started on this machine "
        "by `ray start`; 'HOST:PORT' or 'ray://HOST:PORT'). None: the run starts a private Ray "
        "on this machine and stops it at the end.",
    )
    ray_local_mode: bool = Field(
        False,
        description="Ray backend, LightZero's name: keep the run on this machine. The Ray this "
        "extra installs (2.60) no longer has ray.init(local_mode=True), which ran every task "
        "serially in the driver process; the nearest honest behaviour is what it does here: a "
        "private single-node Ray started and stopped by the run (the same as leaving ray_address "
        "unset), with the actors as separate processes. Cannot be combined with ray_address.",
    )
    max_restarts_per_window: int = Field(
        3,
        ge=0,
        description="Restarts allowed per worker within restart_window_s; one more death inside "
        "the window ends the run (a worker that keeps dying is a bug to report).",
    )
    restart_window_s: float = Field(
        3600.0,
        gt=0.0,
        description="Sliding window (seconds) over which a worker's restarts are counted, so a "
        "long run survives occasional unrelated crashes.",
    )

    @property
    def resolved_max_collect_inflight(self) -> int:
        """`max_collect_inflight`, defaulting to the number of collector actors."""
        if self.max_collect_inflight is None:
            return self.num_collector_actors
        return self.max_collect_inflight

    @property
    def resolved_max_train_budget_queue_size(self) -> int:
        """`max_train_budget_queue_size`, defaulting to max(1, 2 × num_collector_actors)."""
        if self.max_train_budget_queue_size is None:
            return max(1, 2 * self.num_collector_actors)
        return self.max_train_budget_queue_size


class PolicyConfig(_Strict):
    """Algorithm, search, replay and learner settings (LightZero's `policy` section)."""

    type: PolicyType = Field("muzero", description="Policy type; see DESIGN §3 for all ten.")
    device: str = Field("cpu", description="Torch device of the learner ('cpu', 'cuda').")
    root_visit_value: Literal["zero", "network"] = Field(
        "zero",
        description="What the search root's initial visit adds to its value sum: 'zero' "
        "(LightZero's MuZero trees; root value W/(n+1)) or 'network' (mctx and LightZero's "
        "Gumbel tree: the network's root value, (v+W)/(n+1)). With |V| large next to the "
        "differences between actions (Acrobot, V ~ -85) 'zero' widens the min-max range until "
        "the visits follow the prior; measured there, 'network' learns (issue 15 notes).",
    )
    channels_last: bool = Field(
        True,
        description="Keep conv weights in channels-last memory order (learner and actors); the "
        "same arithmetic in another layout, which oneDNN runs faster on CPU (measured on Pong: "
        "learner step 1.22x, actor inference 1.1x). No effect on models without convs.",
    )
    learner_autocast: Literal["none", "bf16"] = Field(
        "none",
        description="Run the learner's unroll and loss under torch.autocast in bfloat16 "
        "(targets, priorities and the optimizer stay float32). Faster on CPUs with bf16 "
        "instructions (Pong MuZero learner step 1.37x alone, 1.73x with channels_last), at "
        "bf16 precision in the forward pass; off by default (learning not measured with it).",
    )
    learner_num_threads: int | None = Field(
        None,
        ge=1,
        description="Torch CPU threads of the driver/learner process. None: torch's default in "
        "the sync pipeline; in the async pipeline, before every learner step, the cores not "
        "taken by the workers that have a request in flight (min 1): the learner gets the "
        "cores while backpressure holds the collectors, and gives them back when they collect.",
    )
    model: ModelConfig = Field(default_factory=ModelConfig, description="Network settings.")
    # search
    num_simulations: int = Field(25, ge=1, description="MCTS simulations per collect step.")
    eval_num_simulations: int | None = Field(
        None, ge=1, description="Simulations per eval step (None: num_simulations)."
    )
    reanalyze_num_simulations: int | None = Field(
        None, ge=1, description="Simulations per reanalysis root (None: num_simulations)."
    )
    discount_factor: float = Field(0.997, gt=0.0, le=1.0, description="Discount γ.")
    pb_c_base: float = Field(19652.0, gt=0.0, description="PUCT c_base (MuZero app. B).")
    pb_c_init: float = Field(1.25, gt=0.0, description="PUCT c_init (MuZero app. B).")
    root_dirichlet_alpha: float = Field(0.3, gt=0.0, description="Root Dirichlet noise α.")
    root_noise_weight: float = Field(0.25, ge=0.0, le=1.0, description="Root noise mix weight.")
    value_delta_max: float = Field(
        0.01, ge=0.0, description="Minimum Q range used by min-max normalisation."
    )
    fixed_temperature_value: float = Field(
        0.25, gt=0.0, description="Visit-count temperature when no manual decay is used."
    )
    manual_temperature_decay: bool = Field(
        False, description="Temperature 1 → 0.5 → 0.25 over the training-steps threshold."
    )
    threshold_training_steps_for_final_temperature: int = Field(
        100_000, ge=1, description="Train iterations at which the decayed temperature is final."
    )
    eps: EpsilonGreedyConfig = Field(
        default_factory=EpsilonGreedyConfig, description="Epsilon-greedy exploration."
    )
    # data
    game_segment_length: int = Field(50, ge=1, description="Transitions per game segment (L).")
    num_segments: int | None = Field(
        None, ge=1, description="Segments per collect call (None: collector_env_num)."
    )
    num_unroll_steps: int = Field(5, ge=1, description="Unroll steps K of the learner.")
    td_steps: int = Field(5, ge=1, description="n of the n-step value target (T).")
    replay_buffer_size: int = Field(
        1_000_000, ge=1, description="Replay capacity in transitions (FIFO eviction)."
    )
    batch_size: int = Field(256, ge=1, description="Learner batch size.")
    replay_ratio: float = Field(
        0.25,
        gt=0.0,
        description="Learner steps per collected transition (if no update_per_collect).",
    )
    update_per_collect: int | None = Field(
        None, ge=1, description="Fixed learner steps per collect (overrides replay_ratio)."
    )
    train_start_after_envsteps: int = Field(
        0, ge=0, description="Training starts once more env steps than this were collected."
    )
    use_priority: bool = Field(False, description="Prioritized replay (PER).")
    priority_prob_alpha: float = Field(0.6, ge=0.0, description="PER exponent α.")
    priority_prob_beta: float = Field(0.4, ge=0.0, description="PER importance exponent β.")
    reanalyze_ratio: float = Field(
        0.0,
        ge=0.0,
        le=1.0,
        description="Fraction of each batch whose policy target is re-searched.",
    )
    buffer_reanalyze_freq: float = Field(
        0.0,
        ge=0.0,
        description="Whole-buffer reanalysis: ≥1 times per train budget, <1 once every 1/freq "
        "budgets; 0 disables.",
    )
    reanalyze_batch_size: int = Field(160, ge=1, description="Sequences per buffer reanalysis.")
    reanalyze_partition: float = Field(
        0.75, gt=0.0, le=0.75, description="Oldest fraction of segments eligible for reanalysis."
    )
    # learner
    optim_type: Literal["SGD", "Adam", "AdamW"] = Field("Adam", description="Optimizer.")
    learning_rate: float = Field(3e-3, gt=0.0, description="Initial learning rate.")
    weight_decay: float = Field(1e-4, ge=0.0, description="Weight decay.")
    momentum: float = Field(0.9, ge=0.0, description="SGD momentum.")
    lr_schedule: Literal["constant", "piecewise", "cosine"] = Field(
        "constant",
        description="piecewise: ×0.1 at half the threshold, ×0.01 after it; cosine: to 0.",
    )
    threshold_training_steps_for_final_lr: int = Field(
        50_000, ge=1, description="Train iterations at which the LR schedule reaches its end."
    )
    grad_clip_value: float = Field(10.0, gt=0.0, description="Gradient-norm clip.")
    target_update_type: Literal["hard", "ema"] = Field(
        "hard", description="Target network update: hard copy or EMA."
    )
    target_update_freq: int = Field(100, ge=1, description="Hard copy every this many steps.")
    target_update_theta: float = Field(0.05, gt=0.0, le=1.0, description="EMA rate θ.")
    value_loss_weight: float = Field(0.25, ge=0.0, description="Weight of the value loss.")
    reward_loss_weight: float = Field(1.0, ge=0.0, description="Weight of the reward loss.")
    policy_loss_weight: float = Field(1.0, ge=0.0, description="Weight of the policy loss.")
    policy_entropy_weight: float = Field(5e-3, ge=0.0, description="Entropy bonus weight.")
    ssl_loss_weight: float = Field(
        0.0, ge=0.0, description="Self-supervised consistency loss weight (0 disables)."
    )
    absorbing_terminal: bool = Field(
        False,
        description="muzero: train the unroll steps past a true terminal as absorbing states "
        "(value 0, reward 0 for the step into them; MuZero app. G, the reference's trained zero "
        "padding) instead of masking them.",
    )
    kv_cache_clear_interval: int = Field(
        2000,
        ge=0,
        description="UniZero: invalidate every env's root KV cache every this many env steps of "
        "that env (0 disables); caches are rebuilt exactly from the raw recent observations.",
    )
    context_length_init: int = Field(
        5,
        ge=1,
        description="muzero_context / muzero_rnn_full_obs: acting re-encodes the root from the "
        "observation (muzero_context) or restarts the latent history (muzero_rnn_full_obs) at "
        "every episode start and every this many env steps of an env; 1 is plain muzero acting.",
    )
    gumbel: GumbelConfig = Field(
        default_factory=GumbelConfig, description="Gumbel search settings (gumbel_muzero only)."
    )
    sampled: SampledConfig = Field(
        default_factory=SampledConfig,
        description="Sampled search settings (the sampled types only).",
    )
    value_prefix: ValuePrefixConfig = Field(
        default_factory=ValuePrefixConfig,
        description="Value-prefix LSTM settings (efficientzero, sampled_efficientzero).",
    )
    stochastic: StochasticConfig = Field(
        default_factory=StochasticConfig,
        description="Chance codes and loss weights (stochastic_muzero only).",
    )
    # schedule
    eval_freq: int = Field(100, ge=1, description="Evaluate every this many train iterations.")
    save_ckpt_freq: int = Field(
        1000, ge=1, description="Write a periodic checkpoint every this many train iterations."
    )
    async_pipeline: AsyncPipelineConfig = Field(
        default_factory=AsyncPipelineConfig, description="Async segment pipeline settings."
    )

    @model_validator(mode="before")
    @classmethod
    def _type_defaults(cls, data):
        """A type's own defaults (e.g. efficientzero's SSL weight 2) for keys not given."""
        if isinstance(data, dict):
            merged = dict(_TYPE_DEFAULTS.get(data.get("type", "muzero"), {}))
            for key, value in data.items():
                default = merged.get(key)
                both = isinstance(default, dict) and isinstance(value, dict)
                merged[key] = {**default, **value} if both else value
            data = merged
        return data

    @model_validator(mode="after")
    def _check_sizes(self) -> PolicyConfig:
        if self.replay_buffer_size <= self.batch_size:
            raise ValueError("replay_buffer_size must be larger than batch_size")
        if self.type in ("unizero", "sampled_unizero") and (
            self.model.world_model.context_steps < self.num_unroll_steps
        ):
            raise ValueError(
                "model.world_model.context_steps must be >= num_unroll_steps (the training "
                "sequence of 2K tokens must fit the window)"
            )
        if self.eps.hold_steps > 1 and self.model.continuous_action_space:
            raise ValueError(
                "eps.hold_steps > 1 holds discrete random actions; set it to 1 for a "
                "continuous action space"
            )
        return self


class CheckpointConfig(_Strict):
    """When the resumable `ckpt/ckpt_latest.pth.tar` is written (besides every stop)."""

    latest_interval_s: float = Field(
        300.0,
        ge=0.0,
        description="Write ckpt_latest at least every this many seconds of wall time, so a "
        "killed run loses at most this much; 0 disables the time rule.",
    )
    latest_interval_train_iter: int = Field(
        0,
        ge=0,
        description="Also write ckpt_latest every this many train iterations; 0 disables.",
    )


class ExperimentConfig(_Strict):
    """One experiment: where it writes, when it stops, what it plays and how it learns."""

    exp_name: str = Field(
        "runs/experiment", description="Output directory, relative to the working directory."
    )
    seed: int = Field(0, ge=0, description="Seed of every RNG in the run.")
    max_env_step: int = Field(
        10_000_000, ge=1, description="Stop after this many collected env steps."
    )
    max_train_iter: int = Field(10_000_000, ge=1, description="Stop after this many learner steps.")
    env: EnvConfig = Field(description="Environment settings.")
    policy: PolicyConfig = Field(default_factory=PolicyConfig, description="Policy settings.")
    checkpoint: CheckpointConfig = Field(
        default_factory=CheckpointConfig, description="Resumable checkpoint schedule."
    )

    @property
    def num_segments(self) -> int:
        """Segments per collect call."""
        return self.policy.num_segments or self.env.collector_env_num
