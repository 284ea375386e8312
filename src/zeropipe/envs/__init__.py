"""Environments: gymnasium envs by id, Atari preprocessing, and batches of envs stepped together.

Runs in: any. Importing this package registers ``zeropipe/Chain-v0`` (the tiny deterministic test
env) and the ALE ids in gymnasium.
"""

from zeropipe.envs.batch import BatchStep, EnvBatch
from zeropipe.envs.chain import CHAIN_ENV_ID, ChainEnv
from zeropipe.envs.registry import check_env_id, env_spec, register_envs
from zeropipe.envs.spec import EnvError, EnvSpec

register_envs()

__all__ = [
    "CHAIN_ENV_ID",
    "BatchStep",
    "ChainEnv",
    "EnvBatch",
    "EnvError",
    "EnvSpec",
    "check_env_id",
    "env_spec",
]
