"""The `policy` section: what every policy type reads, and the table that picks a type's section.

Runs in: any. `PolicyConfig` holds the fields every type reads (search, data, learner, schedule,
async pipeline). Each policy type declares its own subclass beside its algorithm in `algos/`
(acme's per-agent config next to its builder): its `type` literal, the options only it reads and
its `model` section. Validating a `policy` mapping picks the subclass registered for its `type`
(`register_policy_config`). config/ names no type and no module of algos/: the first look-up
loads the package's policy-type plugins, the `zeropipe.policy_types` entry points (the
package's own, in pyproject.toml, is the module that registers the built-in types and the
default one). A third-party package adds types the same way.
"""

from __future__ import annotations

import importlib
from importlib.metadata import entry_points
from typing import Any, ClassVar, Literal

from pydantic import Field, ValidationError, model_validator
from pydantic_core import InitErrorDetails

from zeropipe.config.async_pipeline import AsyncPipelineConfig
from zeropipe.config.legacy import drop_other_types_defaults
from zeropipe.config.model import ModelConfig
from zeropipe.config.section import MAY_CHANGE_ON_RESUME, Section

# The entry-point group whose modules register policy types when loaded (pyproject.toml).
PLUGIN_GROUP = "zeropipe.policy_types"
# A search tree holds num_simulations + 1 nodes per root in arrays [B, N, A]: far past the
# reference's largest setting (800) they only exhaust memory.
MAX_SIMULATIONS = 100_000

_SECTIONS: dict[str, type[PolicyConfig]] = {}
_DEFAULT: list[str] = []  # the default type's name, once registered
_PLUGINS_LOADED: list[bool] = []


class EpsilonGreedyConfig(Section):
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


