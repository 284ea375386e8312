"""Experiment configuration: schema, YAML loading, overrides.

The policy types' own sections live beside their algorithms (`algos/`) and register themselves
(`register_policy_config`); `policy` is validated as the section of its `type`.
"""

from zeropipe.config.async_pipeline import AsyncPipelineConfig
from zeropipe.config.env import EnvConfig
from zeropipe.config.experiment import CheckpointConfig, ExperimentConfig
from zeropipe.config.loader import ConfigError, config_from_dict, dump_config, load_config
from zeropipe.config.model import (
    ContinuousHead,
    HistoryModelConfig,
    ModelConfig,
    ProjectionModelConfig,
    UniZeroModelConfig,
    ValuePrefixConfig,
    WorldModelConfig,
)
from zeropipe.config.policy import (
    EpsilonGreedyConfig,
    PolicyConfig,
    policy_config_class,
    register_policy_config,
    registered_policy_types,
    unregister_policy_config,
)
from zeropipe.config.section import Section
from zeropipe.config.tracking import WandbConfig

__all__ = [
    "AsyncPipelineConfig",
    "CheckpointConfig",
    "ConfigError",
    "ContinuousHead",
    "EnvConfig",
    "EpsilonGreedyConfig",
    "ExperimentConfig",
    "HistoryModelConfig",
    "ModelConfig",
    "PolicyConfig",
    "ProjectionModelConfig",
    "Section",
    "UniZeroModelConfig",
    "ValuePrefixConfig",
    "WandbConfig",
    "WorldModelConfig",
    "config_from_dict",
    "dump_config",
    "load_config",
    "policy_config_class",
    "register_policy_config",
    "registered_policy_types",
    "unregister_policy_config",
]
