"""The LightZero key map of `zeropipe import`: each LightZero config key, mapped to a zeropipe
key, dropped (not needed here, and why) or not supported (and why).

Runs in: driver. A rule is found by the key's dotted path in `main_config` (`PATH_RULES`), else by
its last name wherever it is written (`KEY_RULES`, which reuses the loader's LightZero hints,
names.py), else the key passes through when zeropipe has a field of that name at the same place
(`num_simulations`, `td_steps`, `reanalyze_ratio`, `env.stop_value`...). Anything else is "not
supported". Some rules read the value: `use_augmentation: False` is dropped, `True` is not
supported.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from zeropipe.config.names import LIGHTZERO_UNNEEDED, fields_at
from zeropipe.config.policy import types_of_lightzero_model

Kind = Literal["mapped", "dropped", "unsupported"]


@dataclass(frozen=True)
class Outcome:
    """What becomes of one LightZero key: the zeropipe keys it sets (dotted) and why."""

    kind: Kind
    targets: dict[str, Any] = field(default_factory=dict)
    why: str = ""


@dataclass(frozen=True)
class Context:
    """What a rule may read besides its value: the policy type and the whole main_config."""

    policy_type: str
    main: Mapping[str, Any]

    def get(self, dotted: str, default: Any = None) -> Any:
        node: Any = self.main
        for part in dotted.split("."):
            if not isinstance(node, Mapping) or part not in node:
                return default
            node = node[part]
        return node


Rule = Callable[[Any, Context], Outcome]


def to(target: str, convert: Callable[[Any], Any] | None = None) -> Rule:
    """Map to `target`, the value converted."""
    return lambda v, _: Outcome("mapped", {target: convert(v) if convert else v})


def drop(why: str) -> Rule:
    return lambda v, _: Outcome("dropped", why=why)


def unsupported(why: str) -> Rule:
    return lambda v, _: Outcome("unsupported", why=why)


def drop_when(ok: Any, why: str, otherwise: str) -> Rule:
    """Dropped when the value is `ok` (the behaviour zeropipe has), else not supported."""
    return lambda v, _: (
        Outcome("dropped", why=why) if v == ok else Outcome("unsupported", why=otherwise)
    )


def _schedule(name: str) -> Rule:
    def rule(value: Any, _: Context) -> Outcome:
        if value:
            return Outcome("mapped", {"policy.lr_schedule": name})
        return Outcome("dropped", why="off: the LR is constant unless another key sets a schedule")

    return rule


def _support(value: Any, _: Context) -> Outcome:
    bins = [-int(value), int(value) + 1, 1]
    return Outcome(
        "mapped",
        {"policy.model.value_support_range": bins, "policy.model.reward_support_range": bins},
    )


def _lstm(value: Any, ctx: Context) -> Outcome:
    if "lstm_hidden_size" in (fields_at(["policy", "value_prefix"], ctx.policy_type) or ()):
        return Outcome("mapped", {"policy.value_prefix.lstm_hidden_size": value})
    return Outcome("dropped", why=f"LightZero's {ctx.policy_type} model does not read it (no LSTM)")


def _model_type(value: Any, _: Context) -> Outcome:
    if value in ("mlp", "conv"):
        return Outcome("mapped", {"policy.model.kind": value})
    types = types_of_lightzero_model(value)
    why = f"here it is policy.type {' / '.join(types)}" if types else "no such model here"
    return Outcome("unsupported", why=why)


def _same_as(dotted: str, target: str) -> Rule:
    """A LightZero duplicate of another key (`policy.collector_env_num` of `env.`'s): mapped
    to the same target; a different value is a conflict the writer reports."""
    return lambda v, _: Outcome("mapped", {target: v}, why=f"LightZero's copy of {dotted}")


def _n_episode(value: Any, ctx: Context) -> Outcome:
    envs = ctx.get("env.collector_env_num")
    if value == envs:
        return Outcome("dropped", why="a collect steps env.collector_env_num envs, the same number")
    return Outcome(
        "unsupported",
        why=f"differs from env.collector_env_num ({envs}); a collect steps that many envs here",
    )


def _observation_shape(value: Any, _: Context) -> Outcome:
    if isinstance(value, list | tuple) and len(value) == 3 and value[1] == value[2]:
        return Outcome(
            "mapped", {"env.obs_size": value[-1]}, why="frames are resized to obs_size squared"
        )
    return Outcome("dropped", why="zeropipe reads it from env.env_id")


def _context_length(value: Any, ctx: Context) -> Outcome:
    steps = int(value) // 2  # an obs and an action token per env step
    unroll = ctx.get("policy.num_unroll_steps", 5)  # LightZero's default K
    if steps >= unroll:
        return Outcome("mapped", {_CONTEXT: steps}, why="tokens / 2")
    return Outcome(
        "mapped",
        {_CONTEXT: unroll},
        why=f"tokens / 2 is {steps}, raised to policy.num_unroll_steps: here one window holds "
        "the inference context and the training sequence",
    )


def _model_path(value: Any, _: Context) -> Outcome:
    if value is None:
        return Outcome("dropped", why="no weights to start from")
    return Outcome("unsupported", why="train --init-from CKPT starts a run from a checkpoint")


def _cuda(value: Any, _: Context) -> Outcome:
    return Outcome(
        "dropped",
        why="policy.device stays cpu (LightZero falls back to it without a GPU); set "
        "policy.device: cuda on a GPU machine",
    )


def _clip_threshold(value: Any, _: Context) -> Outcome:
    """The reference's fixed encoder clip: off at any value <= 0, here 0."""
    return Outcome("mapped", {"policy.latent_norm_clip_threshold": max(0.0, float(value))})


# the reference's head names (policy/head_clip_manager.py:100-115): "rewards" is "reward";
# "observations" is never clipped there (the loss reports no observation logits)
_HEADS = {"policy": "policy", "value": "value", "reward": "reward", "rewards": "reward"}


def _head_clip_config(value: Any, _: Context) -> Outcome:
    """`head_clip_config`: its heads, their thresholds and monitor_freq (its `enabled` is
    replaced by use_head_clip and log_freq is a log setting, as there)."""
    heads = [_HEADS[h] for h in value.get("enabled_heads") or [] if h in _HEADS]
    targets: dict[str, Any] = {"policy.head_clip.enabled_heads": list(dict.fromkeys(heads))}
    for head, schedule in (value.get("head_configs") or {}).items():
        for key, setting in schedule.items():
            if head in _HEADS:
                targets[f"policy.head_clip.{_HEADS[head]}.{key}"] = setting
    if "monitor_freq" in value:
        targets["policy.head_clip.monitor_freq"] = int(value["monitor_freq"])
    unread = sorted(set(value.get("enabled_heads") or []) - set(_HEADS))
    why = f"{', '.join(unread)} never clipped there, left out" if unread else ""
    return Outcome("mapped", targets, why=why)


_FROM_ENV = "zeropipe reads it from env.env_id"
_CONTEXT = "policy.model.world_model.context_steps"
_WM = "policy.model.world_model_cfg."

PATH_RULES: dict[str, Rule] = {
    "exp_name": to("exp_name", str),
    "env.env_name": to("env.env_id"),
    "env.observation_shape": _observation_shape,
    "env.frame_stack_num": to("env.frame_stack"),
    "env.collect_max_episode_steps": to("env.max_episode_steps"),
    "env.continuous": drop("the env's action space says it"),
    "env.manually_discretization": drop_when(
        False, "off", "zeropipe has no action discretization of continuous envs"
    ),
    "policy.collector_env_num": _same_as("env.collector_env_num", "env.collector_env_num"),
    "policy.evaluator_env_num": _same_as("env.evaluator_env_num", "env.evaluator_env_num"),
    "policy.n_episode": _n_episode,
    "policy.cuda": _cuda,
    "policy.model_path": _model_path,
    "policy.use_wandb": to("wandb.enabled", bool),
    "policy.piecewise_decay_lr_scheduler": _schedule("piecewise"),
    "policy.lr_piecewise_constant_decay": _schedule("piecewise"),
    "policy.cos_lr_scheduler": _schedule("cosine"),
    "policy.use_augmentation": drop_when(
        False, "off", "zeropipe has no image augmentation (shift, intensity)"
    ),
    "policy.random_collect_episode_num": drop_when(
        0, "no random warm-up", "no random-policy warm-up; policy.train_start_after_envsteps"
    ),
    "policy.analysis_sim_norm": drop_when(False, "a diagnostic, off", "no such diagnostic"),
    "policy.cal_dormant_ratio": drop_when(False, "a diagnostic, off", "no such diagnostic"),
    "policy.learn.learner.hook.save_ckpt_after_iter": to("policy.save_ckpt_freq", int),
    "policy.model.model_type": _model_type,
    "policy.model.latent_state_dim": to("policy.model.latent_dim"),
    "policy.model.lstm_hidden_size": _lstm,
    "policy.model.support_scale": _support,
    "policy.model.num_of_sampled_actions": to("policy.sampled.num_of_sampled_actions"),
    "policy.model.self_supervised_learning_loss": drop(
        "the SSL loss is on when policy.ssl_loss_weight > 0"
    ),
    "policy.model.use_sim_norm": drop_when(
        False, "off", "no SimNorm latent here (policy.model.state_norm is min-max)"
    ),
    "policy.model.frame_stack_num": drop("env.frame_stack says it"),
    "policy.model.gray_scale": drop("env.gray_scale says it"),
    "policy.model.image_channel": drop(_FROM_ENV),
    "policy.policy_ls_eps_start": to("policy.policy_ls_eps_start", float),
    "policy.policy_ls_eps_end": to("policy.policy_ls_eps_end", float),
    "policy.policy_ls_eps_decay_steps": to("policy.policy_ls_eps_decay_steps", int),
    "policy.use_encoder_clip_annealing": to("policy.use_encoder_clip_annealing", bool),
    "policy.encoder_clip_anneal_type": to("policy.encoder_clip_anneal_type", str),
    "policy.encoder_clip_start_value": to("policy.encoder_clip_start_value", float),
    "policy.encoder_clip_end_value": to("policy.encoder_clip_end_value", float),
    "policy.encoder_clip_anneal_steps": to("policy.encoder_clip_anneal_steps", int),
    "policy.latent_norm_clip_threshold": _clip_threshold,
    "policy.use_head_clip": to("policy.use_head_clip", bool),
    "policy.head_clip_config": _head_clip_config,
    _WM + "policy_entropy_weight": to("policy.policy_entropy_weight"),
    _WM + "context_length": _context_length,
    _WM + "norm_type": to("policy.model.norm_type"),
    _WM + "max_blocks": drop("the world model unrolls policy.num_unroll_steps"),
    _WM + "max_tokens": drop("2 × the unroll steps, derived"),
    _WM + "context_length_for_recurrent": drop("the search keeps context_steps too"),
    _WM + "device": drop("policy.device"),
    _WM + "obs_type": drop(_FROM_ENV),
    _WM + "encoder_type": drop("the encoder follows policy.model.kind"),
    _WM + "env_num": drop("env.collector_env_num / env.evaluator_env_num"),
    _WM + "collector_env_num": drop("env.collector_env_num"),
    _WM + "evaluator_env_num": drop("env.evaluator_env_num"),
    _WM + "continuous_action_space": drop_when(
        False, "a discrete env", "the sampled UniZero type is the continuous UniZero"
    ),
    _WM + "predict_latent_loss_type": drop_when(
        "mse", "the latent loss is MSE", "only the MSE latent loss here"
    ),
    _WM + "final_norm_option_in_obs_head": to(
        "policy.model.world_model.final_norm_option_in_obs_head", str
    ),
    _WM + "final_norm_option_in_encoder": to(
        "policy.model.world_model.final_norm_option_in_encoder", str
    ),
    _WM + "group_size": to("policy.model.world_model.simnorm_group_size", int),
    _WM + "rotary_emb": to("policy.model.world_model.rotary_emb", bool),
    _WM + "rope_theta": to("policy.model.world_model.rope_theta", float),
    _WM + "max_seq_len": drop("the rotation table covers the window (context_steps)"),
}

KEY_RULES: dict[str, Rule] = {
    "observation_shape": drop(_FROM_ENV),
    "action_space_size": drop(_FROM_ENV),
    "env_type": drop("the env kind follows env.env_id"),
    "mcts_ctree": drop("one compiled batched search"),
    "categorical_distribution": drop("values and rewards are always categorical"),
    "discrete_action_encoding_type": drop_when(
        "one_hot", LIGHTZERO_UNNEEDED["discrete_action_encoding_type"][1], "only one-hot here"
    ),
    "manager": drop(LIGHTZERO_UNNEEDED["manager"][1]),
}
