"""A config moved to another env by `--set env.env_id=...`: its env-specific values are checked
against the new env, and adapted with a note or refused with one line saying what to set.

Runs in: driver (the CLI, before anything is written).

- `env.stop_value` of the file's env means nothing on another env (Pendulum's -150 is reached by
  a random policy on MountainCarContinuous-v0). Unless the override also sets it, it becomes the
  new env's gymnasium `reward_threshold`, the env authors' own "solved" bar, which is what the
  stop values of these configs are (CartPole's 195 is v0's threshold); an env without one gets
  no stop value (the field's default, 1e9: the run ends at its budget). Either is printed.
- `policy.model.kind` mlp or conv, written for vector or image observations, is refused on the
  other kind (CartPole's MLP on Breakout frames trained, flattened, without a word); `auto` follows
  the observations and passes. Setting the kind in the same command is the user's choice.
- Discrete versus Box actions are checked for every config (`check_action_kind`).
"""

from __future__ import annotations

from zeropipe.config import ConfigError, EnvConfig, ExperimentConfig
from zeropipe.config.env_swap import EnvSwap
from zeropipe.envs import EnvSpec

NO_STOP_VALUE = EnvConfig.model_fields["stop_value"].default
IMAGE_CONFIG = "configs/pong_muzero.yaml"
VECTOR_CONFIG = "configs/cartpole_muzero.yaml"


def fit_to_env(cfg: ExperimentConfig, spec: EnvSpec, swap: EnvSwap) -> list[str]:
    """Check and adapt `cfg` (already moved to `swap.env_id`) to the new env, in place.

    Args:
        cfg: the loaded config; its `env.stop_value` may be replaced.
        spec: the new env's spec.
        swap: what the override changed.

    Returns:
        One note per adapted value, to print.

    Raises:
        ConfigError: a model kind written for the other observation kind.
    """
    _check_model_kind(cfg, spec, swap)
    if swap.file_stop_value is None or "env.stop_value" in swap.overridden:
        return []
    threshold = registered_reward_threshold(swap.env_id)
    cfg.env.stop_value = NO_STOP_VALUE if threshold is None else threshold
    written = (
        f"env.stop_value {swap.file_stop_value:g} was written for {swap.written_for}, not "
        f"{swap.env_id}"
    )
    if threshold is None:
        return [
            f"{written}, which registers no reward_threshold: no stop value, the run ends at "
            "max_env_step / max_train_iter (set env.stop_value to stop earlier)"
        ]
    return [
        f"{written}: using {swap.env_id}'s registered reward_threshold {threshold:g} "
        "(set env.stop_value to choose another)"
    ]


def registered_reward_threshold(env_id: str) -> float | None:
    """gymnasium's `reward_threshold` of a registered id (None when it registers none)."""
    import gymnasium as gym

    from zeropipe.envs.registry import gym_id, register_envs

    register_envs()
    threshold = gym.registry[gym_id(env_id)].reward_threshold
    return None if threshold is None else float(threshold)


def _check_model_kind(cfg: ExperimentConfig, spec: EnvSpec, swap: EnvSwap) -> None:
    kind = cfg.policy.model.kind
    if kind == "auto" or "policy.model.kind" in swap.overridden:
        return
    image = len(spec.frame_shape) == 3
    if image == (kind == "conv"):
        return
    what = f"image observations {spec.frame_shape}" if image else "vector observations"
    want, example = ("conv", IMAGE_CONFIG) if image else ("mlp", VECTOR_CONFIG)
    raise ConfigError(
        f"env.env_id {swap.env_id!r} has {what}, but policy.model.kind {kind} was written for "
        f"{swap.written_for}: set policy.model.kind={want} (or auto), or start from a config "
        f"of that kind such as {example}"
    )
