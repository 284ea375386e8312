"""policy.type → its `Algorithm` (docs/policies/): config section, family and search policy.

Runs in: any. The top of `algos/`: it imports every built-in type's module, and no module of
`algos/` imports it. Importing it registers the built-in types (their config sections too, so
that `config` validates a `policy` mapping as its type's section). A type of one's own is one
`register(Algorithm(MySection, MY_FAMILY, "puct"))` call in its own module, with no edit here;
this module is the package's `zeropipe.policy_types` entry point (pyproject.toml), which config/
loads at its first look-up of a type;
name it `my_package.my_module:my_type` (its section's `type`) so that every process, worker
processes included, imports that module when it reads the config
(`config.policy_config_class`).
"""

from __future__ import annotations

import contextlib

import torch

from zeropipe.algos.algorithm import Algorithm
from zeropipe.algos.efficientzero import EFFICIENTZERO, EfficientZeroConfig
from zeropipe.algos.gumbel_muzero import GUMBEL, GumbelMuZeroConfig
from zeropipe.algos.muzero import MUZERO, MuZeroConfig
from zeropipe.algos.muzero_context import MUZERO_CONTEXT, MuZeroContextConfig
from zeropipe.algos.muzero_rnn_full_obs import (
    MUZERO_RNN_FULL_OBS,
    PUCT_QUIET_REANALYSIS,
    MuZeroRNNFullObsConfig,
)
from zeropipe.algos.network_search import NetworkSearch, RootSource
from zeropipe.algos.observation import stacked_input_shape
from zeropipe.algos.sampled_efficientzero import SAMPLED_EFFICIENTZERO, SampledEfficientZeroConfig
from zeropipe.algos.sampled_muzero import SAMPLED_MUZERO, SampledMuZeroConfig
from zeropipe.algos.sampled_unizero import SAMPLED_UNIZERO, SampledUniZeroConfig
from zeropipe.algos.stochastic import STOCHASTIC, StochasticMuZeroConfig
from zeropipe.algos.unizero import UNIZERO, UniZeroConfig
from zeropipe.config import (
    ConfigError,
    ContinuousHead,
    ExperimentConfig,
    PolicyConfig,
    policy_config_class,
    register_policy_config,
    unregister_policy_config,
)
from zeropipe.envs import EnvSpec
from zeropipe.models import Network

ALGORITHMS: dict[str, Algorithm] = {}


class UnsupportedPolicyError(ConfigError):
    """No policy type of that name is registered."""


def register(algo: Algorithm, default: bool = False) -> None:
    """Make `algo` the policy type named by its config section's `type` (with `default`, the
    type of a config that names none).

    Raises:
        ValueError: another algorithm is registered under that name.
    """
    if ALGORITHMS.get(algo.name, algo) is not algo:
        raise ValueError(f"policy.type {algo.name!r} is registered already")
    register_policy_config(algo.config, default)
    ALGORITHMS[algo.name] = algo


def unregister(name: str) -> None:
    """Forget a registered type (for tests that register a type of their own)."""
    ALGORITHMS.pop(name, None)
    unregister_policy_config(name)


register(Algorithm(MuZeroConfig, MUZERO, "puct"), default=True)
for _builtin in (
    Algorithm(GumbelMuZeroConfig, GUMBEL, "gumbel"),
    Algorithm(SampledMuZeroConfig, SAMPLED_MUZERO, "sampled"),
    Algorithm(EfficientZeroConfig, EFFICIENTZERO, "puct"),
    Algorithm(SampledEfficientZeroConfig, SAMPLED_EFFICIENTZERO, "sampled"),
    Algorithm(UniZeroConfig, UNIZERO, "puct"),
    Algorithm(SampledUniZeroConfig, SAMPLED_UNIZERO, "sampled"),
    Algorithm(MuZeroContextConfig, MUZERO_CONTEXT, "puct"),
    Algorithm(MuZeroRNNFullObsConfig, MUZERO_RNN_FULL_OBS, PUCT_QUIET_REANALYSIS),
    Algorithm(StochasticMuZeroConfig, STOCHASTIC, "chance"),
):
    register(_builtin)


def algorithm(policy_type: str) -> Algorithm:
    """The algorithm of `policy_type`.

    Raises:
        UnsupportedPolicyError: no type of that name is registered.
    """
    if policy_type in ALGORITHMS:
        return ALGORITHMS[policy_type]
    with contextlib.suppress(ValueError):
        policy_config_class(policy_type)  # imports a `module:name` type's module
    if policy_type in ALGORITHMS:
        return ALGORITHMS[policy_type]
    raise UnsupportedPolicyError(
        f"policy.type {policy_type!r} is not a policy type of this version of zeropipe; "
        f"available: {', '.join(sorted(ALGORITHMS))}"
    )


def build_network(cfg: ExperimentConfig, spec: EnvSpec) -> torch.nn.Module:
    """A fresh network of the policy type's family for this config and env."""
    shape = stacked_input_shape(spec.frame_shape, spec.frame_stack)
    family = algorithm(cfg.policy.type).family
    network = family.build_network(shape, spec.action_space_size, cfg.policy)
    if cfg.policy.channels_last:  # 4-D (conv) weights only; load_state_dict keeps the layout
        network = network.to(memory_format=torch.channels_last)
    return network


def actor_search(
    cfg: PolicyConfig,
    network: Network,
    frame_ndim: int,
    num_envs: int,
    device: str,
) -> tuple[NetworkSearch, RootSource]:
    """The policy type's search over `network` (moved to `device`) and its per-env root state."""
    algo = algorithm(cfg.type)
    search = NetworkSearch(
        network.to(device), frame_ndim, algo.search_policy, device, cfg.actor_inference
    )
    return search, algo.family.root_source(search.network, num_envs, cfg)


def check_action_kind(policy: PolicyConfig, env_id: str, continuous: bool, size: int) -> None:
    """The env's action kind and the policy's model must agree (checked at config load, before
    anything is written; the collector checks again).

    Args:
        policy: the policy settings.
        env_id: the env, for the message.
        continuous: the env has Box actions.
        size: D for Box actions, A for discrete ones.

    Raises:
        ConfigError: naming the env, its action kind and the fix.
    """
    if continuous == policy.model.continuous_actions:
        return
    if continuous:
        owners = " / ".join(sorted(a.name for a in ALGORITHMS.values() if _has_box_head(a)))
        raise ConfigError(
            f"env.env_id {env_id!r} has Box actions of {size} dimensions; continuous actions "
            f"need policy.type {owners} with policy.model.continuous_action_space: true"
        )
    raise ConfigError(
        f"env.env_id {env_id!r} has {size} discrete actions; set "
        "policy.model.continuous_action_space: false"
    )


def _has_box_head(algo: Algorithm) -> bool:
    model = algo.config.model_fields["model"].annotation
    return isinstance(model, type) and issubclass(model, ContinuousHead)
