"""build(cfg) → the components of a run: learner, replay buffer, collector, evaluator.

Runs in: driver. The networks (`algos/registry.py`), collectors and evaluators
(`workers/factory.py`; both re-exported here) are built below pipeline/, so that worker
processes and Ray actors build theirs without importing it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from zeropipe.algos.registry import build_network
from zeropipe.buffer import ReplayBuffer
from zeropipe.config import ExperimentConfig
from zeropipe.envs import EnvSpec, env_spec
from zeropipe.learner.learner import Learner
from zeropipe.workers.factory import (  # the actors are built below pipeline/ (workers build them)
    ACTOR_SEED_STRIDE,
    EVAL_SEED_OFFSET,
    actor_device,
    build_collector,
    build_evaluator,
)

__all__ = [
    "ACTOR_SEED_STRIDE",
    "EVAL_SEED_OFFSET",
    "Components",
    "actor_device",
    "build_collector",
    "build_driver",
    "build_evaluator",
    "build_network",
    "seed_everything",
]


def seed_everything(seed: int) -> None:
    """Seed torch and numpy's legacy global RNG (our own code uses explicit generators)."""
    torch.manual_seed(seed)
    np.random.seed(seed % (2**32))


@dataclass
class Components:
    """What one run is made of (driver side)."""

    spec: EnvSpec
    learner: Learner
    buffer: ReplayBuffer


def build_driver(cfg: ExperimentConfig) -> Components:
    """Learner and replay buffer, seeded."""
    seed_everything(cfg.seed)
    spec = env_spec(cfg.env)
    p = cfg.policy
    learner = Learner(build_network(cfg, spec), p, len(spec.frame_shape), cfg.seed)
    buffer = ReplayBuffer(
        p.replay_buffer_size,
        num_unroll_steps=p.num_unroll_steps,
        td_steps=p.td_steps,
        discount=p.discount_factor,
        use_priority=p.use_priority,
        alpha=p.priority_prob_alpha,
        beta=p.priority_prob_beta,
        seed=cfg.seed,
        n_step_horizon=p.n_step_horizon,
    )
    return Components(spec=spec, learner=learner, buffer=buffer)
