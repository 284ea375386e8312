"""policy.type → its `Algorithm` (DESIGN §3): family, search policy and per-type options.

Runs in: any. Only types whose plug-in exists can be built; asking for another is a clear
configuration error naming what is available, raised before anything is written. A per-type
option set for a type it does not belong to (a Gumbel setting on a `muzero` config) is a
configuration error naming the key.
"""

from __future__ import annotations

from pydantic import BaseModel

from zeropipe.algos.algorithm import Algorithm
from zeropipe.algos.efficientzero import EFFICIENTZERO
from zeropipe.algos.muzero import MUZERO
from zeropipe.algos.muzero_context import MUZERO_CONTEXT
from zeropipe.algos.muzero_rnn_full_obs import MUZERO_RNN_FULL_OBS
from zeropipe.algos.sampled_efficientzero import SAMPLED_EFFICIENTZERO
from zeropipe.algos.sampled_muzero import SAMPLED_MUZERO
from zeropipe.algos.sampled_unizero import SAMPLED_UNIZERO
from zeropipe.algos.stochastic import STOCHASTIC
from zeropipe.algos.unizero import UNIZERO
from zeropipe.config import POLICY_TYPES, ConfigError, PolicyConfig

# Config keys under `policy` that only some types read.
_UNIZERO_OPTIONS = ("model.world_model", "kv_cache_clear_interval")
_RNN_OPTIONS = ("context_length_init", "model.rnn_hidden_size")
_SAMPLED_OPTIONS = (
    "sampled",
    "model.continuous_action_space",
    "model.sigma_type",
    "model.fixed_sigma_value",
)

ALGORITHMS: dict[str, Algorithm] = {
    algo.name: algo
    for algo in (
        Algorithm("muzero", MUZERO, "puct", options=("absorbing_terminal",)),
        Algorithm("gumbel_muzero", MUZERO, "gumbel", options=("gumbel",)),
        Algorithm("sampled_muzero", SAMPLED_MUZERO, "sampled", options=_SAMPLED_OPTIONS),
        Algorithm("efficientzero", EFFICIENTZERO, "puct", options=("value_prefix",)),
        Algorithm(
            "sampled_efficientzero",
            SAMPLED_EFFICIENTZERO,
            "sampled",
            options=(*_SAMPLED_OPTIONS, "value_prefix"),
        ),
        Algorithm("unizero", UNIZERO, "puct", options=_UNIZERO_OPTIONS),
        Algorithm(
            "sampled_unizero",
            SAMPLED_UNIZERO,
            "sampled",
            options=(*_SAMPLED_OPTIONS, *_UNIZERO_OPTIONS),
        ),
        Algorithm("muzero_context", MUZERO_CONTEXT, "puct", options=("context_length_init",)),
        Algorithm("muzero_rnn_full_obs", MUZERO_RNN_FULL_OBS, "puct", options=_RNN_OPTIONS),
        Algorithm("stochastic_muzero", STOCHASTIC, "chance", options=("stochastic",)),
    )
}


class UnsupportedPolicyError(ConfigError):
    """The policy type is valid but its plug-in is not part of this build."""


def algorithm(policy_type: str) -> Algorithm:
    """The algorithm of `policy_type`.

    Raises:
        UnsupportedPolicyError: a known type without a plug-in yet, or an unknown type.
    """
    if policy_type in ALGORITHMS:
        return ALGORITHMS[policy_type]
    known = "known" if policy_type in POLICY_TYPES else "unknown"
    raise UnsupportedPolicyError(
        f"policy.type {policy_type!r} ({known}) is not implemented in this version of zeropipe; "
        f"available: {', '.join(sorted(ALGORITHMS))}"
    )


def algorithm_for(cfg: PolicyConfig) -> Algorithm:
    """The algorithm of `cfg.type`, after checking that no other type's option is set.

    Raises:
        UnsupportedPolicyError: see `algorithm`.
        ConfigError: a per-type option of another type is set, naming the key and its owners.
    """
    algo = algorithm(cfg.type)
    for key in sorted({k for a in ALGORITHMS.values() for k in a.options} - set(algo.options)):
        if _is_set(cfg, key.split(".")):
            owners = sorted(a.name for a in ALGORITHMS.values() if key in a.options)
            raise ConfigError(
                f"policy.{key} is an option of policy.type {' / '.join(owners)}, not of "
                f"{cfg.type!r}; remove it or change policy.type"
            )
    return algo


def _is_set(model: BaseModel, path: list[str]) -> bool:
    """Whether the field at `path` differs from its default.

    Compared by value rather than by `model_fields_set`, so that a resolved config (`zeropipe
    config`, or a run's `config.yaml`, which spell out every default) loads for every type.
    """
    for part in path[:-1]:
        model = getattr(model, part)
    field = type(model).model_fields[path[-1]]
    return getattr(model, path[-1]) != field.get_default(call_default_factory=True)


def check_action_kind(policy: PolicyConfig, env_id: str, continuous: bool, size: int) -> None:
    """The env's action kind and `policy.model.continuous_action_space` must agree (checked at
    config load, before anything is written; the collector checks again).

    Args:
        policy: the policy settings.
        env_id: the env, for the message.
        continuous: the env has Box actions.
        size: D for Box actions, A for discrete ones.

    Raises:
        ConfigError: naming the env, its action kind and the fix.
    """
    wants = policy.model.continuous_action_space
    if continuous == wants:
        return
    owners = " / ".join(
        sorted(a.name for a in ALGORITHMS.values() if "model.continuous_action_space" in a.options)
    )
    if continuous:
        raise ConfigError(
            f"env.env_id {env_id!r} has Box actions of {size} dimensions; continuous actions "
            f"need policy.type {owners} with policy.model.continuous_action_space: true"
        )
    raise ConfigError(
        f"env.env_id {env_id!r} has {size} discrete actions; set "
        "policy.model.continuous_action_space: false"
    )
