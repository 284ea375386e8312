"""Environments: gymnasium envs by id, Atari preprocessing, and batches of envs stepped together.

Runs in: any. Importing this package registers ``zeropipe/Chain-v0`` (the tiny deterministic test
env), ``zeropipe/2048-v0`` (the 2048 game) and the ALE ids in gymnasium.
"""

from zeropipe.envs.batch import BatchStep, EnvBatch
from zeropipe.envs.chain import CHAIN_ENV_ID, ChainEnv
from zeropipe.envs.env2048 import GAME_2048_ENV_ID, Game2048Env, random_policy_scores
from zeropipe.envs.registry import check_env_id, env_spec, register_envs
from zeropipe.envs.spec import EnvError, EnvSpec

register_envs()

__all__ = [
    "CHAIN_ENV_ID",
    "GAME_2048_ENV_ID",
    "BatchStep",
    "ChainEnv",
    "EnvBatch",
    "EnvError",
    "EnvSpec",
    "Game2048Env",
    "check_env_id",
    "env_spec",
    "random_policy_scores",
]
