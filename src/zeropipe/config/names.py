"""Help with key names: LightZero's names that differ from ours, and "did you mean" for typos.

Runs in: any (the loader's error messages). A LightZero user's config keys are answered with the
name to use here, never silently renamed: several of them mean something slightly different.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence

from pydantic import BaseModel

from zeropipe.config.experiment import ExperimentConfig
from zeropipe.config.policy import PolicyConfig, policy_config_class, registered_policy_types

# LightZero key -> what to write instead (docs/lightzero.md).
LIGHTZERO_NAMES: dict[str, str] = {
    "observation_shape": "zeropipe reads it from env.env_id; remove it",
    "action_space_size": "zeropipe reads it from env.env_id; remove it",
    "image_channel": "zeropipe reads it from env.env_id (and env.gray_scale); remove it",
    "frame_stack_num": "use env.frame_stack",
    "n_episode": "use env.collector_env_num (envs stepped together; a collect returns "
    "policy.num_segments segments)",
    "cuda": "use policy.device: cuda",
    "model_type": "use policy.model.kind (mlp | conv | auto); LightZero's conv_context and "
    "rnn_full_obs models are policy types of their own here (`zeropipe import` names them)",
    "latent_state_dim": "use policy.model.latent_dim",
    "piecewise_decay_lr_scheduler": "use policy.lr_schedule: piecewise",
    "lr_piecewise_constant_decay": "use policy.lr_schedule: piecewise",
    "support_scale": "use policy.model.value_support_range and reward_support_range, "
    "[-s, s + 1, 1] for support_scale s",
    "self_supervised_learning_loss": "use policy.ssl_loss_weight (> 0 turns the loss on)",
    "random_collect_episode_num": "zeropipe has no random-policy warm-up; "
    "policy.train_start_after_envsteps delays training instead",
    "env_type": "not needed: the env kind follows env.env_id; remove it",
    "mcts_ctree": "not needed: zeropipe has one compiled batched search; remove it",
    "categorical_distribution": "not needed: values and rewards are always categorical here",
    "use_ture_chance_label_in_chance_encoder": "use policy.stochastic.use_true_chance_label",
    "num_of_sampled_actions": "use policy.sampled.num_of_sampled_actions",
    "use_wandb": "use wandb.enabled: true (or train --wandb)",
    "model_path": "use train --init-from CKPT to start a new run from a checkpoint's weights "
    "(train RUN_DIR --resume continues a run); remove it",
    "res_connection_in_dynamics": "use policy.model.dynamics_residual",
    "collector_env_num": "use env.collector_env_num",
    "evaluator_env_num": "use env.evaluator_env_num (here only a bound: an evaluation's "
    "episodes play together, one env each; or remove it)",
}

# LightZero keys with no counterpart here -> (what the key was in LightZero, why zeropipe does
# not need it).
LIGHTZERO_UNNEEDED: dict[str, tuple[str, str]] = {
    "manager": (
        "DI-engine's env manager (subprocess or base, shared memory, retries)",
        "each collector steps env.collector_env_num envs itself and each evaluator one env per "
        "episode",
    ),
    "discrete_action_encoding_type": (
        "how a discrete action enters the dynamics network ('one_hot' or 'not_one_hot')",
        "a discrete action always enters it one-hot",
    ),
    "create_config": (
        "the DI-engine import names of the env, its manager and the policy",
        "policy.type and env.env_id pick the policy and the env",
    ),
}

# LightZero's value-prefix model reads it; here the types with a value-prefix LSTM do (their
# section at VALUE_PREFIX has the field), and every other type has no LSTM at all.
LSTM_KEY = "lstm_hidden_size"
VALUE_PREFIX = ("policy", "value_prefix")


def fields_at(path: Sequence[str], policy_type: str) -> list[str] | None:
    """The field names of the section at `path` (None: `path` is not a section)."""
    model: type[BaseModel] = ExperimentConfig
    for part in path:
        field = model.model_fields.get(str(part))
        annotation = field.annotation if field is not None else None
        if not (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
            return None
        model = annotation
        if model is PolicyConfig:
            try:
                model = policy_config_class(policy_type)
            except ValueError:
                return None
    return list(model.model_fields)


def other_types_owning(path: Sequence[str], key: str, policy_type: str) -> list[str]:
    """The other registered policy types whose section at `path` has the field `key` (empty
    outside `policy`, or when no other type has it)."""
    if not path or path[0] != "policy":
        return []
    return [
        name
        for name in registered_policy_types()
        if name != policy_type and key in (fields_at(path, name) or ())
    ]


def unknown_key_help(
    key: str,
    valid: Sequence[str] | None,
    policy_type: str,
    where: Sequence[str] = (),
) -> str:
    """One short clause after "unknown key X": LightZero's name, the policy section that has the
    key (LightZero writes a type's options flat in `policy`), a close match, or a pointer.

    Args:
        key: the unknown key (its last part).
        valid: the field names of the section it was written in (None: not a section).
        policy_type: the config's policy type (some LightZero keys map to one type's field).
        where: the path of the section it was written in, e.g. ("policy",).
    """
    if key == LSTM_KEY:
        return _lstm_help(policy_type)
    if key in LIGHTZERO_NAMES:
        return f"LightZero's name: {LIGHTZERO_NAMES[key]}"
    if key in LIGHTZERO_UNNEEDED:
        what, why = LIGHTZERO_UNNEEDED[key]
        return f"in LightZero, {what}; zeropipe does not need it ({why}): remove it"
    nested = _nested_home(key, where, policy_type)
    if nested:
        return nested
    close = difflib.get_close_matches(key, valid or (), n=1, cutoff=0.6)
    if close:
        return f"did you mean {close[0]!r}?"
    return "`zeropipe config --describe CONFIG` lists the valid keys"


def _lstm_help(policy_type: str) -> str:
    """LightZero's value-prefix LSTM size: this type's key for it, or "not used"."""
    types = registered_policy_types()
    owners = [t for t in types if LSTM_KEY in (fields_at(VALUE_PREFIX, t) or ())]
    key = ".".join((*VALUE_PREFIX, LSTM_KEY))
    if policy_type in owners:
        return f"LightZero's name (the value-prefix LSTM): use {key}"
    return (
        f"LightZero's value-prefix LSTM size, not used by policy.type {policy_type!r} (it has no "
        f"LSTM; {key} of {' / '.join(owners)}): remove it"
    )


def _nested_home(key: str, where: Sequence[str], policy_type: str) -> str:
    """Where `key`, written directly in `policy`, is a field one section down: in this type's
    own section, else in other types' (named). Empty when it is in none."""
    if tuple(where) != ("policy",):
        return ""
    homes: dict[str, list[str]] = {}  # "policy.section.key" -> the types that have it
    for type_name in registered_policy_types():
        for section in fields_at(["policy"], type_name) or ():
            if key in (fields_at(["policy", section], type_name) or ()):
                homes.setdefault(f"policy.{section}.{key}", []).append(type_name)
    for home, owners in homes.items():
        if policy_type in owners:
            return f"did you mean {home!r}?"
    return "; ".join(
        f"an option of policy.type {' / '.join(owners)} ({home!r} there)"
        for home, owners in homes.items()
    )
