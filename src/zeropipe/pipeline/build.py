"""build(cfg) → the components of a run: learner, replay buffer, collector, evaluator.

Runs in: driver (and workers, for their network copies). Seeds follow the reference's layout:
collector `seed + actor·1000`, evaluator `seed + 100000 + actor·1000`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from zeropipe.algos.observation import stacked_input_shape
from zeropipe.algos.registry import algorithm_for
from zeropipe.buffer import ReplayBuffer
from zeropipe.config import ExperimentConfig
from zeropipe.envs import EnvSpec, env_spec
from zeropipe.learner.learner import Learner
from zeropipe.workers.collector import Collector
from zeropipe.workers.evaluator import Evaluator

EVAL_SEED_OFFSET = 100_000
ACTOR_SEED_STRIDE = 1000


def build_network(cfg: ExperimentConfig, spec: EnvSpec) -> torch.nn.Module:
    """A fresh network of the policy type's family for this config and env."""
    shape = stacked_input_shape(spec.frame_shape, spec.frame_stack)
    family = algorithm_for(cfg.policy).family
    return family.build_network(shape, spec.action_space_size, cfg.policy)


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
    )
    return Components(spec=spec, learner=learner, buffer=buffer)


def actor_device(cfg: ExperimentConfig, role: str, in_worker: bool) -> str:
    """Device of a collector's or evaluator's network.

    In the sync pipeline the actors live in the driver and share the learner's device; a worker
    process uses the GPU only when its `*_num_gpus` share is positive.
    """
    if not in_worker:
        return cfg.policy.device
    ap = cfg.policy.async_pipeline
    share = ap.collector_num_gpus if role == "collector" else ap.evaluator_num_gpus
    return "cuda" if share > 0 else "cpu"


def build_collector(cfg: ExperimentConfig, actor_id: int = 0, in_worker: bool = False) -> Collector:
    """A collector with its own network copy."""
    spec = env_spec(cfg.env)
    device = actor_device(cfg, "collector", in_worker)
    seed = cfg.seed + actor_id * ACTOR_SEED_STRIDE
    return Collector(cfg, build_network(cfg, spec), seed, device)


def build_evaluator(cfg: ExperimentConfig, actor_id: int = 0, in_worker: bool = False) -> Evaluator:
    """An evaluator with its own network copy and fixed seeds."""
    spec = env_spec(cfg.env)
    device = actor_device(cfg, "evaluator", in_worker)
    seed = cfg.seed + EVAL_SEED_OFFSET + actor_id * ACTOR_SEED_STRIDE
    return Evaluator(cfg, build_network(cfg, spec), seed, device)
