"""Experiment configuration: schema, YAML loading, overrides."""

from zeropipe.config.loader import ConfigError, config_from_dict, dump_config, load_config
from zeropipe.config.schema import (
    POLICY_TYPES,
    AsyncPipelineConfig,
    EnvConfig,
    EpsilonGreedyConfig,
    ExperimentConfig,
    GumbelConfig,
    ModelConfig,
    PolicyConfig,
    StochasticConfig,
    WorldModelConfig,
)

__all__ = [
    "POLICY_TYPES",
    "AsyncPipelineConfig",
    "ConfigError",
    "EnvConfig",
    "EpsilonGreedyConfig",
    "ExperimentConfig",
    "GumbelConfig",
    "ModelConfig",
    "PolicyConfig",
    "StochasticConfig",
    "WorldModelConfig",
    "config_from_dict",
    "dump_config",
    "load_config",
]