class PolicyConfig(Section):
    """Algorithm, search, replay and learner settings (LightZero's `policy` section).

    The fields every policy type reads; a type's own options live in its subclass (`algos/`).
    Validating this base class with a mapping validates the subclass registered for its `type`.
    """

    # the reference's AdamW grouping rule for the type (learner/param_groups.py), None: it has
    # no AdamW; read where `optimizer_groups` is 'reference'
    REFERENCE_ADAMW: ClassVar[str | None] = None
    # Options added later with a default that changes what a run does: key (under `policy.`) ->
    # the behaviour before the option existed. A run's config.yaml written before then lacks the
    # key, and resuming it with the new default would change the run midway; a type's section
    # adds its own (config/versions.py: the migration to version 2).
    # LightZero's `model_type` that is this policy type here (`zeropipe import` names it)
    LIGHTZERO_MODEL_TYPE: ClassVar[str | None] = None
    OLDER_VALUES: ClassVar[dict[str, Any]] = {
        # the search's step module by module, before the traced and frozen steps (same
        # arithmetic as traced; frozen folds batch norms, which rounds differently)
        "actor_inference": "eager",
        # AdamW's one parameter group, before the reference's groups were an option: an older
        # run resumes with the optimiser it started with, whatever its type's default is now
        "optimizer_groups": "one",
        # the horizon per unroll step, before the reference's horizon was an option
        "n_step_horizon": "per_step",
        # one weights version per collect, the reference's rule, before 'refresh' was the default
        "async_pipeline.collect_freshness": "reference",
    }

    type: str = Field(
        default_factory=lambda: default_policy_type(),
        description="Policy type, one of the ten in docs/policies/index.md (unset: the default).",
    )
    device: str = Field(
        "cpu",
        pattern=r"^(cpu|cuda(:\d+)?|mps)$",
        description="Torch device of the learner: 'cpu', 'cuda' or 'cuda:N', 'mps'.",
        json_schema_extra=MAY_CHANGE_ON_RESUME,
    )
    root_visit_value: Literal["zero", "network"] = Field(
        "zero",
        description="What the search root's initial visit adds to its value sum: 'zero' "
        "(every LightZero tree, its Gumbel tree included: one visit, no value; root value "
        "W/(n+1)) or 'network' (mctx: the network's root value, (v+W)/(n+1)). With |V| large "
        "next to the differences between actions (Acrobot, V ~ -85) 'zero' widens the min-max "
        "range until the visits follow the prior; measured there, 'network' learns "
        "(configs/acrobot_muzero.yaml).",
    )
    tie_break: Literal["random", "first"] = Field(
        "first",
        description="PUCT ties in collect and reanalysis searches (not read by Gumbel search): "
        "'first' (the lowest such action; LightZero's `deterministic` flag) or 'random' "
        "(LightZero's default: a uniform pick among the scores within 1e-6 of the maximum, from "
        "a stream seeded by the actor's generator, so runs stay reproducible per seed). 'first' "
        "by default, a measured deviation: on CartPole seed 0 the random rule reached 195 later "
        "for two types or not within 9,256 env steps for a third (docs/parity.md S4).",
    )
    eval_tie_break: Literal["random", "first"] = Field(
        "first",
        description="PUCT ties in eval searches, as tie_break. LightZero breaks eval ties at "
        "random in every MuZero-family tree and the sampled UniZero's, and at the first in "
        "UniZero's eval search.",
    )
    channels_last: bool = Field(
        True,
        description="Keep conv weights in channels-last memory order (learner and actors); the "
        "same arithmetic in another layout, which oneDNN runs faster on CPU (measured on Pong: "
        "learner step 1.22x, actor inference 1.1x). No effect on models without convs.",
    )
    learner_autocast: Literal["auto", "none", "bf16"] = Field(
        "auto",
        description="'bf16': the learner's unroll and loss, and the target network's bootstrap "
        "values, run under torch.autocast in bfloat16 (targets are read out, and priorities "
        "and the optimizer kept, in float32); 'none': float32; 'auto': bf16 on a CPU with bf16 "
        "instructions (avx512_bf16 or AMX), float32 elsewhere (learner/precision.py). "
        "Measured on such a CPU, learner steps/s against float32: Pong MuZero 1.5-1.6x, "
        "Acrobot MuZero 1.39x, CartPole MuZero 1.05x; learning: docs/results.md, 'Inference and "
        "precision'.",
    )
    actor_inference: Literal["compiled", "frozen", "traced", "eager"] = Field(
        "compiled",
        description="How the network runs where nothing is trained: the search's step "
        "(collect, eval, reanalysis) and the learner's bootstrap values. 'compiled' (the "
        "default): as 'frozen', but where the network is an MLP MuZero network (vector "
        "latents, discrete actions) and the search a PUCT or Gumbel one on the CPU, all of a "
        "search's simulations, the network's step included, run as one compiled numba program "
        "(algos/compiled_search.py), which rounds differently from eager within float32. "
        "'traced': one "
        "TorchScript graph (algos/graphs.py; networks without caches; eager where tracing "
        "fails); 'frozen': that graph frozen while the weights stay put (parameters as "
        "constants, batch norms folded into the layer before, weights cast once under "
        "autocast; it follows every weight change); 'eager': module by module. The graph "
        "skips the per-op Python overhead that dominates small networks (docs/results.md, "
        "'Inference and precision'); "
        "frozen rounds differently from eager, within float32 (or bf16) precision.",
    )
    learner_num_threads: int | None = Field(
        None,
        ge=1,
        description="Torch CPU threads of the driver/learner process. None: chosen once per run "
        "(logged; a resumed run keeps its count): one for a model without convolutions, "
        "else the usable cores not busy with other processes at the start; in the async "
        "pipeline at most that, before every learner step, the cores not taken by the workers "
        "that have a request in flight (min 1).",
    )
    model: ModelConfig = Field(default_factory=ModelConfig, description="Network settings.")
    # search
    num_simulations: int = Field(
        25, ge=1, le=MAX_SIMULATIONS, description="MCTS simulations per collect step."
    )
    eval_num_simulations: int | None = Field(
        None,
        ge=1,
        le=MAX_SIMULATIONS,
        description="Simulations per eval step (None: num_simulations).",
        json_schema_extra=MAY_CHANGE_ON_RESUME,
    )
    reanalyze_num_simulations: int | None = Field(
        None,
        ge=1,
        le=MAX_SIMULATIONS,
        description="Simulations per reanalysis root (None: num_simulations).",
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
    n_step_horizon: Literal["per_step", "reference"] = Field(
        "per_step",
        description="The n-step value target's horizon. 'per_step': unroll step c sums "
        "td = min(td_steps, n - c) rewards (n: the segment's stored steps, its successor's "
        "padding included) and bootstraps at c + td, at the data's end too unless a true "
        "terminal ends the episode (after a time limit: the final observation's value). "
        "'reference' (the reference's `MuZeroGameBuffer._prepare_reward_value_context`, which "
        "its EfficientZero and UniZero buffers share): td = min(td_steps, n - root) once per "
        "sample; step c bootstraps only if c + td < n, whatever ended the episode. The targets "
        "differ only where c + td_steps >= n and no true terminal ends the data: 'per_step' "
        "adds discount^(n - c) times the final observation's value, 'reference' nothing.",
    )
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
    optimizer_groups: Literal["one", "reference"] = Field(
        "reference",
        description="AdamW's parameter groups. 'reference' (default): the reference's groups for "
        "the type (docs: parity S14): biases and norm and embedding weights not decayed (the "
        "MuZero family, betas 0.9/0.999), or every parameter of fewer than 2 dimensions not "
        "decayed (the sampled and UniZero types, nanoGPT's rule, betas 0.9/0.95); the "
        "chance-node type, whose reference has no AdamW, keeps one group. 'one': every "
        "parameter decayed by weight_decay, torch's betas (0.9, 0.999). SGD and Adam: one group "
        "either way. Measured on configs/cartpole_unizero.yaml, sync, 8 seeds: median env steps "
        "to 195 1,728 with 'reference' against 2,380 with 'one', no seed later.",
    )
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
    policy_entropy_weight: float = Field(5e-3, ge=0.0, description="Entropy bonus weight.")
    # schedule
    eval_freq: int = Field(
        100,
        ge=1,
        description="Evaluate every this many train iterations.",
        json_schema_extra=MAY_CHANGE_ON_RESUME,
    )
    eval_grid: Literal["learner_step", "budget_end"] = Field(
        "learner_step",
        description="Which weight versions an eval scores; both pipelines use the same rule, so "
        "a sync and an async run score the same versions. 'learner_step': the eval gate is "
        "checked after every learner step, so the versions at multiples of eval_freq are "
        "scored (a sync run evaluates inside a train budget; an async eval due while every "
        "evaluator is busy waits with its snapshot, async_pipeline.max_queued_evals). "
        "'budget_end': the gate is checked when a train budget ends (between collects), so the "
        "first budget end eval_freq or more learner steps after the last eval is scored (the "
        "reference's sync schedule).",
        json_schema_extra=MAY_CHANGE_ON_RESUME,
    )
    save_ckpt_freq: int = Field(
        1000,
        ge=1,
        description="Write a periodic checkpoint every this many train iterations.",
        json_schema_extra=MAY_CHANGE_ON_RESUME,
    )
    async_pipeline: AsyncPipelineConfig = Field(
        default_factory=AsyncPipelineConfig, description="Async segment pipeline settings."
    )

    def search_config(self, num_simulations: int) -> Any:
        """The `mcts.SearchConfig` of this type's search policy with `num_simulations`.

        Each type's section builds it (`algos/`): the settings every search reads and its search
        policy's own (Gumbel's, the sampled search's, the chance nodes').
        """
        raise NotImplementedError(f"policy.type {self.type!r} declares no search settings")

    @model_validator(mode="wrap")
    @classmethod
    def _the_types_section(cls, data: Any, handler):
        """A mapping validated as the base class becomes the section of its `type`."""
        if cls is PolicyConfig and isinstance(data, dict):
            name = data.get("type", default_policy_type())
            if not isinstance(name, str):
                raise ValueError(
                    f"policy.type must be one type name, e.g. {default_policy_type()} "
                    f"(got {name!r})"
                )
            section = policy_config_class(name)
            if section is not PolicyConfig:
                others = [(n, s) for n, s in _SECTIONS.items() if s is not section]
                name = section.model_fields["type"].default
                own, foreign = drop_other_types_defaults(data, section, others, name)
                if not foreign:
                    return section.model_validate(own)
                raise _with_section_errors(foreign, section, own)
        return handler(data)

    @model_validator(mode="after")
    def _check_sizes(self) -> PolicyConfig:
        if self.replay_buffer_size <= self.batch_size:
            raise ValueError("replay_buffer_size must be larger than batch_size")
        return self


def _with_section_errors(
    errors: list[InitErrorDetails], section: type[PolicyConfig], own: dict[str, Any]
) -> ValidationError:
    """`errors` (other types' options) and the section's own validation errors, as one error:
    a config's problems are reported all at once."""
    try:
        section.model_validate(own)
    except ValidationError as exc:
        errors = [*errors, *exc.errors(include_url=False)]  # type: ignore[list-item]
    return ValidationError.from_exception_data(section.__name__, errors)


def register_policy_config(section: type[PolicyConfig], default: bool = False) -> None:
    """Make `section` the config of the policy type named by its `type` field's default; with
    `default`, the type of a config that names none.

    Raises:
        ValueError: another section is registered under that name.
    """
    name = section.model_fields["type"].default
    if _SECTIONS.get(name, section) is not section:
        raise ValueError(f"policy.type {name!r} is registered already")
    _SECTIONS[name] = section
    if default:
        _DEFAULT[:] = [name]


def _load_plugins() -> None:
    """Load every `zeropipe.policy_types` entry point once (each registers its types)."""
    if _PLUGINS_LOADED:
        return
    _PLUGINS_LOADED.append(True)
    for plugin in entry_points(group=PLUGIN_GROUP):
        plugin.load()


# what a missing registry means: the entry points were not found
_NO_PLUGINS = (
    "zeropipe's package metadata is missing or older than its code, so its policy types were "
    "not loaded (reinstall it: make install, or pip install -e .)"
)


def default_policy_type() -> str:
    """The type of a config whose `policy` names none (the built-in types' registry says)."""
    _load_plugins()
    if not _DEFAULT:
        raise ValueError(f"no default policy type is registered: {_NO_PLUGINS}")
    return _DEFAULT[0]


def policy_config_class(policy_type: str) -> type[PolicyConfig]:
    """The registered section of `policy_type`.

    A type of one's own is named `module:name` (as third-party env ids are): the module, which
    registers the type when imported, is imported first. That is how a worker process, which
    receives only the config, finds a type that its driver registered.

    Raises:
        ValueError: no type of that name is registered (the message lists those that are), or
            its module cannot be imported.
    """
    _load_plugins()
    module, sep, _ = policy_type.partition(":")
    if policy_type not in _SECTIONS and sep:
        try:
            importlib.import_module(module)
        except ImportError as exc:
            message = f"policy.type {policy_type!r}: cannot import {module}: {exc}"
            raise ValueError(message) from None
    if policy_type not in _SECTIONS:
        available = ", ".join(sorted(_SECTIONS)) or f"none: {_NO_PLUGINS}"
        raise ValueError(
            f"policy.type {policy_type!r} is not a policy type of this version of zeropipe; "
            f"available: {available}"
        )
    return _SECTIONS[policy_type]


def registered_policy_types() -> tuple[str, ...]:
    """The names of every registered policy type, sorted."""
    _load_plugins()
    return tuple(sorted(_SECTIONS))


def types_of_lightzero_model(model_type: object) -> list[str]:
    """The registered types that a LightZero config of `model_type` is here."""
    _load_plugins()
    return [n for n, s in _SECTIONS.items() if model_type == s.LIGHTZERO_MODEL_TYPE]


def unregister_policy_config(policy_type: str) -> None:
    """Forget a registered type (for tests that register a type of their own)."""
    _SECTIONS.pop(policy_type, None)
